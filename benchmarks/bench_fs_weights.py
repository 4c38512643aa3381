"""Fellegi-Sunter weights as a user runs them: whole ``er run`` processes, F1 by ``er evaluate``.

Two measurements (issue 16, item 4):

1. **How m and u are estimated** -- the same shipped job with the verifier's
   ``monotone`` / ``fix_u`` set four ways:

   ``em``               ``monotone: false, fix_u: false`` (the default before issue 16)
   ``em-fix_u``         ``monotone: false, fix_u: true``  (u from 20,000 random pairs)
   ``monotone``         ``monotone: true,  fix_u: false`` (EM, weights non-increasing in the level)
   ``monotone-fix_u``   ``monotone: true,  fix_u: true``

   on Febrl3 (``configs/febrl3.yaml``, dedup), Febrl4 (``configs/febrl4.yaml``,
   link), the shipped 2,000 customers (``configs/customers.yaml``) and
   ``er synth customers --n N --overlap 0.5 --seed S`` for each ``--customers N``
   and ``--customer-seeds S`` (``configs/customers.yaml`` with the source
   paths pointed at them). Per run:
   pair F1 after clustering (``er evaluate --json``: ``pairwise.cluster_pairs``),
   precision, recall, B-cubed F1, and whether every field's weights
   log2(m/u) are non-increasing from the closest level to the last
   (report.json's ``verifier.per_field``).

2. **Training from labelled pairs** on Febrl4 (``training: {labels: FILE,
   lambda: ...}``): the unsupervised default run writes ``candidates.csv``
   (every candidate with its score); ``--labels`` pairs are then drawn from
   the candidates and labelled from the truth, two ways:

   ``random``      uniform random candidate pairs (one set per ``--label-seeds`` seed),
                   ``prior: labels`` and ``prior: em``
   ``borderline``  the pairs whose unsupervised score is nearest the job's threshold
                   (half above, half below, as ``er review`` picks them), ``prior: em``

   and the job runs again with them, the verifier's ``labels_fit`` both ways
   (``em``: semi-supervised EM on the candidates with the labelled pairs held
   at their labels; ``labels``: m and u from the labels alone). Same F1 as above.

Run from the repository root::

    python benchmarks/bench_fs_weights.py   # ~4 min on 2 cores; writes benchmarks/results/fs-weights.json

Not a test: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from common import code_fingerprint, machine_info

ROOT = Path(__file__).resolve().parents[1]
FEBRL = ROOT / "configs/data/febrl"

#: name -> verifier settings
VARIANTS: dict[str, dict[str, bool]] = {
    "em": {"monotone": False, "fix_u": False},
    "em-fix_u": {"monotone": False, "fix_u": True},
    "monotone": {"monotone": True, "fix_u": False},
    "monotone-fix_u": {"monotone": True, "fix_u": True},
}


def er(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "er_framework.cli.main", *args], capture_output=True, text=True, check=False)


def load_job(name: str) -> dict[str, Any]:
    """A shipped job with its relative paths made absolute (the YAML is written elsewhere)."""
    path = ROOT / "configs" / name
    job = yaml.safe_load(path.read_text())
    for s in job["sources"]:
        s["path"] = str((path.parent / s["path"]).resolve())
    return dict(job)


def datasets(scratch: Path, customers: list[int], seeds: list[int]) -> list[dict[str, Any]]:
    """``name, job, truth options`` of every data set (generated customers written into ``scratch``)."""
    out = [
        {
            "name": "febrl3",
            "job": load_job("febrl3.yaml"),
            "truth": [str(FEBRL / "febrl3_truth.csv"), "--id-column", "id", "--cluster-column", "entity"],
        },
        {"name": "febrl4", "job": load_job("febrl4.yaml"), "truth": [str(FEBRL / "febrl4_truth.csv")]},
        {"name": "customers-2k", "job": load_job("customers.yaml"), "truth": [str(ROOT / "configs/data/customers/truth.csv")]},
    ]
    for n in customers:
        for seed in seeds:
            d = scratch / f"customers-{n}-{seed}"
            r = er("synth", "customers", "--n", str(n), "--overlap", "0.5", "--seed", str(seed), "--out", str(d))
            if r.returncode != 0:
                raise SystemExit(f"er synth customers failed: {r.stderr}")
            job = load_job("customers.yaml")
            job["sources"][0]["path"] = str(d / "a.csv")
            job["sources"][1]["path"] = str(d / "b.csv")
            name = f"customers-{n // 1000}k" + (f"-seed{seed}" if seed != 1 else "")
            out.append({"name": name, "job": job, "truth": [str(d / "truth.csv")]})
    return out


def monotone_weights(report: dict[str, Any]) -> tuple[bool, dict[str, list[float]]]:
    """Every field's weights non-increasing from level 0 (closest) to the last; the weights that are not."""
    bad: dict[str, list[float]] = {}
    for name, f in report["verifier"]["per_field"].items():
        w = [float(x) for x in f["weight_log2"]]
        if any(b > a + 1e-9 for a, b in zip(w, w[1:])):
            bad[name] = w
    return not bad, bad


