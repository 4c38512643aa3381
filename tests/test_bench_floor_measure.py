"""benchmarks/floor.py (the physical floor) against a naive reference, and benchmarks/measure.py (whole-process
wall and peak RSS measured from outside) on small commands. No wall-clock bound is asserted."""

from __future__ import annotations

import functools
import importlib.util
import json
import operator
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


floor = _load("floor")
measure = _load("measure")
M64 = 2**64


def naive_hashes(text: str, k: int) -> list[int]:
    out = []
    for i in range(len(text) - k + 1):
        h = 0
        for c in text[i : i + k]:
            h = (h * 0x100000001B3 + ord(c)) % M64
        h ^= h >> 31
        out.append((h * 0x94D049BB133111EB) % M64)
    return out


TEXT = "héllo wörld ✓ — 日本語のテキスト and plain ASCII after it 🙂\n" * 40


@pytest.mark.parametrize("k", [1, 3, 5])
def test_hash_positions_equals_the_naive_polynomial(k: int) -> None:
    cp = np.array([ord(c) for c in TEXT[:300]], dtype=np.uint32)
    assert [int(h) for h in floor.hash_positions(cp, k)] == naive_hashes(TEXT[:300], k)


@pytest.mark.parametrize("block", [1 << 16, 7])
def test_process_range_hashes_every_position_across_blocks(tmp_path: Path, block: int) -> None:
    # blocks of 7 bytes cut multi-byte characters and windows: the incremental decoder and the carry
    # must give the same hashes as one pass over the whole text
    f = tmp_path / "t.txt"
    f.write_text(TEXT, encoding="utf-8")
    size = f.stat().st_size
    got = floor.process_range([str(f)], 0, size, 5, max(block, 1))
    assert got["bytes"] == size and got["chars"] == len(TEXT) and got["positions_hashed"] == len(TEXT) - 4
    assert got["xor"] == functools.reduce(operator.xor, naive_hashes(TEXT, 5))


def test_boundaries_fall_on_character_starts_and_cover_the_files(tmp_path: Path) -> None:
    files = [tmp_path / "a.txt", tmp_path / "b.txt"]
    files[0].write_text(TEXT[:500], encoding="utf-8")
    files[1].write_text(TEXT[500:], encoding="utf-8")
    cuts = floor.boundaries(files, 5)
    data = b"".join(p.read_bytes() for p in files)
    assert cuts[0] == 0 and cuts[-1] == len(data) and cuts == sorted(cuts)
    assert all(c == len(data) or data[c] & 0xC0 != 0x80 for c in cuts)
    parts = [floor.process_range([str(p) for p in files], lo, hi, 1, 64) for lo, hi in zip(cuts, cuts[1:])]
    assert sum(p["chars"] for p in parts) == len(data.decode("utf-8"))


def test_floor_cli_reports_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "t.txt"
    f.write_text(TEXT, encoding="utf-8")
    assert floor.main([str(f), "--workers", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["chars"] == len(TEXT) and out["positions_hashed"] == len(TEXT) - 4
    assert floor.main([str(tmp_path / "missing.txt")]) == 2


def test_measure_sees_the_memory_of_the_process_and_its_children(tmp_path: Path) -> None:
    # a child process that touches ~200 MB and a grandchild that touches ~150 MB at the same time
    child = "import time; b = bytes([120]) * (150 * 2**20); time.sleep(1.0)"
    code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "a = bytes([120]) * (200 * 2**20); time.sleep(0.6); p.wait()\n"
    )
    res = measure.measure([sys.executable, "-c", code], poll=0.01)
    run = res["best"]
    assert res["ok"] and run["exit_code"] == 0 and not run["timed_out"]
    assert run["ru_maxrss_mb"] >= 200  # the largest single process
    if run["tree_rss_peak_mb"] is not None:  # Linux: both at once, summed over the tree
        assert run["tree_rss_peak_mb"] >= 330
    assert run["peak_rss_mb"] == max(run["ru_maxrss_mb"], run["tree_rss_peak_mb"] or 0.0)


def test_measure_is_not_charged_for_the_callers_memory() -> None:
    held = b"x" * (300 * 2**20)  # this process is large; the measured command is not
    run = measure.measure([sys.executable, "-c", "pass"])["best"]
    del held
    # ru_maxrss of a command started from this 300 MB process includes those 300 MB on Linux (the
    # high-water mark before exec is folded in; bench_whole.py therefore starts measure.py as its own
    # small process); the sampled RSS is the command's own
    assert run["tree_rss_peak_mb"] is None or run["tree_rss_peak_mb"] < 200


def test_measure_kills_a_command_past_its_timeout_and_reports_failures(tmp_path: Path) -> None:
    run = measure.measure([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)["best"]
    assert run["timed_out"] and run["exit_code"] != 0
    res = measure.measure([sys.executable, "-c", "raise SystemExit(3)"], repeat=3)
    assert not res["ok"] and len(res["runs"]) == 1 and res["runs"][0]["exit_code"] == 3
    out = tmp_path / "r.json"
    assert measure.main(["--out", str(out), "--repeat", "2", "--", sys.executable, "-c", "pass"]) == 0
    doc = json.loads(out.read_text())
    assert doc["ok"] and len(doc["runs"]) == 2 and doc["best"]["wall_s"] == min(r["wall_s"] for r in doc["runs"])
