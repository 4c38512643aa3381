"""How the prior scales of ``labels_fit: refine`` were chosen: on Febrl4 only (persons and inventors are the
held-out measurement, benchmarks/bench_active.py).

Febrl4 (configs/febrl4.yaml) runs once; its candidates are labelled from the truth file. The shipped model
links Febrl4 without an error, which leaves labels nothing to correct, so the same candidates are also
compared on fewer fields (:data:`VARIANTS`, unsupervised F1 0.93-0.97). For each variant and N in 10, 20, 40,
80 labelled pairs chosen two ways (the N nearest the threshold by the variant's unsupervised score, N/2 each
side, as one fixed round of ``er review``; and N uniform random candidates, two seeds), the verifier is
fitted again with the labels for every pair of scales in a grid; recorded are the pairwise F1 at the
threshold and the log loss of the scores of the candidates not labelled (mean of -log P(the true class)).
The defaults are the pair with the highest mean F1 over all cases (ties: the lower mean log loss).

    python benchmarks/bench_labels_refine.py [--out benchmarks/results/labels-refine-febrl4]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.config import parse_job
from er_framework.data import Batch, LabelledPairs, Pairs
from er_framework.executors.local import run_local
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams

ROOT = Path(__file__).resolve().parents[1]
SIZES = (10, 20, 40, 80)
PRIOR_SCALES = (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0)
INTERCEPT_SCALES = (2.0, 4.0, 8.0)
#: the shipped job, and the same candidates compared on fewer fields: the shipped model makes no error for
#: the labels to correct (F1 1.0); these make some (F1 0.93-0.97 unsupervised)
VARIANTS: dict[str, tuple[str, ...] | None] = {
    "all fields": None,
    "names, suburb, postcode": ("given_name", "surname", "suburb", "postcode"),
    "names, street number, suburb": ("given_name", "surname", "street_number", "suburb"),
    "names, date of birth": ("given_name", "surname", "date_of_birth"),
}


def f1(pred: np.ndarray, y: np.ndarray, n_true: int) -> float:
    tp = int((pred & y).sum())
    p, r = tp / max(int(pred.sum()), 1), tp / n_true
    return 2 * p * r / max(p + r, 1e-300)


def log_loss(score: np.ndarray, y: np.ndarray, seen: np.ndarray) -> float:
    keep = np.ones(len(y), dtype=bool)
    keep[seen] = False
    s = np.clip(score[keep], 1e-15, 1 - 1e-15)
    return float(-np.mean(np.where(y[keep], np.log(s), np.log1p(-s))))


def label_sets(score: np.ndarray, threshold: float, n_pairs: int) -> list[tuple[str, int, np.ndarray]]:
    out = []
    above, below = np.flatnonzero(score >= threshold), np.flatnonzero(score < threshold)
    for n in SIZES:
        near = np.r_[
            above[np.argsort(score[above], kind="stable")][: n // 2], below[np.argsort(-score[below], kind="stable")][: n - n // 2]
        ]
        out.append(("nearest", n, near))
        for seed in range(2):
            out.append((f"random{seed}", n, np.random.default_rng(seed).choice(n_pairs, n, replace=False)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "labels-refine-febrl4"))
    args = ap.parse_args()
    job = parse_job(ROOT / "configs" / "febrl4.yaml")
    result = run_local(job, write=False)
    with (ROOT / "configs" / "data" / "febrl" / "febrl4_truth.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    truth = {(a, b) for a, b, *_ in rows} | {(b, a) for a, b, *_ in rows}
    ids, c = result.records.ids, result.candidates
    y = np.array([(ids[i], ids[j]) in truth for i, j in zip(c.left.tolist(), c.right.tolist())])
    batch, pairs = Batch(result.records, cross_source_only=True), Pairs(c.left, c.right)
    params = job.verifier.params
    assert isinstance(params, FellegiSunterParams)
    threshold = float(params.threshold or job.threshold)
    n_true = len(rows)
    dumped = params.model_dump()
    setups = []
    for variant, keep in VARIANTS.items():
        fields = [f for f in dumped["fields"] if keep is None or f["field"] in keep]
        unsup, _ = FellegiSunter(FellegiSunterParams(**{**dumped, "fields": fields}), job.context).fit_score(batch, pairs, None)
        setups.append(
            (
                variant,
                fields,
                label_sets(unsup, threshold, len(pairs)),
                f1(unsup >= threshold, y, n_true),
                log_loss(unsup, y, np.zeros(0, np.int64)),
            )
        )
        print(variant, setups[-1][3], flush=True)
    grid: dict[str, Any] = {}
    for ps, isc in itertools.product(PRIOR_SCALES, INTERCEPT_SCALES):
        got = []
        for variant, fields, cases, _, _ in setups:
            changes = {"fields": fields, "labels_prior_scale": ps, "labels_intercept_scale": isc}
            v = FellegiSunter(FellegiSunterParams(**{**dumped, **changes}), job.context)
            for how, n, idx in cases:
                scores, _ = v.fit_score(batch, pairs, LabelledPairs(Pairs(pairs.left[idx], pairs.right[idx]), y[idx]))
                got.append(
                    {
                        "variant": variant,
                        "labels": how,
                        "n": n,
                        "f1": round(f1(scores >= threshold, y, n_true), 5),
                        "log_loss": log_loss(scores, y, idx),
                    }
                )
        grid[f"{ps}/{isc}"] = {
            "prior_scale": ps,
            "intercept_scale": isc,
            "mean_f1": round(float(np.mean([g["f1"] for g in got])), 5),
            "mean_log_loss": float(np.mean([g["log_loss"] for g in got])),
            "cases": got,
        }
        print(ps, isc, grid[f"{ps}/{isc}"]["mean_f1"], grid[f"{ps}/{isc}"]["mean_log_loss"], flush=True)
    best = max(grid.values(), key=lambda g: (g["mean_f1"], -g["mean_log_loss"]))
    out = Path(args.out)
    unsup = {variant: {"f1": round(base, 5), "log_loss": loss} for variant, _, _, base, loss in setups}
    out.with_suffix(".json").write_text(json.dumps({"unsupervised": unsup, "best": best, "grid": grid}, indent=1) + "\n")
    mean_base = float(np.mean([u["f1"] for u in unsup.values()]))
    lines = [
        "# labels_fit: refine - prior scales chosen on Febrl4",
        "",
        "Unsupervised F1: " + "; ".join(f"{k} {u['f1']}" for k, u in unsup.items()) + f" (mean {mean_base:.5f}).",
        "",
        f"Mean F1 (mean log loss of the unlabelled candidates) over {sum(len(c) for _, _, c, _, _ in setups)} label sets "
        "(4 variants; 10-80 labels nearest the threshold, or random):",
        "",
        "| prior_scale \\ intercept_scale | " + " | ".join(f"{x:g}" for x in INTERCEPT_SCALES) + " |",
        "|---:|" + "---:|" * len(INTERCEPT_SCALES),
    ]
    for ps in PRIOR_SCALES:
        cells = [grid[f"{ps}/{isc}"] for isc in INTERCEPT_SCALES]
        lines.append(f"| {ps:g} | " + " | ".join(f"{g['mean_f1']:.5f} ({g['mean_log_loss']:.5f})" for g in cells) + " |")
    lines += ["", f"Chosen: labels_prior_scale {best['prior_scale']:g}, labels_intercept_scale {best['intercept_scale']:g}."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