def run_job(job: dict[str, Any], truth: list[str], scratch: Path, tag: str) -> dict[str, Any]:
    """One ``er run`` + ``er evaluate --json``: F1, precision, recall, B-cubed, the weights' order."""
    cfg = scratch / f"{tag}.yaml"
    out = scratch / f"out-{tag}"
    cfg.write_text(yaml.safe_dump(job, sort_keys=False))
    t0 = time.perf_counter()
    r = er("run", str(cfg), "--out", str(out), "--force", "--quiet")
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-2000:]}
    ev = er("evaluate", str(out), "--truth", *truth, "--json")
    if ev.returncode != 0:
        return {"error": (ev.stderr or ev.stdout).strip()[-2000:]}
    e = json.loads(ev.stdout)
    report = json.loads((out / "report.json").read_text())
    ok, bad = monotone_weights(report)
    v = report["verifier"]
    cp = e["pairwise"]["cluster_pairs"]
    return {
        "f1": round(float(cp["f1"]), 6),
        "precision": round(float(cp["precision"]), 6),
        "recall": round(float(cp["recall"]), 6),
        "predicted_pairs": int(cp["predicted"]),
        "true_pairs": int(cp["true"]),
        "bcubed_f1": round(float(e["clusters"]["bcubed_f1"]), 6),
        "candidates": int(report["candidate_pairs"]),
        "weights_monotone": ok,
        "non_monotone_fields": bad,
        "lambda": v.get("lambda"),
        "iterations": v.get("iterations"),
        "estimation": v.get("estimation"),
        "training": v.get("training"),
        "weights_log2": {k: f["weight_log2"] for k, f in v["per_field"].items()},
        "seconds": round(seconds, 2),
        "out": str(out),
    }


def with_verifier(job: dict[str, Any], **settings: Any) -> dict[str, Any]:
    j = json.loads(json.dumps(job))
    j["verifier"].update(settings)
    return dict(j)


# ----------------------------------------------------------------------------- training


