"""``er review OUT``: the pairs nearest the threshold, side by side, and a labels file to edit.

The pairs are report.json's ``review`` (the 10 candidates just at or above the threshold and the
10 just below, with their score's terms). The labels file (``--labels``, default ``labels.csv``)
has the columns ``left_source,left_id,right_source,right_id,score,side,match``; fill ``match``
with 1 or 0 and train from it: ``training: {labels: labels.csv}``. An existing file keeps its rows
and labels; pairs not in it yet are added.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

from er_framework.cli.common import job_of_run
from er_framework.errors import InputError, Problem

__all__ = ["LABELS_HEADER", "add_parser", "cmd_review", "differing_passages", "merge_labels"]

LABELS_HEADER = ("left_source", "left_id", "right_source", "right_id", "score", "side", "match")
#: a value longer than this is shown by its differing passages
LONG_VALUE = 120


def differing_passages(a: str, b: str, limit: int = 3, width: int = 100) -> list[tuple[str, str]]:
    """Up to ``limit`` passages where two texts differ, word by word: ``(left part, right part)`` each cut to
    ``width`` characters ("" where a side has nothing there)."""
    wa, wb = a.split(), b.split()
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        left, right = " ".join(wa[i1:i2]), " ".join(wb[j1:j2])
        out.append((_cut(left, width), _cut(right, width)))
        if len(out) >= limit:
            break
    return out


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _read_labels(path: Path) -> list[dict[str, str]]:
    """The rows of an existing labels file (read as the CSV er review writes, whatever its name), each a dict
    of every column; InputError naming the file and line of what cannot be read."""
    from er_framework.io.table_file import FileRole, open_table  # the readers: not loaded by er --help

    # the messages start "cannot read the labels file to extend it", which names the file
    role = FileRole(
        what="labels file",
        path_fix="give another --labels file",
        dir_fix="give a --labels file",
        header_fix=f"write the header {','.join(LABELS_HEADER)}",
        hint="",
    )
    try:
        table = open_table(path, role, fmt="csv", allow_empty=True)
        columns, _ = table.read(table.header)
    except InputError as exc:
        raise InputError(
            [
                Problem(
                    where=p.where,
                    path=p.path,
                    message=f"cannot read the labels file to extend it: {p.message}",
                    fix=f"{p.fix}; or give another --labels file" if p.fix else "give another --labels file",
                )
                for p in exc.problems
            ]
        ) from None
    return [dict(zip(table.header, row)) for row in zip(*(columns[c] for c in table.header))]


def merge_labels(path: Path, rows: list[dict[str, Any]]) -> tuple[int, int]:
    """Write ``rows`` into the labels file ``path``, keeping the rows (and labels) already there; atomically.
    Returns (rows added, rows in the file)."""
    kept: list[dict[str, str]] = []
    if path.is_file():
        kept = _read_labels(path)
    seen = {(r.get("left_source"), r.get("left_id"), r.get("right_source"), r.get("right_id")) for r in kept}
    added = 0
    for r in rows:
        key = (r["left_source"], r["left_id"], r["right_source"], r["right_id"])
        rev = (r["right_source"], r["right_id"], r["left_source"], r["left_id"])
        if key in seen or rev in seen:
            continue
        seen.add(key)
        kept.append({k: str(r.get(k, "")) for k in LABELS_HEADER})
        added += 1
    header = list(LABELS_HEADER) + [k for k in (kept[0] if kept else {}) if k not in LABELS_HEADER]
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(kept)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".labels-", dir=path.parent)
    except OSError as exc:
        raise InputError(
            Problem(
                where=str(path),
                message=f"cannot write the labels file: {exc.strerror or exc}",
                fix="give a --labels path in a folder you can write",
            )
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(buf.getvalue())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return added, len(kept)


def cmd_review(args: argparse.Namespace) -> int:
    """Print the borderline pairs with both records' fields; write or extend the labels file."""
    from er_framework.engine import stages
    from er_framework.engine.explain import explanation

    report, job = job_of_run(args.out_dir, args.config)
    review = report.get("review") or {}
    entries = [("above", e) for e in review.get("above", [])] + [("below", e) for e in review.get("below", [])]
    if not entries:
        print(
            f"{args.out_dir}: no candidate pairs to review (report.json has no review section: run the job again with this version of er)"
        )
        return 0
    wanted = {(e[side]["source"], e[side]["id"]) for _, e in entries for side in ("left", "right")}
    records, _ = stages.read(job)
    index = stages.record_rows(records, wanted)
    threshold = float(review.get("threshold", 0.0))
    described = dict(report.get("verifier") or {})
    rows: list[dict[str, Any]] = []
    print(
        f"pairs nearest the threshold {threshold:g} ({len(review.get('above', []))} at or above, "
        f"{len(review.get('below', []))} below); fields as read"
    )
    for rank, (side, e) in enumerate(entries, 1):
        lk, rk = (e["left"]["source"], e["left"]["id"]), (e["right"]["source"], e["right"]["id"])
        print()
        print(f"#{rank}  {side:<5}  score {e['score']:.6f}   {lk[0]} {lk[1]}  |  {rk[0]} {rk[1]}")
        a, b = index.get(lk), index.get(rk)
        if a is None or b is None:
            print("    (a record is no longer in the sources)")
        else:
            _print_fields(records, a, b)
        if e.get("terms") and a is not None and b is not None:
            ex = explanation(records, a, b, e["terms"], described, threshold)
            for line in str(ex).splitlines()[1:]:
                print("  " + line)
        rows.append(
            {
                "left_source": lk[0],
                "left_id": lk[1],
                "right_source": rk[0],
                "right_id": rk[1],
                "score": f"{e['score']:.6f}",
                "side": side,
                "match": "",
            }
        )
    added, total = merge_labels(Path(args.labels), rows)
    print()
    print(
        f"wrote {args.labels}: {added} new pairs ({total} in the file). Fill the match column with 1 or 0, then "
        f"add training: {{labels: {args.labels}}} to the job (a path relative to the job file) and run it again"
    )
    return 0


