"""``er review OUT``: the pairs nearest the threshold, side by side, and a labels file to edit.

The pairs are report.json's ``review`` (the 10 candidates just at or above the threshold and the
10 just below, with their score's terms). The labels file (``--labels``, default ``labels.csv``)
has the columns ``left_source,left_id,right_source,right_id,score,side,match``; fill ``match``
with 1 or 0 and train from it: ``training: {labels: labels.csv}``. An existing file keeps its rows,
labels, extra columns and dialect (a spreadsheet's ``;`` and byte-order mark); pairs not in it yet are
added. The file is read and written by :mod:`er_framework.io.labels_file` (never over the job's own files,
an output of a run, a device or a file that is not a labels file; formula-like values escaped), and
written before anything is printed. Every printed value, id and name goes through
:func:`~er_framework.cli.common.terminal_text`.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from er_framework.cli import serve
from er_framework.cli.common import job_of_run, stderr, terminal_text
from er_framework.errors import InputError, Problem

if TYPE_CHECKING:
    from er_framework.io.labels_file import LabelsFile

__all__ = ["add_parser", "cmd_review", "differing_passages", "job_inputs", "merge_labels"]

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


def _read_labels(path: Path) -> LabelsFile:
    """The existing labels file ``path`` (read as CSV whatever its name, in the dialect it was saved in);
    InputError naming the file and line of what cannot be read, never quoting a file that is not one."""
    from er_framework.io.labels_file import read_labels_file  # the readers: not loaded by er --help

    try:
        return read_labels_file(path, fix="give another --labels file (er review writes a new one)", allow_empty=True)
    except InputError as exc:
        raise InputError(
            [
                Problem(
                    where=p.where,
                    path=p.path,
                    message=f"cannot read the labels file to extend it: {p.message}",
                    fix=p.fix if "--labels" in p.fix else f"{p.fix}; or give another --labels file",
                )
                for p in exc.problems
            ]
        ) from None


def merge_labels(path: Path, rows: list[dict[str, Any]], inputs: Sequence[Path] = ()) -> tuple[int, int]:
    """Write ``rows`` into the labels file ``path``, keeping the rows (labels, extra columns, separator) already
    there; atomically, never over one of ``inputs`` (the job's files), an output of a run, a device or a file
    that is not a labels file. Returns (rows added, rows in the file)."""
    from er_framework.io.labels_file import LABELS_HEADER, update_labels_file

    added = 0

    def extend(labels: LabelsFile) -> LabelsFile:
        nonlocal added
        header = labels.header
        for name in LABELS_HEADER:
            if name not in header:
                header.append(name)  # a file with only the columns training needs gets score and side
        width = len(header)
        labels.rows = [(r + [""] * width)[:width] for r in labels.rows]
        at = [header.index(c) for c in ("left_source", "left_id", "right_source", "right_id")]
        seen = {tuple(r[i] for i in at) for r in labels.rows}
        for r in rows:
            key = (str(r["left_source"]), str(r["left_id"]), str(r["right_source"]), str(r["right_id"]))
            if key in seen or (key[2], key[3], key[0], key[1]) in seen:
                continue
            seen.add(key)
            labels.rows.append([str(r.get(name, "")) for name in header])
            added += 1
        return labels

    written = update_labels_file(path, extend, inputs=inputs, read=_read_labels)
    return added, len(written.rows)


def job_inputs(job: Any, labels: Path, report: dict[str, Any] | None = None) -> list[Path]:
    """The files the job reads, which the labels file must not replace: its sources' files, its YAML, its
    training labels (unless they are the labels file: extending them is what er review is for) and the
    model file the run applied (report.json's model origin, when it names a file)."""
    found: list[Path] = []
    for i in range(len(job.spec.sources)):
        found += job.source_paths(i)
    if job.config_path is not None:
        found.append(Path(job.config_path))
    training = job.training_path()
    if training is not None and not _same(training, labels):
        found.append(training)
    origin = ((report or {}).get("model") or {}).get("origin")
    if isinstance(origin, str) and origin and Path(origin).is_file():
        found.append(Path(origin))
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def cmd_review(args: argparse.Namespace) -> int:
    """Write or extend the labels file, then print the borderline pairs with both records' fields (the file
    is written first: ``er review OUT | head`` still writes it)."""
    from er_framework.engine import stages
    from er_framework.engine.explain import check_databases_unchanged, check_files_unchanged, explanation

    if args.serve:  # the pairs and clusters in a browser
        return serve.cmd_serve(args, job_inputs, merge_labels)
    report, job = job_of_run(args.out_dir, args.config)
    # refused when a source changed: the files before reading, the database sources with what is read
    for note in check_files_unchanged(report, job, allow_changed=args.allow_changed):
        stderr(f"note: {note}")
    review = report.get("review") or {}
    entries = [("above", e) for e in review.get("above", [])] + [("below", e) for e in review.get("below", [])]
    if not entries:
        print(
            terminal_text(
                f"{args.out_dir}: no candidate pairs to review "
                "(report.json has no review section: run the job again with this version of er)"
            )
        )
        return 0
    wanted = {(e[side]["source"], e[side]["id"]) for _, e in entries for side in ("left", "right")}
    records, read_stats = stages.read(job)
    for note in check_databases_unchanged(report, job, read_stats, allow_changed=args.allow_changed):
        stderr(f"note: {note}")
    index = stages.record_rows(records, wanted)
    threshold = float(review.get("threshold", 0.0))
    described = dict(report.get("verifier") or {})
    rows = [
        {
            "left_source": e["left"]["source"],
            "left_id": e["left"]["id"],
            "right_source": e["right"]["source"],
            "right_id": e["right"]["id"],
            "score": f"{e['score']:.6f}",
            "side": side,
            "match": "",
        }
        for side, e in entries
    ]
    labels = Path(args.labels)
    added, total = merge_labels(labels, rows, inputs=job_inputs(job, labels, report))
    print(
        f"pairs nearest the threshold {threshold:g} ({len(review.get('above', []))} at or above, "
        f"{len(review.get('below', []))} below); fields as read"
    )
    for rank, (side, e) in enumerate(entries, 1):
        lk, rk = (e["left"]["source"], e["left"]["id"]), (e["right"]["source"], e["right"]["id"])
        print()
        print(terminal_text(f"#{rank}  {side:<5}  score {e['score']:.6f}   {lk[0]} {lk[1]}  |  {rk[0]} {rk[1]}"))
        a, b = index.get(lk), index.get(rk)
        if a is None or b is None:
            print("    (a record is no longer in the sources)")
        else:
            _print_fields(records, a, b)
        if e.get("terms") and a is not None and b is not None:
            ex = explanation(records, a, b, e["terms"], described, threshold)
            for line in str(ex).splitlines()[1:]:
                print(terminal_text("  " + line))
    print()
    print(
        terminal_text(
            f"wrote {args.labels}: {added} new pairs ({total} in the file). Fill the match column with 1 or 0, then "
            f"add training: {{labels: {args.labels}}} to the job (a path relative to the job file) and run it again"
        )
    )
    return 0


def _print_fields(records: Any, a: int, b: int) -> None:
    width = max([len(f) for f in records.fields] + [8])
    for name, col in records.fields.items():
        x, y = col[a], col[b]
        xs = "(missing)" if x is None else " ".join(str(x).split())
        ys = "(missing)" if y is None else " ".join(str(y).split())
        if len(xs) > LONG_VALUE or len(ys) > LONG_VALUE:
            print(terminal_text(f"    {name:<{width}}  {len(xs):,} and {len(ys):,} characters; where they differ:"))
            passages = differing_passages(xs, ys)
            for left, right in passages:
                print(terminal_text(f"    {'':<{width}}    left:  {left or '(nothing)'}"))
                print(terminal_text(f"    {'':<{width}}    right: {right or '(nothing)'}"))
            if not passages:
                print(f"    {'':<{width}}    (the same words)")
        else:
            mark = "=" if xs == ys else "≠"
            print(terminal_text(f"    {name:<{width}}  {_cut(xs, 40):<40} {mark} {_cut(ys, 40)}"))


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
    p.add_argument(
        "--allow-changed",
        action="store_true",
        help="review even when a source changed since the run (its fingerprint in report.json differs): the records "
        "are read as they are now, and may not be those the run scored",
    )
    p.add_argument("--serve", action="store_true", help="label the pairs and split clusters in a browser (a local server)")
    p.add_argument("--port", type=int, help="with --serve: the port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-open", action="store_true", help="with --serve: print the page's address, do not open a browser")
    p.set_defaults(func=cmd_review)