def read_truth_pairs(path: Path) -> set[tuple[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        next(r)
        return {(a, b) for a, b in r}


def read_candidates(out: Path) -> tuple[list[tuple[str, str, str, str]], np.ndarray]:
    """candidates.csv: ``(left_source, left_id, right_source, right_id)`` and the score of every candidate."""
    rows: list[tuple[str, str, str, str]] = []
    scores: list[float] = []
    with open(out / "candidates.csv", newline="", encoding="utf-8") as f:
        for d in csv.DictReader(f):
            rows.append((d["left_source"], d["left_id"], d["right_source"], d["right_id"]))
            scores.append(float(d["score"]))
    return rows, np.asarray(scores)


def pick_labels(
    rows: list[tuple[str, str, str, str]],
    scores: np.ndarray,
    truth: set[tuple[str, str]],
    k: int,
    how: str,
    threshold: float,
    seed: int,
) -> list[dict[str, Any]]:
    """``k`` candidates labelled from the truth: ``random`` (seeded) or ``borderline`` (nearest the threshold,
    half at or above it and half below, as er review picks them)."""
    if how == "random":
        idx = np.random.default_rng(seed).choice(len(rows), size=min(k, len(rows)), replace=False)
    else:
        above = np.flatnonzero(scores >= threshold)
        below = np.flatnonzero(scores < threshold)
        above = above[np.argsort(scores[above], kind="stable")][: k // 2]
        below = below[np.argsort(-scores[below], kind="stable")][: k - len(above)]
        idx = np.concatenate([above, below])
    out = []
    for i in idx.tolist():
        ls, li, rs, ri = rows[i]
        match = (li, ri) in truth or (ri, li) in truth
        out.append(
            {
                "left_source": ls,
                "left_id": li,
                "right_source": rs,
                "right_id": ri,
                "match": "yes" if match else "no",
                "score": float(scores[i]),
            }
        )
    return out


def write_labels(path: Path, labels: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["left_source", "left_id", "right_source", "right_id", "match"])
        w.writeheader()
        for d in labels:
            w.writerow({k: d[k] for k in w.fieldnames})


def training_runs(febrl4: dict[str, Any], scratch: Path, k: int, seeds: list[int]) -> dict[str, Any]:
    """Febrl4 trained from ``k`` labelled pairs (random: one run per seed; borderline), against the default."""
    base = dict(febrl4["job"])
    base["output"] = {**base.get("output", {}), "candidates": True}
    default = run_job(base, febrl4["truth"], scratch, "train-unsupervised")
    if "error" in default:
        return {"error": default["error"]}
    rows, scores = read_candidates(Path(default["out"]))
    truth = read_truth_pairs(FEBRL / "febrl4_truth.csv")
    threshold = float(base["verifier"]["threshold"])
    in_candidates = sum(1 for _, li, _, ri in rows if (li, ri) in truth or (ri, li) in truth)
    out: dict[str, Any] = {
        "unsupervised": default,
        "labelled_pairs": k,
        "runs": [],
        "true_pairs_among_candidates": in_candidates,
        "true_pairs": len(truth),
        "best_possible_f1": round(2 * in_candidates / (in_candidates + len(truth)), 6),
    }
    plans = [("random", s, prior, fit) for s in seeds for prior in ("labels", "em") for fit in ("em", "labels")]
    plans += [("borderline", 0, "em", fit) for fit in ("em", "labels")]
    for how, seed, prior, fit in plans:
        labels = pick_labels(rows, scores, truth, k, how, threshold, seed)
        path = scratch / f"labels-{how}-{seed}.csv"
        write_labels(path, labels)
        job = with_verifier(base, labels_fit=fit)
        job["training"] = {"labels": str(path), "prior": prior}
        res = run_job(job, febrl4["truth"], scratch, f"train-{how}-{seed}-{prior}-{fit}")
        res.update(
            {
                "labels": how,
                "seed": seed,
                "prior": prior,
                "labels_fit": fit,
                "label_matches": sum(d["match"] == "yes" for d in labels),
                "label_non_matches": sum(d["match"] == "no" for d in labels),
            }
        )
        res.pop("weights_log2", None)
        out["runs"].append(res)
        print(
            f"  febrl4 trained ({how}, seed {seed}, prior {prior}, labels_fit {fit}): "
            f"F1 {res.get('f1', res.get('error'))} ({res['label_matches']} labelled matches)",
            flush=True,
        )
    return out


# ----------------------------------------------------------------------------- main


def tables(result: dict[str, Any]) -> list[str]:
    """The results as markdown tables (benchmarks/README.md)."""
    lines = [
        "| data | candidates | " + " | ".join(f"`{v}` F1 (monotone?)" for v in VARIANTS) + " |",
        "|---|---:|" + "---:|" * len(VARIANTS),
    ]
    for name, per in result["estimation"].items():
        cells = []
        for v in VARIANTS:
            r = per[v]
            cells.append("error" if "error" in r else f"{r['f1']:.5f} ({'yes' if r['weights_monotone'] else 'no'})")
        cand = next((r["candidates"] for r in per.values() if "candidates" in r), "")
        lines.append(f"| {name} | {cand:,} | " + " | ".join(cells) + " |")
    tr = result.get("training")
    if tr and "runs" in tr:
        lines += [
            "",
            f"Febrl4 unsupervised (default): F1 {tr['unsupervised'].get('f1')}; the blocking's candidates hold "
            f"{tr['true_pairs_among_candidates']:,} of the {tr['true_pairs']:,} true pairs (best possible F1 "
            f"{tr['best_possible_f1']})",
            "",
            "| labelled pairs | matches among them | prior | `labels_fit: em` F1 | `labels_fit: labels` F1 |",
            "|---|---:|---|---:|---:|",
        ]
        rows: dict[tuple[str, int, str], dict[str, Any]] = {}
        for r in tr["runs"]:
            rows.setdefault((r["labels"], r["seed"], r["prior"]), {})[r["labels_fit"]] = r
        for (how, seed, prior), fits in rows.items():
            any_r = next(iter(fits.values()))
            what = f"{tr['labelled_pairs']} random (seed {seed})" if how == "random" else f"{tr['labelled_pairs']} borderline"
            cells = [f"{fits[f]['f1']:.5f}" if f in fits and "f1" in fits[f] else "-" for f in ("em", "labels")]
            lines.append(f"| {what} | {any_r['label_matches']} | {prior} | {cells[0]} | {cells[1]} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/fs-weights.json"))
    ap.add_argument("--customers", default="20000,100000", help="sizes of generated customer sets, comma-separated")
    ap.add_argument("--customer-seeds", default="1,2,3", help="er synth customers seeds (1 is named customers-Nk)")
    ap.add_argument("--labels", type=int, default=200, help="labelled pairs for the training runs")
    ap.add_argument("--label-seeds", default="1,2,3,4,5", help="seeds of the random labelled pairs")
    ap.add_argument("--no-training", action="store_true")
    a = ap.parse_args()
    sizes = [int(x) for x in a.customers.split(",") if x.strip()]
    result: dict[str, Any] = {
        "what": "Fellegi-Sunter m/u estimation: pair F1 after clustering (er evaluate) of whole er run processes",
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "machine": machine_info(("numpy", "rapidfuzz", "pyarrow")),
        "python": platform.python_version(),
        "code": {k: v for k, v in code_fingerprint().items() if k != "files"},
        "variants": VARIANTS,
        "estimation": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench_fs_weights_") as tmp:
        scratch = Path(tmp)
        sets = datasets(scratch, sizes, [int(x) for x in a.customer_seeds.split(",") if x.strip()])
        for d in sets:
            result["estimation"][d["name"]] = {}
            for name, settings in VARIANTS.items():
                res = run_job(with_verifier(d["job"], **settings), d["truth"], scratch, f"{d['name']}-{name}")
                result["estimation"][d["name"]][name] = res
                print(
                    f"{d['name']:>14} {name:>15}: F1 {res.get('f1', res.get('error'))}  monotone {res.get('weights_monotone')}", flush=True
                )
        if not a.no_training:
            febrl4 = next(d for d in sets if d["name"] == "febrl4")
            seeds = [int(x) for x in a.label_seeds.split(",") if x.strip()]
            result["training"] = training_runs(febrl4, scratch, a.labels, seeds)
        for per in result["estimation"].values():
            for r in per.values():
                r.pop("out", None)
        for r in [result.get("training", {}).get("unsupervised", {}), *result.get("training", {}).get("runs", [])]:
            r.pop("out", None)
    result["tables_markdown"] = tables(result)
    print("\n".join(result["tables_markdown"]))
    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
