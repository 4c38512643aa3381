"""What a reviewer waits for (issue 32): whole processes of the commands around a decision, on two code trees.

Each command runs as a whole process through ``benchmarks/measure.py`` (wall time and peak RSS from outside,
interpreter start-up included), on ``configs/febrl4.yaml`` as shipped (10,000 records):

* ``er run`` (report.html included), ``er report`` (the page drawn again from the folder);
* ``er review OUT --count 20`` round 1, the labels filled by the truth, then round 2 (a refit from the labels);
* ``er --version`` (start-up only);

and the size of report.html and of ``repr(result)`` of ``er_framework.run`` in a notebook. ``--base DIR`` runs
the same commands on another checkout (e.g. a worktree of the previous landing) for a before/after in one run;
a command the older tree does not have is recorded as absent.

    python benchmarks/bench_review.py [--base /path/to/old/checkout] [--repeat 3] [--out benchmarks/results/review]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import machine_info

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MEASURE = HERE / "measure.py"
TRUTH = ROOT / "configs" / "data" / "febrl" / "febrl4_truth.csv"


def measured(tree: Path, work: Path, args: list[str], repeat: int) -> dict[str, Any] | None:
    """Median wall seconds and the largest peak RSS of ``python -m er_framework ARGS`` run from ``tree``'s code."""
    out = work / "measure.json"
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, str(MEASURE), "--out", str(out), "--repeat", str(repeat), "--cwd", str(work)]
    cmd += ["--stdout", str(work / "stdout.txt"), "--stderr", str(work / "stderr.txt"), "--", sys.executable, "-m", "er_framework", *args]
    subprocess.run(cmd, env=env, check=True)
    runs = json.loads(out.read_text(encoding="utf-8"))["runs"]
    if any(r.get("exit_code", 0) != 0 for r in runs):
        return None
    return {
        "wall_s": round(statistics.median(r["wall_s"] for r in runs), 3),
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
    }


def fill_labels(path: Path) -> int:
    """The labels file's empty match cells filled from the Febrl4 truth (ids rec-N-org / rec-N-dup-0)."""
    with TRUTH.open(encoding="utf-8", newline="") as fh:
        truth = {frozenset((r[0], r[1])) for r in list(csv.reader(fh))[1:]}
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        if r["match"] == "":
            r["match"] = "1" if frozenset((r["left_id"], r["right_id"])) in truth else "0"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def repr_size(tree: Path, work: Path) -> int:
    code = "import er_framework as er; print(len(repr(er.run('configs/febrl4.yaml', out=None))))"
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=False)
    return int(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else -1


def one_tree(tree: Path, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        job = str(tree / "configs" / "febrl4.yaml")
        out, labels = str(work / "febrl4"), str(work / "labels.csv")
        got: dict[str, Any] = {"tree": str(tree)}
        got["er --version"] = measured(tree, work, ["--version"], repeat)
        got["er run febrl4"] = measured(tree, work, ["run", job, "--out", out, "--force", "-q"], repeat)
        got["report.html KB"] = round((work / "febrl4" / "report.html").stat().st_size / 1024, 1)
        got["er report"] = measured(tree, work, ["report", out], repeat)
        for round_ in (1, 2):
            done = measured(tree, work, ["review", out, "--count", "20", "--labels", labels], 1)
            if done is None:  # an older er review: no --count, the same 20 pairs each time
                done = measured(tree, work, ["review", out, "--labels", labels], 1)
            got[f"er review round {round_}"] = done
            got[f"labels after round {round_}"] = fill_labels(Path(labels))
        got["repr(result) characters"] = repr_size(tree, work)
        return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", help="another checkout to measure the same way (before/after)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results" / "review"))
    args = ap.parse_args()
    trees = ([Path(args.base).resolve()] if args.base else []) + [ROOT]
    results = {"machine": machine_info(("er-framework", "numpy")), "runs": [one_tree(t, args.repeat) for t in trees]}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    keys = [k for k in results["runs"][-1] if k != "tree"]
    lines = ["| measure | " + " | ".join(r["tree"] for r in results["runs"]) + " |", "|---" * (1 + len(trees)) + "|"]
    for k in keys:
        cells = []
        for r in results["runs"]:
            v = r.get(k)
            cells.append("absent" if v is None else (f"{v['wall_s']} s, {v['peak_rss_mb']} MB" if isinstance(v, dict) else f"{v:,}"))
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
