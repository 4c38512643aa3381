"""Side-by-side benchmark: near-duplicate documents.

er-framework (the whole ``er run`` pipeline) against what a user would
otherwise write with datasketch and rensa, on the same texts and the same
settings:

* character 5-shingles of the NFKC, case-folded, whitespace-folded text;
* MinHash with ``--num-perm`` hash functions (128);
* LSH banding with the same ``(b, r)`` = ``choose_bands(threshold, num_perm, 0.95)``;
* exact Jaccard verification of every candidate at ``--threshold``.

Every contender runs in its own subprocess (its peak RSS is its own), reads
the same JSONL file and writes its verified pairs; this process computes the
ground truth (exact Jaccard of every within-family pair of the planted data)
and the recall / precision of each contender, prints one table and saves
the results as JSON.

Run from the repository root::

    python benchmarks/bench_documents.py                 # 20,000 documents
    python benchmarks/bench_documents.py --docs 2000     # quick

Not a package: this file is a script. The worker mode (``--worker NAME``) is
what the subprocesses run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import Clock, code_fingerprint, machine_info, min_max, parse_contenders
from common import cpu_s as _cpu_s
from common import rss_mb as _rss_mb

HERE = Path(__file__).resolve().parent
K_SHINGLE = 5
TARGET_RECALL = 0.95
#: er-framework contenders and the signature builder each runs
ER_SIGNATURE = {"er-framework": "minhash", "er-framework-oph": "oph", "er-framework-fss": "fss"}
CONTENDERS = [*ER_SIGNATURE, "datasketch", "rensa-rminhash", "rensa-rminhash-bulk", "rensa-cminhash"]
#: exact-Jaccard bins of the per-bin recall table (upper edge of the last bin inclusive)
RECALL_BINS = [0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
STAGE_COLS = ["read", "shingle", "signatures", "candidates", "verify", "other"]


# ----------------------------------------------------------------------------
# helpers shared by the workers (plain Python: what a user would write)


def normalize(text: str) -> str:
    """The same preprocessing as er-framework's ``char`` shingler (and the truth)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def shingle_set(text: str, k: int = K_SHINGLE) -> set[str]:
    """Character k-shingles as a Python set of str (a text shorter than k: one token)."""
    if len(text) < k:
        return {text} if text else set()
    return {text[i : i + k] for i in range(len(text) - k + 1)}


