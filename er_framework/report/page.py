"""A visual report of a finished job: one self-contained HTML page.

    er report OUT_DIR        -> OUT_DIR/report.html

The page is built from the outputs of ``er run`` (``report.json``, the pairs
and clusters tables, CSV or Parquet) and, for example records, from the job's
sources, re-read through the job file named in ``report.json``; ``er run``
draws it from the run's results in memory (:class:`RunData`). It is one
file: the charts are inline SVG written directly (:mod:`er_framework.report.charts`,
no plotting library), each drawn from aggregates (a histogram from its
counts, cluster sizes from the count per size), so the page's size and the
time to draw it do not grow with the records or pairs; the style sheet is
inline, there is no script and no reference to anything outside the file, so
it opens from disk without a server. Every text taken from the data or the
report is HTML-escaped.

What it shows: the job (name, mode, config, seed, config hash, versions, run
date), summary counts, the LSH S-curve of the chosen (b, r) with the measured
candidate rate per similarity bin (``report.json`` ``diagnostics.s_curve``)
when the run recorded it, the score histogram of the written pairs, the
cluster-size distribution, the largest clusters with example records, the
stages with seconds and peak memory, and the blocker and component details.
Each section's body is drawn by :mod:`er_framework.report.sections`, the
plots by :mod:`er_framework.report.plots`; this module gathers the run's
data (the outputs, or :class:`RunData`) and puts the page together.
"""

from __future__ import annotations

import heapq
import json
from collections import defaultdict
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.config.resolve import Job, parse_job
from er_framework.data import Pairs, Records
from er_framework.errors import ErError, InputError, Problem
from er_framework.io.database_read import read_database
from er_framework.io.html import extract_text
from er_framework.io.output_read import find_table, read_clusters_csv, read_pairs_csv
from er_framework.io.outputs import find_job_file, publish, recover
from er_framework.io.report_json import check_report
from er_framework.io.source_files import merge_files, read_source
from er_framework.report.learned import training_section
from er_framework.report.plots import size_counts
from er_framework.report.review import (
    REVIEW_CSS,
    Values,
    match_weights,
    review_pairs,
    review_records,
    review_rows,
    waterfalls,
)
from er_framework.report.review import esc as _e
from er_framework.report.sections import (
    PAGE_CSS,
    ClusterView,
    Fetched,
    WrittenScores,
    all_scores_section,
    blocking_section,
    chains_section,
    cluster_sections,
    components_section,
    guarded,
    job_section,
    normalize_section,
    pruning_section,
    scores_section,
    section_html,
    stages_section,
    summary_section,
    threshold_section,
    warnings_section,
)
from er_framework.report.threshold_chart import threshold_curve_section

__all__ = [
    "RunData",
    "RunSummary",
    "TOP_CLUSTERS",
    "largest_clusters",
    "render_report",
    "review_records",
    "values_from_run",
    "write_report",
]

#: largest multi-record clusters shown with example records
TOP_CLUSTERS = 5


# --------------------------------------------------------------------------
# reading the outputs
# --------------------------------------------------------------------------


def _load_report(out: Path) -> dict[str, Any]:
    path = out / "report.json"
    fix = "run `er run CONFIG --out DIR` first, then `er report DIR` on that folder"
    if not out.is_dir():
        raise InputError(Problem(where=str(out), message="no such output folder", fix=fix))
    if not path.is_file():
        raise InputError(Problem(where=str(path), message=f"no report.json in {str(out)!r}", fix=fix))
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(Problem(where=str(path), message=f"cannot read report.json: {exc}", fix=fix + " (it rewrites the file)")) from None
    # not an object, or a key of the wrong kind: "… is not a report er wrote" (check_report);
    # the sections the page draws as a note when their content is malformed: only their kind is checked
    return check_report(report, path, shallow=("scores", "review.above[]", "review.below[]", "verifier.per_field[]", "threshold_curve"))


# --------------------------------------------------------------------------
# example records
# --------------------------------------------------------------------------