def _print_fields(records: Any, a: int, b: int) -> None:
    width = max([len(f) for f in records.fields] + [8])
    for name, col in records.fields.items():
        x, y = col[a], col[b]
        xs = "(missing)" if x is None else " ".join(str(x).split())
        ys = "(missing)" if y is None else " ".join(str(y).split())
        if len(xs) > LONG_VALUE or len(ys) > LONG_VALUE:
            print(f"    {name:<{width}}  {len(xs):,} and {len(ys):,} characters; where they differ:")
            passages = differing_passages(xs, ys)
            for left, right in passages:
                print(f"    {'':<{width}}    left:  {left or '(nothing)'}")
                print(f"    {'':<{width}}    right: {right or '(nothing)'}")
            if not passages:
                print(f"    {'':<{width}}    (the same words)")
        else:
            mark = "=" if xs == ys else "≠"
            print(f"    {name:<{width}}  {_cut(xs, 40):<40} {mark} {_cut(ys, 40)}")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "review",
        help="the pairs nearest the threshold, and a labels file",
        description="Print the candidate pairs just at or above and just below the threshold of a finished run, with "
        "both records' fields and the terms of their scores, and write (or extend) a labels file "
        "(left_source,left_id,right_source,right_id,score,side,match) whose match column you fill with 1 or 0; "
        "training: {labels: FILE} in the job then trains the verifier from it.",
    )
    p.add_argument("out_dir", help="a folder written by er run")
    p.add_argument("--labels", default="labels.csv", help="labels file to write or extend (default labels.csv)")
    p.add_argument("--config", help="the job file, when it moved since the run")
    p.set_defaults(func=cmd_review)
