"""The physical floor of a job: read the bytes, decode them, hash every character position once, on every core.

Run as a whole process, like the jobs it is compared with::

    python benchmarks/floor.py FILE [FILE ...] [--workers 2] [--k 5]

What it does, exactly:

1. The files are taken as one byte stream and cut into ``--workers`` (default:
   the number of cores) contiguous ranges of equal size, each boundary moved
   forward to the start of a UTF-8 character.
2. The first range is processed by this process, the others by processes
   forked from it (``multiprocessing``, fork context where the platform has it;
   numpy is imported before the fork and counts in the wall time).
3. Each process reads its range in blocks of ``--block-mb`` (1 MB) with
   ``readinto``, decodes every block with an incremental UTF-8 decoder to a
   ``str``, and turns it into an array of code points
   (``numpy.frombuffer(text.encode("utf-32-le"), uint32)``).
4. Every character position ``i`` gets one 64-bit hash of the ``k`` code points
   starting at it (the position's character k-shingle; k = 5, the documents'
   shingle length): ``h = sum_j c[i+j] * P**(k-1-j) mod 2**64`` (k vectorized
   multiply-adds) followed by one xor-shift-multiply finalizer
   (``h ^= h >> 31; h *= 0x94D049BB133111EB``). The last ``k-1`` code points of a
   block are carried into the next block, so windows crossing blocks are
   hashed too; the ``k-1`` windows crossing a range boundary are not (a few
   positions per worker).
5. Each process folds its hashes with XOR (so none of the work can be
   skipped) and the results are combined; one JSON line is printed.

No normalization, no tokenizing, no set building, no sorting: anything a job
must do beyond this is work the floor does not do. The ratio job wall / floor
wall says how far a job is from the cost of touching every input character
once with both cores busy.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

P = np.uint64(0x100000001B3)  # FNV-1a 64-bit prime as the polynomial base
MIX = np.uint64(0x94D049BB133111EB)
SHIFT = np.uint64(31)


def boundaries(files: list[Path], workers: int) -> list[int]:
    """Global byte offsets 0 = b0 < b1 < ... < bW = total, each moved to a UTF-8 character start."""
    sizes = [f.stat().st_size for f in files]
    total = sum(sizes)
    cuts = [0]
    for w in range(1, workers):
        off = total * w // workers
        while off < total and _is_continuation(files, sizes, off):
            off += 1
        cuts.append(max(off, cuts[-1]))
    cuts.append(total)
    return cuts


def _locate(sizes: list[int], off: int) -> tuple[int, int]:
    for i, s in enumerate(sizes):
        if off < s:
            return i, off
        off -= s
    return len(sizes) - 1, sizes[-1]


def _is_continuation(files: list[Path], sizes: list[int], off: int) -> bool:
    i, local = _locate(sizes, off)
    with open(files[i], "rb") as f:
        f.seek(local)
        b = f.read(1)
    return bool(b) and (b[0] & 0xC0) == 0x80


def hash_positions(cp: np.ndarray, k: int) -> np.ndarray:
    """One 64-bit hash per window of ``k`` code points (len(cp) - k + 1 of them)."""
    n = len(cp) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    c = cp.astype(np.uint64)
    h = c[:n].copy()
    for j in range(1, k):
        h *= P
        h += c[j : j + n]
    h ^= h >> SHIFT
    h *= MIX
    return h


def process_range(files: list[str], start: int, end: int, k: int, block: int) -> dict[str, Any]:
    """Read bytes [start, end) of the concatenated files, decode, hash every position; counts and an XOR."""
    paths = [Path(f) for f in files]
    sizes = [p.stat().st_size for p in paths]
    decoder = codecs.getincrementaldecoder("utf-8")()
    buf = bytearray(block)
    view = memoryview(buf)
    carry = np.zeros(0, dtype=np.uint32)
    acc = np.uint64(0)
    n_bytes = n_chars = n_hashed = 0
    i, local = _locate(sizes, start)
    remaining = end - start
    while remaining > 0 and i < len(paths):
        with open(paths[i], "rb", buffering=0) as f:
            f.seek(local)
            while remaining > 0:
                got = f.readinto(view[: min(block, remaining)])
                if not got:
                    break
                remaining -= got
                n_bytes += got
                text = decoder.decode(view[:got])
                cp = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
                n_chars += len(cp)
                window = np.concatenate([carry, cp]) if len(carry) else cp
                h = hash_positions(window, k)
                n_hashed += len(h)
                if len(h):
                    acc ^= np.bitwise_xor.reduce(h)
                carry = window[-(k - 1) :] if k > 1 else carry[:0]
        i += 1
        local = 0
    decoder.decode(b"", final=True)  # raises on a character cut at the end of the range
    return {"bytes": n_bytes, "chars": n_chars, "positions_hashed": n_hashed, "xor": int(acc)}


def _child(args: tuple[list[str], int, int, int, int], conn: Any) -> None:
    conn.send(process_range(*args))
    conn.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every core)")
    p.add_argument("--k", type=int, default=5, help="code points per hashed window (default 5)")
    p.add_argument("--block-mb", type=float, default=1.0, help="bytes read and hashed at a time (default 1 MB)")
    a = p.parse_args(argv)
    missing = [str(f) for f in a.files if not f.is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if a.workers < 1 or a.k < 1 or a.block_mb <= 0:
        p.error("--workers and --k must be >= 1, --block-mb > 0")
    t0 = time.perf_counter()
    cuts = boundaries(a.files, a.workers)
    block = max(1 << 16, int(a.block_mb * 2**20))
    files = [str(f) for f in a.files]
    import multiprocessing as mp

    ctx: Any = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    children = []
    for w in range(1, a.workers):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=((files, cuts[w], cuts[w + 1], a.k, block), send))
        proc.start()
        children.append((proc, recv))
    parts = [process_range(files, cuts[0], cuts[1], a.k, block)]
    for proc, recv in children:
        parts.append(recv.recv())
        proc.join()
    xor = 0
    for part in parts:
        xor ^= part["xor"]
    out = {
        "workers": a.workers,
        "k": a.k,
        "block_bytes": block,
        "bytes": sum(x["bytes"] for x in parts),
        "chars": sum(x["chars"] for x in parts),
        "positions_hashed": sum(x["positions_hashed"] for x in parts),
        "xor": f"{xor:016x}",
        "seconds_inside": round(time.perf_counter() - t0, 4),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