def _html_title(page: str | None) -> str | None:
    """The ``<title>`` (else the first ``<h1>``) of an HTML page, or None."""
    if not page:
        return None
    try:
        from selectolax.lexbor import LexborHTMLParser

        tree = LexborHTMLParser(page)
        for selector in ("title", "h1"):
            node = tree.css_first(selector)
            if node is not None:
                text = " ".join((node.text() or "").split())
                if text:
                    return text
    except Exception:  # noqa: BLE001 - a title is a nicety: never fail the report for it
        return None
    return None


def _read_source(job: Job, i: int, path: Path) -> Records:
    """Source ``i`` of ``job`` read again (its files, or its database query or table)."""
    src = job.spec.sources[i]
    if src.database is not None:
        opts = {k: v for k, v in src.read_options().items() if k not in ("follow_symlinks", "dialect")}
        return read_database(
            src.database, job.base_dir, query=src.query, table=src.table, batch_rows=src.batch_rows, where=f"{path}: sources[{i}]", **opts
        )[0]
    files = [read_source(f, where=f"{path}: sources[{i}]", **src.read_options()) for f in job.source_inputs(i)]
    return files[0] if len(files) == 1 else merge_files(files, f"{path}: sources[{i}]")


def _example_records(report: dict[str, Any], out: Path, config_path: str | Path | None, wanted: set[tuple[str, str]]) -> Fetched:
    """The values ``(source, id) -> {column: text or None}`` of the wanted records (HTML columns as their
    page title and visible text), re-read from the job's sources; the column names, and a problem (or None)."""
    if not wanted:
        return {}, [], None
    path, tried = find_job_file(report, out, config_path)
    if path is None:
        where = ", ".join(str(p) for p in tried) or "(report.json names no config)"
        return (
            {},
            [],
            (
                f"the job file was not found (looked at {where}), so the example records cannot be "
                "shown; run er report from the folder the job was run in, or pass the job file "
                "(er report DIR --config JOB.yaml)"
            ),
        )
    try:
        job = parse_job(path)
        note = None
        if report.get("config_hash") and job.config_hash() != report.get("config_hash"):
            note = (
                f"the config hash of {path} now differs from report.json's: the job file (or the "
                "framework) changed since the run; the records below are read with the current job file"
            )
        found: Values = {}
        field_names: list[str] = []
        for i, src in enumerate(job.spec.sources):
            ids_wanted = {rid for s, rid in wanted if s == src.name}
            if not ids_wanted:
                continue
            recs = _read_source(job, i, path)
            rows = [j for j, rid in enumerate(recs.ids) if rid in ids_wanted]
            html_cols = set((src.html.fields or src.fields) if src.html is not None else [])
            for col in src.fields:
                values = [recs.fields[col][j] for j in rows]
                columns: list[tuple[str, list[str | None]]] = []
                if col in html_cols:
                    titles = [_html_title(v) for v in values]
                    if any(titles):
                        columns.append((f"{col}: page title", titles))
                    html = src.html
                    assert html is not None  # (the column is an HTML column of this source)
                    texts, _ = extract_text(values, boilerplate=html.boilerplate, language=html.language)
                    columns.append((f"{col} (visible text)", texts))
                else:
                    columns.append((col, values))
                for label, vals in columns:
                    if label not in field_names:
                        field_names.append(label)
                    for j, value in zip(rows, vals):
                        found.setdefault((src.name, recs.ids[j]), {})[label] = value
        return found, field_names, note
    except ErError as exc:
        return {}, [], f"the sources could not be read again, so no example records are shown: {exc}"
    except Exception as exc:  # noqa: BLE001 - the report must not fail because a source moved or broke
        return {}, [], (f"the sources could not be read again, so no example records are shown: {type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------
# the clusters shown
# --------------------------------------------------------------------------


def _view_from_files(
    members: dict[str, list[tuple[str, str]]],
    pairs: list[tuple[str, str, str, str, float]] | None,
    top: int,
) -> ClusterView:
    """The view of a finished run's output files (``er report``)."""
    sizes = np.array([len(m) for m in members.values()], dtype=np.int64)

    def key(item: tuple[str, list[tuple[str, str]]]) -> tuple[int, int, str]:
        cid = item[0]
        return (-len(item[1]), int(cid) if cid.lstrip("-").isdigit() else 0, cid)

    # what sorting every cluster by key would give, without the sort (heapq.nsmallest: the same order, ties too)
    largest = heapq.nsmallest(top, (item for item in members.items() if len(item[1]) > 1), key=key)
    cluster_of = {rec: cid for cid, m in largest for rec in m}
    inside: dict[str, list[float]] = defaultdict(list)
    for ls, li, rs, ri, score in pairs or []:
        a, b = cluster_of.get((ls, li)), cluster_of.get((rs, ri))
        if a is not None and a == b:
            inside[a].append(score)
    return ClusterView(*size_counts(sizes), largest, inside)


@dataclass
class RunData:
    """A run's results in memory (``er run``): the report is drawn from these
    instead of reading the outputs and the sources back. ``records`` hold the
    values as read (before any ``normalize:`` step); ``labels`` are the
    canonical cluster ids written to the clusters table."""

    records: Records
    pairs: Pairs
    labels: npt.NDArray[np.int64]


@dataclass
class RunSummary:
    """A run's results summarized where they were computed (the Dask executor's workers): the cluster view,
    the values of the records report.html shows, and the written pairs' score quartiles; the page is drawn
    from these and report.json without reading the outputs or the sources back."""

    view: ClusterView
    fetched: Fetched
    written: WrittenScores | None


def largest_clusters(sizes: npt.NDArray[np.int64], top: int) -> list[int]:
    """The ids of the ``top`` largest clusters of more than one record, largest first, ties by smaller id:
    what sorting every cluster by (−size, id) would give, in linear time (only the few chosen are sorted)."""
    n = len(sizes)
    if top <= 0 or n == 0:
        return []
    if n > top:
        kth = np.partition(sizes, n - top)[n - top]  # the top-th largest size
        above = np.flatnonzero(sizes > kth)
        ties = np.flatnonzero(sizes == kth)[: top - len(above)]
        pool = np.concatenate([above, ties])
    else:
        pool = np.arange(n)
    order = pool[np.lexsort((pool, -sizes[pool]))]
    return [int(c) for c in order[:top] if sizes[c] > 1]


def _view_from_run(run: RunData, top: int) -> ClusterView:
    """The same view from memory: numpy over the labels, no per-record Python objects."""
    labels = run.labels
    sizes = np.bincount(labels) if len(labels) else np.zeros(0, dtype=np.int64)
    chosen = largest_clusters(sizes, top)
    recs = run.records
    names = recs.source_names
    largest = []
    where: dict[tuple[str, str], int] = {}
    for c in chosen:
        rows = np.flatnonzero(labels == c).tolist()
        members = [(names[recs.source[i]], recs.ids[i]) for i in rows]
        where.update(zip(members, rows))
        largest.append((str(c), members))
    inside: dict[str, list[float]] = defaultdict(list)
    if chosen and len(run.pairs):
        lab_l, lab_r = labels[run.pairs.left], labels[run.pairs.right]
        score = run.pairs.score if run.pairs.score is not None else np.ones(len(run.pairs))
        for c in chosen:
            inside[str(c)] = score[(lab_l == c) & (lab_r == c)].tolist()
    return ClusterView(*size_counts(sizes), largest, inside, where)


def values_from_run(run: RunData, wanted: set[tuple[str, str]], hints: dict[tuple[str, str], int] | None = None) -> Fetched:
    """The values of the wanted records from the records as read. A record is taken at its hinted row
    (``hints``: ``(source, id)`` -> position, checked: the record there must have that source and id); the
    others are looked for in one pass over the ids in C (``map`` of the wanted ids' set membership,
    ``compress``) — ~0.1 s for 2 M records, which the hints of a run's page avoid."""
    recs = run.records
    fields = list(recs.fields)
    if not wanted:
        return {}, fields, None
    names = recs.source_names
    found: Values = {}

    def take(i: int) -> None:
        rec = (names[recs.source[i]], recs.ids[i])
        if rec in wanted:
            found[rec] = {f: recs.fields[f][i] for f in fields}

    n = len(recs.ids)
    for key, i in (hints or {}).items():
        if key in wanted and 0 <= i < n and recs.ids[i] == key[1] and names[recs.source[i]] == key[0]:
            take(i)
    rest = {rid for key in wanted if key not in found for rid in (key[1],)}
    if rest:
        for i in compress(range(n), map(rest.__contains__, recs.ids)):
            take(i)
    return found, fields, None


def _cluster_examples(view: ClusterView | None, max_examples: int) -> set[tuple[str, str]]:
    if view is None:
        return set()
    return {rec for _, m in view.largest for rec in m[:max_examples]}


# --------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------


def _from_files(out: Path, notes: list[str]) -> tuple[np.ndarray | None, ClusterView | None]:
    """The written pairs' scores and the cluster view read back from a finished run's tables (``er report``);
    a table that cannot be read is a note on the page."""
    pairs_file = find_table(out, "pairs")
    pairs: list[tuple[str, str, str, str, float]] | None = None
    scores: np.ndarray | None = None
    if pairs_file is not None:
        try:
            pairs = read_pairs_csv(pairs_file)
            scores = np.array([p[4] for p in pairs], dtype=np.float64)
        except ErError as exc:
            notes.append(f"{pairs_file.name} could not be read: {exc}")
    clusters_file = find_table(out, "clusters")
    if clusters_file is None:
        return scores, None
    members: dict[str, list[tuple[str, str]]] = {}
    try:
        for source, rid, cid in read_clusters_csv(clusters_file):
            members.setdefault(cid, []).append((source, rid))
    except ErError as exc:
        notes.append(f"{clusters_file.name} could not be read: {exc}")
        return scores, None
    return scores, _view_from_files(members, pairs, TOP_CLUSTERS)


def _scores_and_view(
    out: Path, run: RunData | None, summary: RunSummary | None, notes: list[str]
) -> tuple[np.ndarray | WrittenScores | None, ClusterView | None]:
    """The written pairs' scores and the cluster view: from a run's summary, its data in memory, or its files."""
    if summary is not None:
        return summary.written, summary.view
    if run is not None:
        return (run.pairs.score if run.pairs.score is not None else np.ones(len(run.pairs))), _view_from_run(run, TOP_CLUSTERS)
    return _from_files(out, notes)


def render_report(
    out_dir: str | Path,
    *,
    config_path: str | Path | None = None,
    max_examples: int = 5,
    run: RunData | None = None,
    shown_dir: str | Path | None = None,
    threshold_curve: dict[str, Any] | None = None,
    summary: RunSummary | None = None,
) -> str:
    """The report page of ``out_dir`` as HTML text (see :func:`write_report`); ``shown_dir`` is the folder the
    page names (default ``out_dir``; a run draws the page in its stage before the outputs move in)."""
    out = Path(out_dir)
    report = _load_report(out)
    if threshold_curve is not None:
        report["threshold_curve"] = threshold_curve
    notes: list[str] = []

    pairs_file = find_table(out, "pairs")
    scores, view = _scores_and_view(out, run, summary, notes)

    name = report.get("job") or out.name
    wanted = _cluster_examples(view, max_examples) | review_records(report)
    if summary is not None:
        fetched = summary.fetched
    elif run is not None:
        fetched = values_from_run(run, wanted, {**review_rows(report), **(view.rows if view is not None else {})})
    else:
        fetched = _example_records(report, out, config_path, wanted)
    size_body, examples_body = cluster_sections(report, view, max_examples, fetched)
    all_scores = report.get("scores")
    has_review = isinstance(report.get("review"), dict)
    weights = guarded("Match weights per field", lambda: match_weights(report))
    trained = guarded("How the weights were learned", lambda: training_section(report))
    falls = guarded("Waterfalls", lambda: waterfalls(report, fetched[0], fetched[1])) if has_review else None
    curve = guarded("Choosing the threshold", lambda: threshold_curve_section(report.get("threshold_curve")))
    sections = [
        ("summary", "Summary", summary_section(report)),
        *(
            [("threshold", "Threshold chosen from the data", threshold_section(report))]
            if (report.get("threshold") or {}).get("auto")
            else []
        ),
        (
            ("scores", "Every candidate's score", guarded("Every candidate's score", lambda: all_scores_section(all_scores, scores)) or "")
            if isinstance(all_scores, dict)
            else (
                "scores",
                "Verified pair scores",
                scores_section(report, scores if not isinstance(scores, WrittenScores) else None, pairs_file),
            )
        ),
        *([("threshold-curve", "Choosing the threshold", curve)] if curve is not None else []),
        *(
            [
                (
                    "review",
                    "Pairs nearest the threshold",
                    guarded("Pairs nearest the threshold", lambda: review_pairs(report, *fetched)) or "",
                )
            ]
            if has_review
            else []
        ),
        *([("weights", "Match weights per field", weights)] if weights is not None else []),
        *([("training", "How the weights were learned", trained)] if trained is not None else []),
        *([("waterfalls", "Waterfalls", falls)] if falls is not None else []),
        # what made the candidates: after the threshold's sections (a reviewer decides the threshold first)
        *([("normalize", "Normalized fields", normalize_section(report))] if report.get("normalize") else []),
        ("blocking", "Blocking", blocking_section(report)),
        *(
            [("pruning", "Shingles pruned by frequency", pruning_section(report))]
            if any(s.get("stage") == "prune" for s in report.get("stages") or [])
            else []
        ),
        ("cluster-sizes", "Cluster sizes", size_body),
        *([("chains", "Clusters that look chained", chains_section(report))] if report.get("chains") else []),
        ("largest-clusters", "Largest clusters", examples_body),
        ("stages", "Stages", stages_section(report)),
        ("components", "Components", components_section(report)),
    ]
    raw = json.dumps(report, indent=2, ensure_ascii=False, default=str)
    nav = "".join(f'<a href="#{sid}">{_e(title)}</a>' for sid, title, _ in sections)
    body = "".join(section_html(sid, title, content) for sid, title, content in sections)
    warn = "".join(f'<p class="note warn">{_e(n)}</p>' for n in notes)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(f'er report: {name}')}</title><style>{PAGE_CSS}{REVIEW_CSS}</style></head><body><main>"
        f"<h1>Entity-resolution report: {_e(name)}</h1>{warnings_section(report)}"
        f'<section id="job">{job_section(report, out if shown_dir is None else Path(shown_dir))}</section>'
        f"<nav>{nav}</nav>{warn}{body}"
        f'<section id="raw"><details><summary>report.json</summary><pre>{_e(raw)}</pre></details></section>'
        "</main></body></html>\n"
    )


