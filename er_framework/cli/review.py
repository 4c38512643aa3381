"""``er review OUT``: a round of active labelling, the proposed pairs side by side, and a labels file to edit.

Each round (:func:`er_framework.engine.active.propose`) refits the job's model from every label of the
labels file, proposes ``--count`` new pairs (default 20: the pairs the model is least sure of, pairs the
blockers, the model and the clusterer disagree on, and near-misses no blocker produced), adds them to the
file and prints them with both records' fields and the terms of their scores, after how the refit moved
the weights and the model's expected F1. The labels file (``--labels``, relative to the current folder;
default the job's ``training: {labels: ...}`` file, else ``labels.csv`` beside the job file:
:func:`~er_framework.config.resolve.job_labels_path`, the rule ``training:`` follows too) has the columns
``left_source,left_id,right_source,right_id,score,side,reason,round,match``; fill ``match`` with 1 or 0
and run ``er review`` again, or train from it: ``training: {labels: FILE}``. An existing file keeps its
rows, labels, extra columns and dialect (a spreadsheet's ``;`` and byte-order mark); pairs not in it yet
are added. The file is read and written by :mod:`er_framework.io.labels_file` (never over the job's own
files, an output of a run, a device or a file that is not a labels file; formula-like values escaped),
and written before anything is printed. Every printed value, id and name goes through
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

__all__ = ["add_parser", "cmd_review", "count_arg", "differing_passages", "job_inputs", "merge_labels"]

#: a value longer than this is shown by its differing passages
LONG_VALUE = 120
#: the weights printed after a refit (the largest changes)
WEIGHTS_SHOWN = 8


def count_arg(text: str) -> int:
    """``--count``: a whole number of pairs, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of pairs (e.g. --count 20)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} pairs: give at least 1 (e.g. --count 20)")
    return value


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
        if not labels.rows and rows and header == list(LABELS_HEADER):
            header[:] = list(rows[0])  # a new file: the columns in the rows' order (match last)
        for name in [*LABELS_HEADER, *(k for r in rows for k in r)]:
            if name not in header:
                header.append(name)  # a file with only the columns training needs gets score, side, reason, round
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
    """One round of active labelling: the model refitted from every label so far, new pairs proposed and
    added to the labels file, then printed with both records' fields (the file is written first:
    ``er review OUT | head`` still writes it) and how the refit moved the weights and the expected F1."""
    from er_framework.config.resolve import job_labels_path
    from er_framework.engine.active import propose
    from er_framework.io.labels_file import LABELS_KIND
    from er_framework.io.safe_write import check_target

    if args.serve:  # the pairs and clusters in a browser
        return serve.cmd_serve(args, job_inputs, merge_labels)
    if args.port is not None or args.no_open:
        flag = "--port" if args.port is not None else "--no-open"
        raise InputError([Problem(where=flag, message=f"{flag} is an option of the browser page", fix=f"add --serve, or leave out {flag}")])
    report, job = job_of_run(args.out_dir, args.config)
    where = job_labels_path(job, args.labels)
    inputs = job_inputs(job, where.path, report)
    # refused before anything is read: an input of the job, an output of a run, a file that is not labels
    check_target(where.path, what="labels file", inputs=inputs, kind=LABELS_KIND)
    if where.path.is_file():
        _read_labels(where.path)
    found = propose(job, args.out_dir, where.path, args.count, report=report, allow_changed=args.allow_changed)
    for note in found.notes:
        stderr(f"note: {note}")
    shown = args.labels if args.labels is not None else _shown(where.path)
    added, total = merge_labels(where.path, found.label_rows(), inputs=inputs)
    _print_refit(found, shown)
    if not found.rows:
        print(terminal_text(f"{args.out_dir}: no pair left to propose (every candidate and near-miss is in {shown})"))
    for rank, p in enumerate(found.rows, 1):
        _print_proposal(found, rank, p)
    print()
    trains = job.training_path() is not None and _same(job.training_path() or where.path, where.path)
    hint = (
        "the job trains from it already; run it again to apply the labels"
        if trains
        else f"to train the job from them add training: {{labels: {where.in_job}}} to the job (a path relative to the job file)"
    )
    print(
        terminal_text(
            f"wrote {shown}: {added} new pairs ({total} in the file). Fill the match column with 1 or 0, then run "
            f"er review again for the next round; {hint}"
        )
    )
    return 0