def read_jsonl(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def verify_sets(sets: list[set[str]], cands: set[tuple[int, int]], threshold: float) -> list[tuple[int, int, float]]:
    """Exact Jaccard of every candidate with Python sets; keep J >= threshold."""
    out = []
    for i, j in sorted(cands):
        a, b = sets[i], sets[j]
        inter = len(a & b)
        union = len(a) + len(b) - inter
        jac = inter / union if union else 0.0
        if jac >= threshold:
            out.append((i, j, jac))
    return out


def pairs_from_queries(results: Callable[[int], Any], n: int) -> set[tuple[int, int]]:
    """Unique unordered candidate pairs from per-document LSH query results."""
    cands: set[tuple[int, int]] = set()
    for i in range(n):
        for j in results(i):
            j = int(j)
            if j != i:
                cands.add((i, j) if i < j else (j, i))
    return cands


def dict_banding(sigs: list[list[int]], bands: int, rows: int) -> set[tuple[int, int]]:
    """LSH banding with a Python dict per band: documents sharing a band are candidates."""
    cands: set[tuple[int, int]] = set()
    for band in range(bands):
        lo, hi = band * rows, band * rows + rows
        buckets: dict[tuple[int, ...], list[int]] = {}
        for i, sig in enumerate(sigs):
            buckets.setdefault(tuple(sig[lo:hi]), []).append(i)
        for members in buckets.values():
            if len(members) > 1:
                for x in range(len(members)):
                    for y in range(x + 1, len(members)):
                        cands.add((members[x], members[y]))
    return cands


# ----------------------------------------------------------------------------
# workers (one per subprocess)


def worker_er(a: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job

    code_before = code_fingerprint()
    rss_import = _rss_mb()
    clock = Clock()
    job = parse_job(signature_yaml(a.yaml, ER_SIGNATURE[a.worker]))
    clock.mark("parse")
    result = run_job(job, write=False)
    total = clock.total()
    cpu = _cpu_s() - clock.cpu0
    st = {s["stage"]: float(s["seconds"]) for s in result.report["stages"]}
    stages = {
        "read": st.get("read", 0.0),
        "shingle": st.get("shingle", 0.0),
        "signatures": st.get("signatures", 0.0),
        "candidates": st.get("block", 0.0),
        "verify": st.get("verify", 0.0),
    }
    stages["other"] = total - sum(stages.values())  # parse_job, exact (off), cluster, report
    code_after = code_fingerprint()
    pairs = result.pairs
    np.save(a.pairs, np.stack([pairs.left, pairs.right]).astype(np.int64))
    return {
        "num_perm": a.num_perm,
        "stages": stages,
        "total": total,
        "cpu": cpu,
        "candidates": int(result.report["candidate_pairs"]),
        "verified": len(pairs),
        "rss_after_import_mb": rss_import,
        "er_report_stages": result.report["stages"],
        "er_peak_rss_mb": result.report["peak_rss_mb"],
        "er_blocker": result.report["blockers"],
        "code": code_before,
        "code_changed_during_run": code_after["sources_sha256"] != code_before["sources_sha256"],
        "detail": "parse_job + run_job(write=False); 'other' = parse_job, exact_duplicates (off), cluster, report",
    }


def _prepare(a: argparse.Namespace, clock: Clock) -> list[set[str]]:
    texts = read_jsonl(a.data)
    clock.mark("read")
    sets = [shingle_set(normalize(t)) for t in texts]
    clock.mark("shingle")
    return sets


class LeanSets:
    """``--lean``: shingle sets are not kept (100,000 documents of Python sets of str need
    ~25 GB). Each document's set is built, signed and dropped; verification rebuilds the
    sets of the documents that appear in candidate pairs (what er-framework does too).
    ``sets[i]`` works for those documents after :meth:`keep_only`."""

    def __init__(self, a: argparse.Namespace, clock: Clock) -> None:
        self.texts = read_jsonl(a.data)
        clock.mark("read")
        self.clock = clock
        self.cache: dict[int, set[str]] = {}

    def signed(self, sign: Callable[[set[str]], Any]) -> list[Any]:
        """``sign(set)`` per document (None for an empty set); shingle and sign times kept apart."""
        out: list[Any] = []
        t_sh = t_sig = 0.0
        for t in self.texts:
            t0 = time.perf_counter()
            s = shingle_set(normalize(t))
            t1 = time.perf_counter()
            out.append(sign(s) if s else None)
            t_sig += time.perf_counter() - t1
            t_sh += t1 - t0
        self.clock.stages["shingle"] = self.clock.stages.get("shingle", 0.0) + t_sh
        self.clock.stages["signatures"] = self.clock.stages.get("signatures", 0.0) + t_sig
        self.clock.last = time.perf_counter()
        return out

    def keep_only(self, cands: set[tuple[int, int]]) -> LeanSets:
        for i in sorted({x for pair in cands for x in pair}):
            self.cache[i] = shingle_set(normalize(self.texts[i]))
        return self

    def __getitem__(self, i: int) -> set[str]:
        return self.cache[i]


def _per_document_lsh(a: argparse.Namespace, sign: Callable[[set[str]], Any], lsh: Any, k: int, detail: str) -> dict[str, Any]:
    """What a user writes with a per-document MinHash API: sign each shingle set, insert every
    signature into ``lsh``, query each one, verify the candidates with Python sets."""
    rss_import = _rss_mb()
    clock = Clock()
    if a.lean:
        lean = LeanSets(a, clock)
        mhs = lean.signed(sign)
    else:
        sets = _prepare(a, clock)
        mhs = [sign(s) if s else None for s in sets]
        clock.mark("signatures")
    for i, m in enumerate(mhs):
        if m is not None:
            lsh.insert(i, m)
    cands = pairs_from_queries(lambda i: lsh.query(mhs[i]) if mhs[i] is not None else (), len(mhs))
    clock.mark("candidates")
    verified = verify_sets(lean.keep_only(cands) if a.lean else sets, cands, a.threshold)  # type: ignore[arg-type]
    clock.mark("verify")
    return _finish(
        a, clock, rss_import, k, cands, verified, detail + ("; --lean: sets rebuilt for candidate documents only" if a.lean else "")
    )


def worker_datasketch(a: argparse.Namespace) -> dict[str, Any]:
    from datasketch import MinHash, MinHashLSH

    def sign(s: set[str]) -> Any:
        m = MinHash(num_perm=a.num_perm, seed=a.seed)
        m.update_batch([x.encode("utf-8") for x in s])
        return m

    lsh = MinHashLSH(threshold=a.threshold, num_perm=a.num_perm, params=(a.bands, a.rows))
    return _per_document_lsh(
        a, sign, lsh, a.num_perm, "MinHash(num_perm).update_batch(utf-8 bytes); MinHashLSH(params=(b, r)) insert + query per doc"
    )


def _rensa_num_perm(a: argparse.Namespace) -> int:
    # RMinHashLSH needs num_perm divisible by num_bands and uses rows = num_perm / num_bands:
    # the same (b, r) needs a signature of exactly b * r values.
    return int(a.bands * a.rows)


def worker_rensa(a: argparse.Namespace) -> dict[str, Any]:
    from rensa import RMinHash, RMinHashLSH

    k = _rensa_num_perm(a)

    def sign(s: set[str]) -> Any:
        m = RMinHash(num_perm=k, seed=a.seed)
        m.update(list(s))
        return m

    lsh = RMinHashLSH(threshold=a.threshold, num_perm=k, num_bands=a.bands)
    return _per_document_lsh(
        a, sign, lsh, k, f"RMinHash({k}).update(list of str) per doc; RMinHashLSH(num_bands={a.bands}) insert + query per doc"
    )


def worker_rensa_bulk(a: argparse.Namespace) -> dict[str, Any]:
    from rensa import RMinHash, RMinHashLSH

    rss_import = _rss_mb()
    k = _rensa_num_perm(a)
    clock = Clock()
    sets = _prepare(a, clock)
    keep = [i for i, s in enumerate(sets) if s]
    mhs = RMinHash.from_token_sets([list(sets[i]) for i in keep], k, a.seed)
    clock.mark("signatures")
    lsh = RMinHashLSH(threshold=a.threshold, num_perm=k, num_bands=a.bands)
    lsh.insert_many(mhs)  # keys 0..len(keep)-1
    res = lsh.query_all(mhs)
    cands = {(min(keep[x], keep[int(y)]), max(keep[x], keep[int(y)])) for x, ys in enumerate(res) for y in ys if int(y) != x}
    clock.mark("candidates")
    verified = verify_sets(sets, cands, a.threshold)
    clock.mark("verify")
    return _finish(a, clock, rss_import, k, cands, verified, f"RMinHash.from_token_sets (bulk, {k}); RMinHashLSH.insert_many + query_all")


def worker_cminhash(a: argparse.Namespace) -> dict[str, Any]:
    from rensa import CMinHash

    rss_import = _rss_mb()
    clock = Clock()
    sets = _prepare(a, clock)
    keep = [i for i, s in enumerate(sets) if s]
    digests = CMinHash.digests_from_token_sets([list(sets[i]) for i in keep], a.num_perm, a.seed)
    clock.mark("signatures")
    # RMinHashLSH accepts RMinHash only: band the C-MinHash digests with a dict per band
    local = dict_banding([list(d) for d in digests], a.bands, a.rows)
    cands = {(keep[x], keep[y]) for x, y in local}
    clock.mark("candidates")
    verified = verify_sets(sets, cands, a.threshold)
    clock.mark("verify")
    return _finish(
        a,
        clock,
        rss_import,
        a.num_perm,
        cands,
        verified,
        f"CMinHash.digests_from_token_sets (bulk, {a.num_perm}); Python dict per band (b={a.bands}, r={a.rows})",
    )


def _finish(
    a: argparse.Namespace,
    clock: Clock,
    rss_import: float,
    k: int,
    cands: set[tuple[int, int]],
    verified: list[tuple[int, int, float]],
    detail: str,
) -> dict[str, Any]:
    total = clock.total()  # before importing numpy (not otherwise needed by these workers)
    cpu = _cpu_s() - clock.cpu0
    import numpy as np

    stages = {c: clock.stages.get(c, 0.0) for c in STAGE_COLS}
    stages["other"] = total - sum(stages.values())
    arr = np.array([[i for i, _, _ in verified], [j for _, j, _ in verified]], dtype=np.int64).reshape(2, -1)
    np.save(a.pairs, arr)
    return {
        "num_perm": k,
        "stages": stages,
        "total": total,
        "cpu": cpu,
        "candidates": len(cands),
        "verified": len(verified),
        "rss_after_import_mb": rss_import,
        "detail": detail,
    }


WORKERS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "er-framework": worker_er,
    "er-framework-oph": worker_er,
    "er-framework-fss": worker_er,
    "datasketch": worker_datasketch,
    "rensa-rminhash": worker_rensa,
    "rensa-rminhash-bulk": worker_rensa_bulk,
    "rensa-cminhash": worker_cminhash,
}


def run_worker(a: argparse.Namespace) -> None:
    if a.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
        out = WORKERS[a.worker](a)
        prof.disable()
        prof.dump_stats(a.profile)
    else:
        out = WORKERS[a.worker](a)
    # er resets the kernel's high-water mark at each stage (per-stage peaks in its
    # report), so the process peak is the larger of VmHWM now and er's own peak
    out["peak_rss_mb"] = max(_rss_mb(), float(out.get("er_peak_rss_mb") or 0.0))
    Path(a.result).write_text(json.dumps(out, indent=1))


# ----------------------------------------------------------------------------
# data, truth, orchestration


def make_documents(n_docs: int, seed: int, words: tuple[int, int] = (450, 750)) -> tuple[list[str], list[int]]:
    """``n_docs`` planted documents: ~40% in near-duplicate families, the rest singletons.

    Families have a base and 1-3 copies with 0-5% of the words edited, so the
    exact Jaccard of within-family pairs spreads around 0.8 (about 0.72-1.0).
    Texts have ``words`` words: 450-750 gives about 2,900-4,900 characters
    (mean ~3,900, the issue's documents); ``--short`` uses 15-30 words
    (about 100-200 characters, tweet-like).
    """
    from er_framework.synth.documents import planted_documents

    n_families = max(1, round(0.4 * n_docs / 3))
    n_singletons = max(0, n_docs - 3 * n_families) + max(10, n_docs // 50)  # surplus, trimmed below
    d = planted_documents(
        n_families,
        copies_per_family=(1, 3),
        words=words,
        edit_rates=(0.0, 0.05),
        n_singletons=n_singletons,
        seed=seed,
    )
    return d.texts[:n_docs], d.family[:n_docs]


def exact_jaccard(texts: list[str] | dict[int, str], left: Any, right: Any, workers: int = 1) -> Any:
    """Exact Jaccard (er kernels: char_shingles + jaccard_pairs) of pairs of documents.

    Only the documents in the pairs are shingled, a slice at a time: the
    whole corpus at once would need ~80 bytes per character (31 GB at 100k).
    ``texts[i]`` is the text of document ``i`` (a list, or a dict of the documents in the pairs);
    ``workers`` threads shingle the slices.
    """
    import numpy as np

    from er_framework.kernels import char_shingles, jaccard_pairs
    from er_plugins.documents import shingle_in_chunks

    lo, hi = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    if len(lo) == 0:
        return np.zeros(0)
    ids = np.unique(np.concatenate([lo, hi]))
    tokens = shingle_in_chunks([normalize(texts[i]) for i in ids.tolist()], lambda t: char_shingles(t, K_SHINGLE), workers=workers)
    return jaccard_pairs(tokens, np.searchsorted(ids, lo), np.searchsorted(ids, hi))


def ground_truth(texts: list[str], family: list[int], threshold: float) -> dict[str, Any]:
    """Exact Jaccard of every within-family pair; the truth = those at or above the threshold."""
    import numpy as np

    groups: dict[int, list[int]] = {}
    for i, f in enumerate(family):
        groups.setdefault(f, []).append(i)
    left, right = [], []
    for members in groups.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                left.append(members[x])
                right.append(members[y])
    lo = np.array(left, dtype=np.int64)
    hi = np.array(right, dtype=np.int64)
    jac = exact_jaccard(texts, lo, hi)
    keep = jac >= threshold
    return {"left": lo, "right": hi, "jaccard": jac, "truth": set(zip(lo[keep].tolist(), hi[keep].tolist()))}


def recall_by_bin(gt: dict[str, Any], got: set[tuple[int, int]]) -> list[dict[str, Any]]:
    """Per exact-Jaccard bin of the within-family pairs: how many there are and the fraction reported."""
    import numpy as np

    jac = gt["jaccard"]
    found = np.array([(int(x), int(y)) in got for x, y in zip(gt["left"], gt["right"])], dtype=bool)
    out = []
    for lo, hi in zip(RECALL_BINS[:-1], RECALL_BINS[1:]):
        inside = (jac >= lo) & ((jac < hi) | (hi == RECALL_BINS[-1]) & (jac <= hi))
        n = int(inside.sum())
        out.append(
            {"bin": [lo, hi], "pairs": n, "reported": int(found[inside].sum()), "recall": float(found[inside].mean()) if n else None}
        )
    return out


def fmt_bins(rows: list[dict[str, Any]]) -> str:
    """Recall per exact-Jaccard bin, one row per contender (pairs per bin in the header)."""
    ok = [r for r in rows if not r.get("error") and r.get("recall_by_bin")]
    if not ok:
        return ""
    bins = ok[0]["recall_by_bin"]
    head = ["contender"] + [
        f"[{b['bin'][0]:.2f},{b['bin'][1]:.2f}{']' if i == len(bins) - 1 else ')'} n={b['pairs']:,}" for i, b in enumerate(bins)
    ]
    lines = [head] + [[r["name"]] + ["-" if b["recall"] is None else f"{b['recall']:.4f}" for b in r["recall_by_bin"]] for r in ok]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))) for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def write_yaml(path: Path, a: argparse.Namespace, bands: int, rows: int) -> None:
    """One er-framework job per signature builder: ``<name>_<signature>.yaml``."""
    for signature in ER_SIGNATURE.values():
        _write_yaml(signature_yaml(path, signature), a, bands, rows, signature)


