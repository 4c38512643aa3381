"""Thresholds chosen from the data: the ``valley`` and ``mixture`` methods of
:func:`er_framework.kernels.threshold.choose_threshold` against the best fixed threshold.

Run from the repository root (~2 min on 2 cores)::

    python benchmarks/bench_threshold.py
    python benchmarks/bench_threshold.py --datasets documents,news --out /tmp/t.json

**Candidate scores.** Each corpus runs as an er job in this process
(``load_yaml`` + ``resolve_job`` with the job's ``threshold`` set to the floor
``low`` and ``diagnostics: 0``, then ``run_job(job, write=False)``). The blocker
is therefore designed for ``low`` (LSH ``target_recall`` at ``low``), and
``Result.candidates`` holds every candidate pair with its verifier score (exact
Jaccard of the shingle sets): those scores are what ``choose_threshold`` sees.
Exact-duplicate pairs (records collapsed before LSH) are not candidates; they
are in ``Result.pairs`` with score 1.0 and stay above every threshold.

**Quality at a threshold t.** The pairs of ``Result.pairs`` (verified at
``low`` plus the exact duplicates) with score >= t, connected components, and
B-cubed precision / recall / F1 (``er_framework.evaluate.metrics.bcubed``) and
pairwise F1 of the clusters (pairs of records in one cluster) against the
truth. **Oracle**: the best B-cubed F1 over the fixed thresholds 0.05, 0.06, …,
0.95 (those >= low; the truth picks it, a user cannot).

**Corpora** (truth known):

* ``documents`` — ``configs/documents.yaml`` as shipped (270 documents, truth
  pairs in ``configs/data/docs_truth.csv`` closed transitively), low 0.5;
* ``news`` — ``configs/news.yaml`` as shipped (26 pages of 8 stories), low 0.15;
* ``chained`` — ``er_framework.synth.documents.chained_records(2000, seed=0)``
  (chains, look-alike siblings, bridging records), char 5-shingles, MinHash 128,
  LSH target recall 0.95, low 0.3 (the job of ``benchmarks/bench_clustering.py``);
* ``chained-s1`` — the same generator, seed 1, 1000 entities (held out: never
  looked at while the kernel was written);
* ``boilerplate`` — the corpus of ``tests/engine/test_auto_threshold.py``
  (fixture ``corpus``): ``planted_documents(90, copies_per_family=(1, 3),
  words=(20, 40), edit_rates=(0.0, 0.06), n_singletons=150, seed=8)`` with one
  of three long boilerplate paragraphs appended to 70% of the texts
  (``random.Random(2)``); that test's job (char 5-shingles, MinHash 128, LSH
  bands, Jaccard), low 0.15. Its candidate scores form three groups in
  [low, 1): a tail near the floor, a big middle group (documents sharing a
  paragraph) and ~60 near-duplicate pairs at 0.7-1.0.

**Held-out histograms** (scores only, no truth: the threshold and the range
known good): ``h101`` — 60,047 candidate scores of held-out news pages, low
0.15, stored as their 2000-bin histogram in
``tests/kernels/h101_scores_hist.npz``; the best threshold was measured at
about 0.25-0.30 (B-cubed F1 0.99; 0.739 gave 0.79).

Not a test: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_clustering as bc  # noqa: E402

from er_framework.data import Pairs  # noqa: E402
from er_framework.evaluate.metrics import bcubed, contingency  # noqa: E402
from er_framework.kernels.graph import canonical_labels, connected_component_labels  # noqa: E402
from er_framework.kernels.threshold import choose_threshold  # noqa: E402

#: the fixed thresholds of the oracle
GRID = np.round(np.arange(0.05, 0.951, 0.01), 2)


# ---------------------------------------------------------------- jobs


def run_low(config: Path, low: float) -> tuple[list[str], Pairs, Pairs, dict[str, Any]]:
    """Ids, candidates (scored), the pairs at ``low`` (+ exact duplicates) and the report of ``config`` run at ``low``."""
    from er_framework.config.resolve import resolve_job
    from er_framework.config.yaml_load import load_yaml, read_job_text
    from er_framework.executors import run_job

    data, lines, problems = load_yaml(read_job_text(config), str(config))
    data["threshold"] = low
    data["diagnostics"] = 0
    job = resolve_job(data, lines, str(config), config.resolve().parent, problems, config_path=config)
    res = run_job(job, write=False)
    assert res.candidates is not None and res.candidates.score is not None
    return res.records.ids, res.candidates, res.pairs, res.report


def text_job(folder: Path, name: str, ids: list[str], texts: list[str], k: int) -> Path:
    """bench_clustering's text job (char k-shingles, MinHash 128, LSH, exact Jaccard, connected components);
    its threshold is replaced by each corpus's floor when it runs."""
    return bc.write_text_job(folder, name, ids, texts, k=k, threshold=0.5)


