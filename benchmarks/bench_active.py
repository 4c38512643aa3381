"""Active labelling (``er review`` rounds) against one fixed round of labels and against no labels, on held-out data.

Whole ``er`` processes, as a user runs them: ``er run`` the job, then for the active arm ``er review OUT --count
10`` rounds (each labelled by a truth oracle before the next), for the fixed arm one labels file of the N
candidates nearest the threshold (N/2 at or above it, N/2 below: the rule of the former ``er review``,
extended to N), for each N the job run again with ``training: {labels: FILE}`` and ``er evaluate``d against
the truth (pairwise F1 of the verified pairs). The proposal shares were tuned on other samples than the
corpora measured (``er synth inventors --n 3000 --seed 1``, ``er synth persons --n 2000 --duplicates 200 --seed
1``, jobs copied from configs/ with absolute source paths: benchmarks/results/active-tune-*.md); the shipped
configs/persons.yaml and configs/inventors.yaml (seed 0) are held out. The ceiling is the best F1 measured (either
arm, any N); the results say how many labels each arm needs to reach it.

    python benchmarks/bench_active.py [--job configs/persons.yaml] [--truth configs/data/persons/truth.csv]
        [--id-column id --cluster-column entity] [--out benchmarks/results/active-persons]
    python benchmarks/bench_active.py --job configs/inventors.yaml --truth configs/data/inventors/truth.csv \
        --out benchmarks/results/active-inventors
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIZES = (10, 20, 40, 80)


def er(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "er_framework", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"er {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def oracle(truth: Path, id_column: str | None, cluster_column: str | None) -> set[frozenset[str]] | dict[str, str]:
    with truth.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    if cluster_column:
        return {r[id_column or "id"]: r[cluster_column] for r in rows}
    a, b = list(rows[0])[:2]
    return {frozenset((r[a], r[b])) for r in rows}


def is_match(truth: set[frozenset[str]] | dict[str, str], left: str, right: str) -> bool:
    if isinstance(truth, dict):
        return left in truth and truth.get(left) == truth.get(right)
    return frozenset((left, right)) in truth


def fill(path: Path, truth: set[frozenset[str]] | dict[str, str]) -> None:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        if r["match"] == "":
            r["match"] = "1" if is_match(truth, r["left_id"], r["right_id"]) else "0"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def f1_with(work: Path, job: Path, labels: Path | None, args: argparse.Namespace, name: str) -> dict[str, float] | None:
    """Precision, recall and F1 of the job run with ``labels``; None when the run refuses labels of one kind only."""
    text = job.read_text(encoding="utf-8")
    if labels is not None:
        text += f"\ntraining: {{labels: {labels}}}\n"
    trained = job.with_name(f"{name}.yaml")
    trained.write_text(text, encoding="utf-8")
    out = work / "out" / name
    try:
        er("run", str(trained), "--out", str(out), "-q", cwd=work)
    except SystemExit as e:
        if "training needs both" in str(e):
            return None
        raise
    extra = ["--id-column", args.id_column, "--cluster-column", args.cluster_column] if args.cluster_column else []
    got = json.loads(er("evaluate", str(out), "--truth", str(args.truth), "--json", *extra, cwd=work))
    pw = got["pairwise"]["verified_pairs"]
    return {"precision": round(pw["precision"], 4), "recall": round(pw["recall"], 4), "f1": round(pw["f1"], 4)}


def fixed_labels(work: Path, job: Path, n: int, truth: set[frozenset[str]] | dict[str, str], path: Path) -> None:
    """The n candidates nearest the threshold (n/2 each side), labelled: one fixed round."""
    with (work / "out" / "candidates" / "candidates.csv").open(encoding="utf-8", newline="") as fh:
        cands = list(csv.DictReader(fh))
    threshold = float(json.loads((work / "out" / "candidates" / "report.json").read_text())["threshold"]["value"])
    above = sorted((c for c in cands if float(c["score"]) >= threshold), key=lambda c: float(c["score"]))[: n // 2]
    below = sorted((c for c in cands if float(c["score"]) < threshold), key=lambda c: -float(c["score"]))[: n - len(above)]
    keys = list(cands[0])
    ls, li, rs, ri = (k for k in keys if k in ("left_source", "left_id", "right_source", "right_id"))
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        for c in above + below:
            w.writerow([c[ls], c[li], c[rs], c[ri], "1" if is_match(truth, c[li], c[ri]) else "0"])


def cell(got: dict[str, float] | None) -> str:
    if got is None:
        return "refused: labels of one kind only"
    return f"{got['precision']} / {got['recall']} / **{got['f1']}**"


def ceiling(results: dict[str, object]) -> dict[str, object]:
    """The ceiling (the best F1 measured, either arm, any N) and per arm the fewest labels that reach it
    (None: not within the largest N), and the fewest that reach the arm's own best."""
    arms = {arm: {n: (results[arm][str(n)] or {}).get("f1", 0.0) for n in SIZES} for arm in ("active", "fixed")}  # type: ignore[index]
    best = max(max(f.values()) for f in arms.values())
    out: dict[str, object] = {"f1": best}
    for arm, f1s in arms.items():
        out[arm] = {
            "labels_to_ceiling": next((n for n in SIZES if f1s[n] >= best), None),
            "best_f1": max(f1s.values()),
            "labels_to_own_best": next(n for n in SIZES if f1s[n] >= max(f1s.values())),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--job", default=str(ROOT / "configs" / "persons.yaml"))
    ap.add_argument("--truth", default=str(ROOT / "configs" / "data" / "persons" / "truth.csv"))
    ap.add_argument("--id-column", default="id")
    ap.add_argument("--cluster-column", default="entity")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "active-persons"))
    args = ap.parse_args()
    args.truth = Path(args.truth).resolve()
    truth = oracle(args.truth, args.id_column, args.cluster_column)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "configs", work / "configs")
        job = work / "configs" / Path(args.job).name
        if not job.exists():  # a job outside configs/ (a tuning sample): its sources' paths must be absolute
            shutil.copy(args.job, job)
        text = job.read_text(encoding="utf-8")
        job.write_text(re.sub(r"\n  format: csv\n", "\n  format: csv\n  candidates: true\n", text, count=1), encoding="utf-8")
        er("run", str(job), "--out", str(work / "out" / "candidates"), "-q", cwd=work)
        results: dict[str, object] = {"job": Path(args.job).name, "none": f1_with(work, job, None, args, "none"), "active": {}, "fixed": {}}
        labels = work / "active.csv"
        labelled = 0
        for n in SIZES:
            while labelled < n:
                er("review", str(work / "out" / "candidates"), "--count", "10", "--labels", str(labels), "--config", str(job), cwd=work)
                fill(labels, truth)
                labelled += 10
            results["active"][str(n)] = f1_with(work, job, labels, args, f"active{n}")  # type: ignore[index]
            fixed = work / f"fixed{n}.csv"
            fixed_labels(work, job, n, truth, fixed)
            results["fixed"][str(n)] = f1_with(work, job, fixed, args, f"fixed{n}")  # type: ignore[index]
            print(n, results["active"][str(n)], results["fixed"][str(n)], flush=True)  # type: ignore[index]
    results["ceiling"] = ceiling(results)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    lines = [
        f"# Active labelling on {results['job']} (held out; proposal shares tuned on er synth samples of seed 1)",
        "",
        f"No labels: F1 {results['none']['f1']}",  # type: ignore[index]
        "",
        "| labels | active rounds of 10: P / R / F1 | one fixed round: P / R / F1 |",
        "|---:|---|---|",
    ]
    for n in SIZES:
        a, f = results["active"][str(n)], results["fixed"][str(n)]  # type: ignore[index]
        lines.append(f"| {n} | {cell(a)} | {cell(f)} |")
    top: dict[str, Any] = results["ceiling"]  # type: ignore[assignment]
    lines += ["", f"Ceiling (best F1 measured, either arm): {top['f1']}", ""]
    for arm in ("active", "fixed"):
        reach = top[arm]["labels_to_ceiling"]
        reached = f"reaches the ceiling with {reach}" if reach is not None else f"does not reach the ceiling within {SIZES[-1]}"
        lines.append(f"- {arm}: {reached} labels; its best {top[arm]['best_f1']} first at {top[arm]['labels_to_own_best']} labels")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