def signature_yaml(path: Path | str, signature: str) -> Path:
    p = Path(path)
    return p.with_name(f"{p.stem}_{signature}{p.suffix}")


def _write_yaml(path: Path, a: argparse.Namespace, bands: int, rows: int, signature: str) -> None:
    path.write_text(
        f"""# generated by benchmarks/bench_documents.py
name: bench_documents
mode: dedup
seed: {a.seed}
threshold: {a.threshold}
sources:
  - name: docs
    path: docs.jsonl
    id: id
    fields: [text]
exact_duplicates: false
shingler:
  type: char
  k: {K_SHINGLE}
  lowercase: true
  nfkc: true
  fold_whitespace: true
diagnostics: 0   # the report's S-curve probe: not part of the comparison
signature:
  type: {signature}
  num_perm: {a.num_perm}
blockers:
  - type: lsh_bands
    bands: {bands}
    rows: {rows}
    max_bucket_size: null   # the other contenders do not cap buckets either
verifier:
  type: jaccard
cluster:
  type: connected_components
""",
        encoding="utf-8",
    )


def calibrate_datasketch(seed: int, num_perm: int, words: tuple[int, int]) -> float | None:
    """Seconds per document of datasketch shingling + update_batch on 100 sample documents."""
    try:
        from datasketch import MinHash
    except ImportError:
        return None
    texts, _ = make_documents(100, seed + 1, words)
    t0 = time.perf_counter()
    for t in texts:
        m = MinHash(num_perm=num_perm, seed=seed)
        m.update_batch([x.encode("utf-8") for x in shingle_set(normalize(t))])
    return (time.perf_counter() - t0) / len(texts)