#: the paragraphs of tests/engine/test_auto_threshold.py (copied: a benchmark does not import tests)
BOILERPLATE = [
    "Subscribers may share this article with colleagues under the terms of the newsroom licence, provided that "
    "the source is credited and the text is not altered, sold or used to train any automated system whatsoever.",
    "The views expressed here are those of the authors and do not represent the editorial board, the owners of "
    "the publication or any advertiser; corrections can be sent to the desk at any time of the day or night.",
    "Readers who found this coverage useful can support our reporting with a subscription, a donation or by "
    "telling a friend about the newsletter that arrives in their inbox every weekday morning before breakfast.",
]
BOILERPLATE_FAMILY: dict[str, Any] = {}


def boilerplate_job(folder: Path) -> Path:
    """The corpus and the job of tests/engine/test_auto_threshold.py (its threshold replaced by ``run_low``)."""
    import random

    from er_framework.synth.documents import planted_documents

    d = planted_documents(90, copies_per_family=(1, 3), words=(20, 40), edit_rates=(0.0, 0.06), n_singletons=150, seed=8)
    rng = random.Random(2)
    texts = [t + " " + rng.choice(BOILERPLATE) if rng.random() < 0.7 else t for t in d.texts]
    data = folder / "boilerplate.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    BOILERPLATE_FAMILY.clear()
    BOILERPLATE_FAMILY.update({f"d{i}": int(f) for i, f in enumerate(d.family)})
    path = folder / "boilerplate.yaml"
    path.write_text(
        f"""
seed: 5
threshold: 0.5
sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
shingler: {{type: char, k: 5}}
signature: {{type: minhash, num_perm: 128}}
blockers: [{{type: lsh_bands}}]
verifier: {{type: jaccard}}
cluster: {{type: connected_components}}
diagnostics: 0
""",
        encoding="utf-8",
    )
    return path


def labels_of(ids: list[str], of: dict[str, Any]) -> np.ndarray:
    codes: dict[Any, int] = {}
    return np.array([codes.setdefault(of.get(r, ("singleton", r)), len(codes)) for r in ids], dtype=np.int64)