def _shown(path: Path) -> str:
    """``path`` as printed: relative to the current folder when it lies below it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


#: what the verifier needs before it refits, as the round's header says it (by whether one kind is enough)
_KINDS = {True: "", False: " of both kinds"}


def _print_refit(found: Any, labels: str) -> None:
    """The round's header: what the model was refitted from, how its weights and expected F1 moved."""
    after, before = found.after, found.before
    kinds = ", ".join(f"{sum(p.reason == k for p in found.rows)} {k}" for k in ("uncertain", "disagreement", "near-miss"))
    if after.matches + after.non_matches:
        print(
            terminal_text(
                f"round {found.round}: the model refitted from {after.matches + after.non_matches} labelled pairs "
                f"({after.matches} matches, {after.non_matches} non-matches) of {labels}"
            )
        )
        if before.matches + before.non_matches:
            print(f"    before: the {before.matches + before.non_matches} pairs labelled before the last round")
        else:
            print(f"    before: the unsupervised fit (no labels{_KINDS[found.one_kind]} before the last round)")
    elif found.trainable:
        print(terminal_text(f"round {found.round}: no labels{_KINDS[found.one_kind]} in {labels} yet; the model is the unsupervised fit"))
    else:
        print(f"round {found.round}: the verifier does not learn from labels; pairs are proposed by its scores")
    _print_weights(found.weights)
    _print_expected(found)
    _print_missed(found.missed)
    print()
    print(f"{len(found.rows)} new pairs ({kinds}); threshold {found.threshold:g}; fields as read")


def _print_missed(missed: Any) -> None:
    """What the near-miss probe says of blocking: the pairs no blocker produced that the model matches."""
    if missed is None or not missed.probed:
        return
    if not missed.matched:
        print(f"    blocking: the model matches none of the {missed.probed:,} pairs sharing rare values that no blocker produced")
        return
    print(
        f"    blocking may lose pairs: the model matches {missed.matched:,} of the {missed.probed:,} pairs sharing rare values "
        "that no blocker produced; widen the blockers if they are matches"
    )
    for p in missed.examples:
        print(terminal_text(f"      {p.left_source} {p.left_id}  |  {p.right_source} {p.right_id}  score {p.score:.6f}"))


def _print_weights(weights: list[Any]) -> None:
    moved = [w for w in weights if abs(w.change) >= 0.005][:WEIGHTS_SHOWN]
    if not weights:
        return
    if not moved:
        print("    weights: unchanged")
        return
    print(f"    weights that moved most (bits, before -> after; {len(weights)} weights):")
    width = max(len(w.field) for w in moved)
    for w in moved:
        print(terminal_text(f"      {w.field:<{width}}  {w.level:<10} {w.before:+7.2f} -> {w.after:+7.2f}  ({w.change:+.2f})"))


def _print_expected(found: Any) -> None:
    before, after = found.before.expected, found.after.expected
    if after is None or before is None:
        print("    expected F1: not estimated (the verifier's scores are not match probabilities)")
        return
    print(
        f"    expected F1 {before.f1:.3f} -> {after.f1:.3f} (precision {before.precision:.3f} -> {after.precision:.3f}, "
        f"recall {before.recall:.3f} -> {after.recall:.3f})"
    )
    print(
        f"      the model's own estimate over the {found.candidates:,} candidates: their scores taken as match "
        "probabilities (matches no blocker produced are not counted)"
    )


def _print_proposal(found: Any, rank: int, p: Any) -> None:
    side = "above" if p.score >= found.threshold else "below"
    print()
    print(
        terminal_text(
            f"#{rank}  {p.reason:<12} {side:<5}  score {p.score:.6f}   {p.left_source} {p.left_id}  |  {p.right_source} {p.right_id}"
        )
    )
    print(terminal_text(f"    why: {p.detail}"))
    _print_fields(found.records, p.left, p.right)
    if p.terms:
        from er_framework.engine.explain import explanation

        ex = explanation(found.records, p.left, p.right, p.terms, found.described, found.threshold)
        for line in str(ex).splitlines()[1:]:
            print(terminal_text("  " + line))


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
        help="active labelling: new pairs to label each round",
        description="Refit the model of a finished run from every label of the labels file, propose new pairs to "
        "label (the pairs the model is least sure of, pairs the blockers, the model and the clusterer disagree "
        "on, near-misses no blocker produced), add them to the labels file "
        "(left_source,left_id,right_source,right_id,score,side,reason,round,match) and print them with both records' "
        "fields and the terms of their scores. Fill the match column with 1 or 0 and run er review again for the "
        "next round; training: {labels: FILE} in the job trains the verifier from the file.",
    )
    p.add_argument("out_dir", help="a folder written by er run")
    p.add_argument(
        "--labels",
        help="labels file to write or extend, relative to the current folder (default: the job's training: labels "
        "file, else labels.csv beside the job file)",
    )
    p.add_argument("--count", type=count_arg, default=20, metavar="N", help="pairs to propose this round (default 20)")
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