def fmt_table(rows: list[dict[str, Any]]) -> str:
    head = ["contender", "K", *STAGE_COLS, "total s", "x er", "cpu s", "candidates", "verified", "recall", "precision", "peak MB"]
    lines = [head]
    for r in rows:
        if r.get("error"):
            lines.append([r["name"], "-", *["-"] * len(STAGE_COLS), "FAILED", "-", "-", "-", "-", "-", "-", "-"])
            continue
        s = r["stages"]
        lines.append(
            [
                r["name"],
                str(r["num_perm"]),
                *[f"{s[c]:.2f}" for c in STAGE_COLS],
                f"{r['total']:.2f}",
                f"{r['ratio_vs_er']:.2f}" if r.get("ratio_vs_er") is not None else "-",
                f"{r['cpu']:.2f}",
                f"{r['candidates']:,}",
                f"{r['verified']:,}",
                f"{r['recall']:.4f}",
                f"{r['precision']:.4f}",
                f"{r['peak_rss_mb']:.0f}",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def fmt_signature_ratios(rows: list[dict[str, Any]], n_docs: int) -> str:
    """Signatures from raw text (shingle + signatures stages): docs/s and ratios of each er contender."""
    ok = {r["name"]: r for r in rows if not r.get("error")}
    raw = {name: r["stages"]["shingle"] + r["stages"]["signatures"] for name, r in ok.items()}
    out = ["signatures from raw text (shingle + signatures seconds):"]
    for name, sec in raw.items():
        ratios = ", ".join(
            f"{raw[o] / sec:.1f}x {o}"
            for o in ("datasketch", "rensa-rminhash", "rensa-rminhash-bulk")
            if o in raw and not name.startswith(o) and name.startswith("er-")
        )
        out.append(
            f"  {name:22s} {sec:8.2f} s  {n_docs / sec if sec else float('inf'):12,.0f} docs/s" + (f"   ({ratios})" if ratios else "")
        )
    return "\n".join(out)


def fmt_markdown(rows: list[dict[str, Any]]) -> str:
    head = ["contender", "K", *STAGE_COLS, "total s", "time ÷ er", "CPU s", "candidates", "verified", "recall", "precision", "peak RSS MB"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        if r.get("error"):
            out.append(f"| {r['name']} | failed: {r['error'][:60]} |")
            continue
        s = r["stages"]
        out.append(
            "| "
            + " | ".join(
                [
                    r["name"],
                    str(r["num_perm"]),
                    *[f"{s[c]:.2f}" for c in STAGE_COLS],
                    f"**{r['total']:.2f}**",
                    f"{r['ratio_vs_er']:.2f}" if r.get("ratio_vs_er") is not None else "-",
                    f"{r['cpu']:.2f}",
                    f"{r['candidates']:,}",
                    f"{r['verified']:,}",
                    f"{r['recall']:.4f}",
                    f"{r['precision']:.4f}",
                    f"{r['peak_rss_mb']:.0f}",
                ]
            )
            + " |"
        )
    return "\n".join(out)


def orchestrate(a: argparse.Namespace) -> int:
    import numpy as np

    from er_framework.kernels import candidate_probability, choose_bands

    contenders = parse_contenders(a.contenders, WORKERS, CONTENDERS)
    if contenders is None:
        return 2
    bands, rows = choose_bands(a.threshold, a.num_perm, TARGET_RECALL)
    notes: list[str] = []
    load_start = os.getloadavg()

    n_docs = a.docs
    if "datasketch" in contenders and a.budget_seconds > 0:
        per_doc = calibrate_datasketch(a.seed, a.num_perm, a.words)
        if per_doc is not None:
            # datasketch dominates the run; the other contenders together cost well under as much again
            est = n_docs * per_doc * 2.0 + 0.004 * n_docs
            print(
                f"calibration: datasketch shingle+update_batch {per_doc * 1e3:.2f} ms/doc; "
                f"estimated run {est:.0f} s for {n_docs:,} documents"
            )
            if est > a.budget_seconds:
                new_n = max(500, int(a.budget_seconds / (per_doc * 2.0 + 0.004)) // 500 * 500)
                msg = (
                    f"SCALED: {n_docs:,} documents would take ~{est:.0f} s > budget {a.budget_seconds:.0f} s; "
                    f"running {new_n:,} documents instead (raise --budget-seconds or pass --budget-seconds 0 to keep {n_docs:,})"
                )
                print(msg)
                notes.append(msg)
                n_docs = new_n

    tmp = Path(tempfile.mkdtemp(prefix="er_bench_docs_"))
    t0 = time.perf_counter()
    texts, family = make_documents(n_docs, a.seed, a.words)
    data = tmp / "docs.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    lengths = np.array([len(t) for t in texts])
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    gt = ground_truth(texts, family, a.threshold)
    t_truth = time.perf_counter() - t0
    truth: set[tuple[int, int]] = gt["truth"]
    jt = gt["jaccard"]
    expected_recall = float(np.mean(candidate_probability(jt[jt >= a.threshold], bands, rows))) if len(truth) else None
    yaml_path = tmp / "job.yaml"
    write_yaml(yaml_path, a, bands, rows)
    dataset = {
        "documents": len(texts),
        "families_with_copies": sum(1 for c in Counter(family).values() if c > 1),
        "documents_in_families": sum(c for c in Counter(family).values() if c > 1),
        "chars_min": int(lengths.min()),
        "chars_mean": round(float(lengths.mean()), 1),
        "chars_max": int(lengths.max()),
        "total_chars": int(lengths.sum()),
        "within_family_pairs": len(jt),
        "truth_pairs": len(truth),
        "within_family_jaccard_percentiles": (
            {str(p): round(float(v), 4) for p, v in zip((0, 25, 50, 75, 100), np.percentile(jt, [0, 25, 50, 75, 100]))} if len(jt) else {}
        ),
        "generate_seconds": round(t_gen, 2),
        "truth_seconds": round(t_truth, 2),
    }
    print(
        f"data: {len(texts):,} documents, {dataset['chars_min']}-{dataset['chars_max']} chars (mean {dataset['chars_mean']:.0f}), "
        f"{len(jt):,} within-family pairs, {len(truth):,} with exact Jaccard >= {a.threshold} (truth)"
    )
    print(
        f"settings: char {K_SHINGLE}-shingles, num_perm={a.num_perm}, (b, r) = ({bands}, {rows}) = "
        f"choose_bands({a.threshold}, {a.num_perm}, {TARGET_RECALL}); recall expected from the S-curve "
        f"on the truth pairs: {expected_recall if expected_recall is None else round(expected_recall, 4)}"
    )
    print(f"scratch: {tmp}")

    lean = a.lean or len(texts) > 30000
    if lean:
        note = (
            "LEAN: the datasketch and rensa per-document workers keep no shingle sets (built, signed, dropped; "
            "rebuilt for candidate documents at verification); bulk rensa workers are skipped"
        )
        print(note)
        notes.append(note)
        contenders = [c for c in contenders if c not in ("rensa-rminhash-bulk", "rensa-cminhash")]
    results: list[dict[str, Any]] = []
    for name in contenders:
        res_path = tmp / f"{name}.json"
        pairs_path = tmp / f"{name}.pairs.npy"
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            name,
            "--data",
            str(data),
            "--yaml",
            str(yaml_path),
            "--result",
            str(res_path),
            "--pairs",
            str(pairs_path),
            "--num-perm",
            str(a.num_perm),
            "--threshold",
            str(a.threshold),
            "--seed",
            str(a.seed),
            "--bands",
            str(bands),
            "--rows",
            str(rows),
        ] + (["--lean"] if lean else [])
        prof_path = None
        if a.profile_er and name == "er-framework":
            prof_path = Path(a.out).with_suffix(".er.prof")
            prof_path.parent.mkdir(parents=True, exist_ok=True)
            cmd += ["--profile", str(prof_path)]
        print(f"running {name} ...", flush=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, check=False)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"  {name} failed: {exc}")
            results.append({"name": name, "error": str(exc)})
            continue
        r = json.loads(res_path.read_text())
        r["name"] = name
        if r.get("code_changed_during_run"):
            msg = f"WARNING: er-framework sources changed while {name} ran; rerun for a clean measurement"
            print("  " + msg)
            notes.append(msg)
        r["process_seconds"] = wall  # incl. interpreter start-up and imports
        lr = np.load(pairs_path)
        got = set(zip(lr[0].tolist(), lr[1].tolist()))
        true_j = exact_jaccard(texts, lr[0], lr[1])
        r["recall"] = len(got & truth) / len(truth) if truth else 1.0
        r["recall_by_bin"] = recall_by_bin(gt, got)
        r["precision"] = float((true_j >= a.threshold).mean()) if len(true_j) else 1.0
        r["verified_outside_families"] = len(got - {(int(x), int(y)) for x, y in zip(gt["left"], gt["right"])})
        results.append(r)
        if prof_path is not None:
            import io
            import pstats

            buf = io.StringIO()
            pstats.Stats(str(prof_path), stream=buf).sort_stats("tottime").print_stats(12)
            r["profile"] = str(prof_path)
            r["profile_top"] = buf.getvalue()
            print(buf.getvalue())
        print(f"  {r['total']:.2f} s in-process, {wall:.2f} s with start-up; recall {r['recall']:.4f}", flush=True)

    # ratios against the first er-framework contender of the run
    er_ref = next((r for r in results if r["name"].startswith("er-framework") and not r.get("error")), None)
    er_total = er_ref["total"] if er_ref is not None else None
    for r in results:
        if not r.get("error"):
            r["ratio_vs_er"] = r["total"] / er_total if er_total else None

    print()
    print(f"{len(texts):,} documents, num_perm={a.num_perm}, threshold={a.threshold}, (b, r)=({bands}, {rows}); seconds per stage")
    print(fmt_table(results))
    print()
    print(f"recall by exact-Jaccard bin of the within-family pairs (threshold {a.threshold}: pairs below it should not be reported)")
    print(fmt_bins(results))
    print()
    print(fmt_signature_ratios(results, len(texts)))
    print(
        "x er = contender total / total of the first er-framework contender (> 1: er-framework is faster); cpu s = user + system "
        "CPU seconds of the measured run (less sensitive to other load than wall time); "
        "'other' = the rest of the measured run (er: parse_job + cluster + report)."
    )
    load_end = os.getloadavg()
    print(f"load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f} (nproc {os.cpu_count()})")
    er_res = er_ref
    if er_res is not None:
        c = er_res["code"]
        print(
            f"er-framework code: HEAD {c['git_head'][:12]}, sources sha256 {c['sources_sha256'][:12]}, "
            f"{len(c['dirty_paths'])} uncommitted path(s), newest source {c['newest_source_mtime']}"
        )
    for n in notes:
        print(n)

    out = {
        "benchmark": "documents",
        "command": " ".join([Path(sys.executable).name, *[str(x) for x in sys.argv]]),
        "machine": {
            **machine_info(("er-framework", "datasketch", "rensa", "numpy")),
            "load_average_start": load_start,
            "load_average_end": load_end,
        },
        "settings": {
            "docs_requested": a.docs,
            "docs": len(texts),
            "words": list(a.words),
            "num_perm": a.num_perm,
            "threshold": a.threshold,
            "seed": a.seed,
            "shingle": f"char {K_SHINGLE}",
            "bands": bands,
            "rows": rows,
            "target_recall": TARGET_RECALL,
            "expected_recall_s_curve": expected_recall,
        },
        "dataset": dataset,
        "notes": notes,
        "results": results,
        "markdown_table": fmt_markdown(results),
    }
    out_path = Path(a.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=1, default=str))
    print(f"saved {out_path}")
    if not a.keep:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    return 0


def _word_range(text: str) -> tuple[int, int]:
    return min_max(text, "450,750")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=20000, help="number of documents (default 20,000)")
    p.add_argument(
        "--words", type=_word_range, default=(450, 750), metavar="MIN,MAX", help="words per document (default 450,750: ~3,900 characters)"
    )
    p.add_argument("--short", action="store_true", help="tweet-like documents: --words 15,30 (~100-200 characters)")
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", default=str(HERE / "results" / "documents.json"))
    p.add_argument("--contenders", default=",".join(CONTENDERS), help=f"comma-separated subset of {CONTENDERS}")
    p.add_argument(
        "--budget-seconds", type=float, default=540.0, help="scale --docs down when the calibrated estimate exceeds this (0: never scale)"
    )
    p.add_argument("--timeout", type=float, default=3600.0, help="per-contender timeout in seconds")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (data, YAML, pairs)")
    p.add_argument(
        "--profile-er",
        action="store_true",
        help="run the er-framework worker under cProfile; stats saved next to --out (*.er.prof), top printed",
    )
    # worker mode (internal)
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--yaml", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--pairs", help=argparse.SUPPRESS)
    p.add_argument("--bands", type=int, help=argparse.SUPPRESS)
    p.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    p.add_argument("--profile", help=argparse.SUPPRESS)
    p.add_argument(
        "--lean",
        action="store_true",
        help="datasketch/rensa workers keep no shingle sets (rebuilt for candidate documents at verification); "
        "automatic above 30,000 documents, where all sets would need tens of GB",
    )
    a = p.parse_args(argv)
    if a.short:
        a.words = (15, 30)
    if a.worker:
        run_worker(a)
        return 0
    return orchestrate(a)


if __name__ == "__main__":
    sys.exit(main())