def corpus(name: str, low: float, tmp: Path) -> dict[str, Any]:
    if name.startswith("chained"):
        from er_framework.synth.documents import chained_records

        seed, entities = (1, 1000) if name == "chained-s1" else (0, 2000)
        d = chained_records(entities, seed=seed)
        ids, cand, pairs, report = run_low(text_job(tmp, name, d.ids, d.texts, k=5), low)
        truth = labels_of(ids, dict(zip(d.ids, d.entity)))
        settings = f"chained_records({entities}, seed={seed}); char k=5, minhash 128, lsh recall 0.95 at low {low}"
    elif name == "boilerplate":
        ids, cand, pairs, report = run_low(boilerplate_job(tmp), low)
        truth = labels_of(ids, BOILERPLATE_FAMILY)
        settings = (
            "planted_documents(90, copies (1, 3), words (20, 40), edits (0, 0.06), 150 singletons, seed 8) + "
            f"boilerplate paragraphs on 70% (tests/engine/test_auto_threshold.py); char k=5, minhash 128, lsh at low {low}"
        )
    elif name == "documents":
        ids, cand, pairs, report = run_low(ROOT / "configs" / "documents.yaml", low)
        with open(ROOT / "configs" / "data" / "docs_truth.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        pos = {r: i for i, r in enumerate(ids)}
        truth = connected_component_labels(
            len(ids),
            np.array([pos[r["left_id"]] for r in rows], dtype=np.int64),
            np.array([pos[r["right_id"]] for r in rows], dtype=np.int64),
        )
        settings = f"configs/documents.yaml with threshold {low} (the floor)"
    elif name == "news":
        ids, cand, pairs, report = run_low(ROOT / "configs" / "news.yaml", low)
        with open(ROOT / "configs" / "data" / "news" / "truth.csv", encoding="utf-8") as f:
            truth = labels_of(ids, {r["id"]: r["story"] for r in csv.DictReader(f)})
        settings = f"configs/news.yaml with threshold {low} (the floor)"
    else:
        raise SystemExit(f"unknown data set {name!r}")
    return {
        "ids": ids,
        "candidates": cand,
        "pairs": pairs,
        "truth": canonical_labels(truth),
        "settings": settings,
        "blockers": report.get("blockers"),
    }


# ---------------------------------------------------------------- quality


def quality(n: int, pairs: Pairs, truth: np.ndarray, t: float) -> dict[str, float]:
    """B-cubed and pairwise P/R/F1 of the connected components of the pairs scored >= t."""
    assert pairs.score is not None
    keep = pairs.score >= t
    pred = connected_component_labels(n, pairs.left[keep], pairs.right[keep])
    p, r, f = bcubed(truth, pred)
    n_ij, a, b = contingency(truth, pred)
    tp = float((n_ij * (n_ij - 1) // 2).sum())
    truth_sizes = np.bincount(truth)
    pred_sizes = np.bincount(canonical_labels(pred))
    n_true = float((truth_sizes * (truth_sizes - 1) // 2).sum())
    n_pred = float((pred_sizes * (pred_sizes - 1) // 2).sum())
    pp = tp / n_pred if n_pred else 1.0
    pr = tp / n_true if n_true else 1.0
    pf = 2 * pp * pr / (pp + pr) if pp + pr else 0.0
    return {
        "bcubed_p": round(float(p or 0), 4),
        "bcubed_r": round(float(r or 0), 4),
        "bcubed_f1": round(float(f or 0), 4),
        "pair_p": round(pp, 4),
        "pair_r": round(pr, 4),
        "pair_f1": round(pf, 4),
    }


#: label -> choose_threshold keyword arguments
METHODS: dict[str, dict[str, Any]] = {
    "valley": {"method": "valley"},
    "valley (silverman h)": {"method": "valley", "bandwidth": "silverman"},
    "mixture": {"method": "mixture"},
}


def measure(name: str, low: float, tmp: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    ds = corpus(name, low, tmp)
    n = len(ds["ids"])
    scores = np.asarray(ds["candidates"].score, dtype=np.float64)
    sec_job = time.perf_counter() - t0
    grid = [float(t) for t in GRID if t >= low - 1e-9]
    table = {t: quality(n, ds["pairs"], ds["truth"], t) for t in grid}
    best_t = max(grid, key=lambda t: (table[t]["bcubed_f1"], -abs(t - 0.5)))
    same = ds["truth"][ds["candidates"].left] == ds["truth"][ds["candidates"].right]
    info: dict[str, Any] = {
        "records": n,
        "settings": ds["settings"],
        "low": low,
        "candidates": int(len(scores)),
        "candidates_true": int(same.sum()),
        "exact_duplicate_pairs": int(len(ds["pairs"]) - int((scores >= low).sum())),
        "true_scores": _summary(scores[same]),
        "false_scores": _summary(scores[~same]),
        "seconds_job": round(sec_job, 2),
        "oracle": {"threshold": best_t, **table[best_t]},
        "at_low": {"threshold": low, **table[grid[0]]},
        "fixed": {f"{t:.2f}": table[t]["bcubed_f1"] for t in grid},
        "methods": {},
    }
    print(f"\n## {name}: {n} records, {len(scores)} candidates ({int(same.sum())} true), low {low}; {ds['settings']}")
    print(f"   true scores {info['true_scores']}\n   false scores {info['false_scores']}")
    print(f"{'method':<22} {'t':>6} {'ok':>3} {'B3 P':>7} {'B3 R':>7} {'B3 F1':>7} {'pairF1':>7} {'ΔF1':>7}  reason")
    print(
        f"{'oracle (best fixed)':<22} {best_t:6.2f} {'':>3} {table[best_t]['bcubed_p']:7.4f} {table[best_t]['bcubed_r']:7.4f} "
        f"{table[best_t]['bcubed_f1']:7.4f} {table[best_t]['pair_f1']:7.4f}"
    )
    for label, kw in METHODS.items():
        t1 = time.perf_counter()
        fit = choose_threshold(scores, low=low, **kw)
        sec = time.perf_counter() - t1
        q = quality(n, ds["pairs"], ds["truth"], fit.threshold)
        delta = q["bcubed_f1"] - table[best_t]["bcubed_f1"]
        info["methods"][label] = {
            "threshold": round(fit.threshold, 4),
            "ok": fit.ok,
            "method": fit.method,
            "reason": fit.reason,
            **q,
            "delta_bcubed_f1_vs_oracle": round(delta, 4),
            "seconds": round(sec, 4),
            "evidence": fit.to_json()["evidence"],
        }
        print(
            f"{label:<22} {fit.threshold:6.3f} {'y' if fit.ok else 'n':>3} {q['bcubed_p']:7.4f} {q['bcubed_r']:7.4f} "
            f"{q['bcubed_f1']:7.4f} {q['pair_f1']:7.4f} {delta:+7.4f}  {fit.reason}",
            flush=True,
        )
    return info


#: name -> (histogram fixture, low, the range of good thresholds measured with the truth)
HELD_OUT = {"h101": (ROOT / "tests" / "kernels" / "h101_scores_hist.npz", 0.15, (0.22, 0.40))}


def held_out(name: str) -> dict[str, Any]:
    path, low, good = HELD_OUT[name]
    d = np.load(path)
    centres = (np.arange(len(d["counts"])) + 0.5) / len(d["counts"])
    scores = np.concatenate([np.repeat(centres, d["counts"]), np.ones(int(d["ones"]))])
    out: dict[str, Any] = {
        "fixture": str(path.relative_to(ROOT)),
        "low": low,
        "scores": int(len(scores)),
        "good_range": list(good),
        "methods": {},
    }
    print(f"\n## {name} (held-out histogram, {len(scores)} scores, low {low}; good thresholds {good[0]}-{good[1]})")
    for label, kw in METHODS.items():
        fit = choose_threshold(scores, low=low, **kw)
        inside = good[0] <= fit.threshold <= good[1]
        out["methods"][label] = {"threshold": round(fit.threshold, 4), "ok": fit.ok, "in_good_range": inside, "reason": fit.reason}
        print(f"{label:<22} {fit.threshold:6.3f} {'y' if fit.ok else 'n':>3} {'in' if inside else 'OUT':>4}  {fit.reason}")
    return out


def _summary(x: np.ndarray) -> dict[str, Any]:
    if len(x) == 0:
        return {"count": 0}
    q = np.quantile(x, [0.0, 0.01, 0.5, 0.99, 1.0])
    return {
        "count": int(len(x)),
        "min": round(float(q[0]), 3),
        "p1": round(float(q[1]), 3),
        "median": round(float(q[2]), 3),
        "p99": round(float(q[3]), 3),
        "max": round(float(q[4]), 3),
    }


def speed(n: int) -> dict[str, Any]:
    """Seconds of choose_threshold on ``n`` generated scores (a 20:1 beta mixture), best of 3."""
    rng = np.random.default_rng(0)
    k = n // 21
    scores = np.concatenate([rng.beta(2, 12, n - k), rng.beta(12, 3, k)])
    out = {}
    for method in ("valley", "mixture"):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            choose_threshold(scores, low=0.2, method=method)
            best = min(best, time.perf_counter() - t0)
        out[method] = round(best, 3)
    print(f"\n## speed: {n:,} scores: " + ", ".join(f"{m} {s:.3f} s" for m, s in out.items()))
    return {"scores": n, "seconds": out}


def _git_state() -> dict[str, Any]:
    """The commit measured, and which tracked files under configs/ and er_framework/ differed from it (a shared
    working tree: the shipped configs may be changing)."""
    import subprocess

    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            return ""

    return {
        "head": git("rev-parse", "--short", "HEAD"),
        "modified": git("status", "--porcelain", "--untracked-files=no", "configs", "er_framework").splitlines(),
    }


DEFAULT_LOWS = {"documents": 0.5, "news": 0.15, "chained": 0.3, "chained-s1": 0.3, "boilerplate": 0.15}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="documents,news,chained,chained-s1,boilerplate")
    ap.add_argument("--low", action="append", default=[], help="NAME=LOW (repeatable), e.g. news=0.2")
    ap.add_argument("--speed", type=int, default=10_000_000, help="scores for the timing (0: skip)")
    ap.add_argument("--out", default="benchmarks/results/threshold-methods.json")
    args = ap.parse_args()
    lows = dict(DEFAULT_LOWS)
    for item in args.low:
        k, _, v = item.partition("=")
        lows[k] = float(v)
    result: dict[str, Any] = {
        "command": "python benchmarks/bench_threshold.py " + " ".join(sys.argv[1:]),
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform()},
        "git": _git_state(),
        "quality": "connected components of the pairs >= t (plus exact duplicates); er_framework.evaluate.metrics.bcubed",
        "oracle_grid": [float(GRID[0]), float(GRID[-1]), 0.01],
        "datasets": {},
    }
    with tempfile.TemporaryDirectory() as d:
        for name in args.datasets.split(","):
            result["datasets"][name] = measure(name, lows[name], Path(d))
    result["held_out"] = {name: held_out(name) for name in HELD_OUT}
    if args.speed:
        result["speed"] = speed(args.speed)
    summary = {}
    for label in METHODS:
        deltas = {k: v["methods"][label]["delta_bcubed_f1_vs_oracle"] for k, v in result["datasets"].items()}
        summary[label] = {
            "delta_bcubed_f1": deltas,
            "worst": min(deltas.values()) if deltas else None,
            "within_0.05_everywhere": all(x >= -0.05 for x in deltas.values()),
        }
    result["summary"] = summary
    print("\n## summary: B-cubed F1 minus the oracle's")
    for label, s in summary.items():
        print(
            f"{label:<22} "
            + "  ".join(f"{k} {v:+.4f}" for k, v in s["delta_bcubed_f1"].items())
            + f"   within 0.05: {s['within_0.05_everywhere']}"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