def write_report(
    out_dir: str | Path,
    *,
    config_path: str | Path | None = None,
    max_examples: int = 5,
    run: RunData | None = None,
    threshold_curve: dict[str, Any] | None = None,
) -> Path:
    """Write ``out_dir/report.html`` from the outputs of a run (swapped in under the folder's lock,
    :func:`er_framework.io.outputs.publish`); return its path.

    Reads ``report.json``, the pairs and the clusters table (CSV or Parquet)
    of ``out_dir``; example records of the largest clusters are read from
    the job's sources through the job file named in ``report.json`` (or
    ``config_path``). ``max_examples`` records are shown per cluster. ``threshold_curve``: precision,
    recall and F1 by threshold against a truth (computed by ``er report --truth``): drawn, and kept in
    report.json (``threshold_curve``), which is swapped in with the page.
    Raises :class:`InputError` when ``report.json`` is missing or unreadable
    or the page cannot be written; problems with the other files are noted
    on the page instead.
    """
    out = Path(out_dir)
    recover(out)
    text = render_report(out, config_path=config_path, max_examples=max_examples, run=run, threshold_curve=threshold_curve)
    files = {"report.html": text}
    if threshold_curve is not None:
        report = _load_report(out)
        report["threshold_curve"] = threshold_curve
        files["report.json"] = json.dumps(report, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    return publish(out, files)["report.html"]
