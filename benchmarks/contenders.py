"""Record-linkage contenders as whole processes: read the CSV files, link or dedupe, write the pairs. Nothing else.

    python benchmarks/contenders.py splink --dataset febrl --csv A=a.csv --csv B=b.csv --pairs out.csv
    python benchmarks/contenders.py splink --dataset febrl --csv febrl3=febrl3.csv --pairs out.csv   # dedupe
    python benchmarks/contenders.py recordlinkage --dataset customers --csv A=a.csv --csv B=b.csv --pairs out.csv

``--dataset febrl``: the Febrl columns (id ``rec_id``); ``customers``: the
columns of ``er synth customers`` (id ``id``). The set-ups are those of
``bench_customers.py`` (:func:`bench_customers.splink_predict`,
:func:`bench_customers.recordlinkage_link`): Splink on DuckDB as its Febrl4
example (``link_only`` with two files, ``dedupe_only`` with one, the same
blocking rules, comparisons and training), match probability >= 0.5 (``THRESHOLD``, as er's shipped jobs);
recordlinkage's Febrl4 example with ``ECMClassifier``. The pairs CSV has a
header and one pair per row (a link: first file's id, second file's id).
Seconds per step (inside the process, after the imports) go to stdout as
one JSON line; the benchmark times the process from outside.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench_customers import recordlinkage_link, splink_predict, write_pairs
from common import Clock

DATASETS = {"febrl": "febrl4", "customers": "synthetic"}


def _named_csv(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return name, Path(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tool", choices=["splink", "recordlinkage"])
    p.add_argument("--dataset", choices=sorted(DATASETS), required=True)
    p.add_argument(
        "--csv",
        type=_named_csv,
        action="append",
        required=True,
        metavar="NAME=PATH",
        help="an input file and its dataset name; once to dedupe, twice or more to link (splink; "
        "with three or more the pairs file has left_source,left_id,right_source,right_id)",
    )
    p.add_argument("--pairs", type=Path, required=True, help="output CSV of the predicted pairs")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--u-pairs", type=float, default=1e7, help="splink: estimate_u_using_random_sampling(max_pairs=...) (its docs recommend >= 1e7)"
    )
    a = p.parse_args(argv)
    paths = dict(a.csv)
    missing = [str(f) for f in paths.values() if not f.is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if len(paths) != len(a.csv):
        p.error("give one --csv (dedupe) or several with different names (link)")
    if a.tool == "recordlinkage" and len(paths) != 2:
        p.error("recordlinkage links two files")
    dataset = DATASETS[a.dataset]
    clock = Clock()
    if a.tool == "splink":
        pairs = splink_predict(paths, dataset, a.seed, a.u_pairs, clock)[3]
        head = {1: ["id_l", "id_r"], 2: ["a_id", "b_id"]}.get(len(paths), ["left_source", "left_id", "right_source", "right_id"])
    else:
        (a_csv, b_csv) = paths.values()
        pairs = recordlinkage_link(a_csv, b_csv, dataset, clock)[0]
        head = ["a_id", "b_id"]
    write_pairs(a.pairs, pairs, header=head)
    clock.mark("write")
    print(json.dumps({"tool": a.tool, "pairs": len(pairs), "stages": clock.stages, "seconds_inside": clock.total()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
