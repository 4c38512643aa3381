"""The read and normalize stages: every source of a job as :class:`~er_framework.data.Records` (files, database
queries or tables, or DataFrames given in memory, HTML columns replaced by their visible text) and the job's ``normalize:`` steps."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from er_framework.config.resolve import Job
from er_framework.data import Records
from er_framework.engine.columns import normalize_fields_shared
from er_framework.errors import ErError, InputError, Problem
from er_framework.io.database_read import read_database
from er_framework.io.frame_parts import read_frame_source as read_frame_source_in_parts
from er_framework.io.html import extract_text
from er_framework.io.parallel_read import read_jsonl_parallel
from er_framework.io.remote import is_url
from er_framework.io.source_files import merge_files, read_source_with_stats
from er_framework.kernels.parallel import ForkedWorker, map_processes
from er_framework.normalize import normalize_column_keeping_input, unparsed_problem

__all__ = [
    "FILE_BACKED_MIN_BYTES",
    "database_arguments",
    "file_backed",
    "html_to_text",
    "normalize",
    "normalize_fields",
    "normalize_keeping_input",
    "read",
    "read_database_source",
    "read_frame_source",
    "read_sources",
    "require_parsed",
]

#: from this many values (all normalized fields together) normalizers run in forked worker processes, one
#: field per task; below it, in this process. Off by default (2**62): on 2 cores the workers gained no time
#: and their copies of the columns doubled the memory of the process tree (issue 15, 1,000,000 x 1,000,000
#: customers: 41.2 s / 5.8 GB with workers, 40.3 s / 3.1 GB in-process; 100,000 x 100,000: 3.21 s against
#: 2.98 s). tests/hostile/test_processes.py sets it to 1 to signal a run while its workers live. Large jobs
#: of ``er run`` share the fields with one worker forked before the read instead (``worker`` of
#: :func:`normalize_fields`; :mod:`er_framework.engine.shared`), which holds none of the data's pages.
PARALLEL_NORMALIZE_MIN_VALUES = 2**62
#: an uncompressed JSON Lines source of at least this many bytes is read file-backed: its text fields stay in
#: the file and the stages read them a slice at a time (:mod:`er_framework.io.filetext`); smaller files are
#: held in memory. 1,000,000 documents of ~3,800 characters (3.8 GB): the texts alone would be ~3.8 GB
FILE_BACKED_MIN_BYTES = 1 << 28


# ------------------------------------------------------------------ read


def read(job: Job) -> tuple[Records, dict[str, Any]]:
    """Every source of ``job``; problems of all sources are reported together.

    HTML columns (``html:`` of a source) are replaced by their visible text.
    Returns the records and per-source reading statistics for the report.
    """
    parts, stats, problems = read_sources(job, range(len(job.spec.sources)))
    if problems:
        raise InputError(problems)
    return Records.concat(parts), stats


def read_sources(job: Job, indices: Iterable[int]) -> tuple[list[Records], dict[str, Any], list[Problem]]:
    """The sources ``indices`` of ``job`` as :func:`read` reads them: ``(records of each source read without a
    problem, reading statistics by source name, the problems)``."""
    parts: list[Records] = []
    problems: list[Problem] = []
    stats: dict[str, Any] = {}
    for i in indices:
        src = job.spec.sources[i]
        files: list[Records] = []
        st: dict[str, Any] = {}
        if src.name in job.frames or src.database is not None:  # given in memory, or a SQL query or table
            try:
                recs, st = read_frame_source(job, i) if src.name in job.frames else read_database_source(job, i)
            except ErError as exc:
                problems.extend(exc.problems)
                continue
            st.update(html_to_text(job, i, recs))
            stats[src.name] = st
            parts.append(recs)
            continue
        try:
            inputs = job.source_inputs(i)
        except ErError as exc:  # a URL whose protocol's package is missing
            problems.extend(exc.problems)
            continue
        for path in inputs:
            try:
                where = f"{job.config_path}: sources[{i}]"
                backed = not is_url(path) and file_backed(job, i, Path(path))
                # a clean large JSON Lines file: read on the job's workers, one byte range each
                whole = read_jsonl_parallel(path, job.context.workers, where=where, **src.read_options()) if backed else None
                st_file: dict[str, Any] = {}
                if whole is not None:
                    recs = whole
                else:
                    recs, st_file = read_source_with_stats(path, where=where, file_backed=backed, **src.read_options())
            except ErError as exc:
                problems.extend(exc.problems)
                continue
            st.update(st_file)
            files.append(recs)
        if len(files) != len(inputs):
            continue
        recs = files[0] if len(files) == 1 else merge_files(files, f"{job.config_path}: sources[{i}] ({src.path})")
        st.update(html_to_text(job, i, recs))
        if len(files) > 1:
            st["files"] = len(files)
        stats[src.name] = st
        parts.append(recs)
    return parts, stats, problems


def read_frame_source(job: Job, source: int) -> tuple[Records, dict[str, Any]]:
    """Source ``source`` of ``job`` given in memory (``er_framework.run(job, sources={name: DataFrame})``) as
    :class:`Records`, and its statistics (``given_in_memory``)."""
    src = job.spec.sources[source]
    opts = src.read_options()
    recs = read_frame_source_in_parts(
        job.frames[src.name],
        id_column=opts["id_column"],
        fields=opts["fields"],
        name=src.name,
        where=f"sources[{source}] {src.name!r} (given in memory)",
        layout=opts["layout"],
        max_record_mb=opts["max_record_mb"],
        columns=opts["columns"],
    )
    return recs, {"given_in_memory": True}


def read_database_source(job: Job, source: int) -> tuple[Records, dict[str, Any]]:
    """Source ``source`` of ``job``, a database query or table (``database:``), as :class:`Records` whose fields
    are the job's field names (``columns:`` maps them onto the result's columns), and its reading statistics (``database``: the URL
    masked, ``rows``, ``seconds``)."""
    t0 = time.perf_counter()
    recs, stats = read_database(**database_arguments(job, source), layout=job.spec.sources[source].layout)
    stats["seconds"] = round(time.perf_counter() - t0, 4)
    return recs, stats


def database_arguments(job: Job, source: int) -> dict[str, Any]:
    """The database reader's arguments for source ``source`` of ``job`` (``database:``), but its ``layout``:
    the local reader's and a distributed run's reader of the same rows take the same."""
    spec = job.spec.sources[source]
    assert spec.database is not None
    opts = spec.read_options()
    return {
        "url": spec.database,
        "base_dir": job.base_dir,
        "query": spec.query,
        "table": spec.table,
        "columns": opts["columns"],
        "batch_rows": spec.batch_rows,
        "id_column": opts["id_column"],
        "fields": opts["fields"],
        "name": spec.name,
        "max_record_mb": opts["max_record_mb"],
        "where": f"{job.config_path}: sources[{source}]",
    }


def file_backed(job: Job, source: int, path: Path) -> bool:
    """Whether ``path`` of source ``source`` is read file-backed: a JSON Lines file of at least
    :data:`FILE_BACKED_MIN_BYTES` of a job whose shingler reads its texts a slice at a time, whose texts
    are not replaced (no ``html:``) and not normalized (no ``normalize:`` step on its fields: a
    normalizer makes a new column of every value anyway, and field blockers and scorers go over whole
    columns again and again); the reader reads other files in memory whatever this says."""
    spec = job.spec.sources[source]
    if job.shingler is None or spec.html is not None or not str(path).endswith(".jsonl"):
        return False
    if any(f in job.normalizers for f in spec.fields):
        return False
    try:
        return path.stat().st_size >= FILE_BACKED_MIN_BYTES
    except OSError:
        return False  # the reader reports it


def html_to_text(job: Job, source: int, records: Records) -> dict[str, Any]:
    """Replace the HTML columns of source ``source`` (its ``html:`` option) by their visible text, in place."""
    spec = job.spec.sources[source]
    stats: dict[str, Any] = {}
    if spec.html is None:
        return stats
    for column in spec.html.fields or spec.fields:
        texts, html_stats = extract_text(records.fields[column], boilerplate=spec.html.boilerplate, language=spec.html.language)
        records.fields[column] = texts
        stats[f"html:{column}"] = html_stats
    return stats


# ------------------------------------------------------------------ normalize


def normalize_fields(
    records: Records,
    spec: dict[str, Any],
    workers: int,
    worker: ForkedWorker | None = None,
) -> dict[str, tuple[list[str | None], dict[str, Any], Sequence[Any]]]:
    """Every field of ``spec`` through its normalizers: ``{field: (values, stats, given)}`` (``given``: the
    values as read in a compact form, :func:`~er_framework.normalize.normalize_column_keeping_input`).

    Normalizers are Python per distinct value (they hold the GIL), so on large
    inputs the fields are spread over ``workers`` forked processes, one task
    per field (:func:`map_processes`: they die with this process); each
    field's result is the same function's, wherever it ran. ``worker``: a
    process forked before the read (:func:`~er_framework.engine.columns.normalize_worker`)
    shares the fields with this one (:func:`~er_framework.engine.columns.normalize_fields_shared`).
    """
    fields = [f for f in spec if f in records.fields]
    total = sum(len(records.fields[f]) for f in fields)
    if workers <= 1 or len(fields) <= 1 or total < PARALLEL_NORMALIZE_MIN_VALUES:
        if worker is not None and len(fields) > 1:
            return normalize_fields_shared(records, spec, worker)
        return {f: normalize_column_keeping_input(records.fields[f], spec[f]) for f in fields}
    # forked workers that die with this process (any signal) and are killed on an exception here
    results = map_processes(normalize_column_keeping_input, [(records.fields[f], spec[f]) for f in fields], workers)
    return dict(zip(fields, results))


def normalize(job: Job, records: Records, workers: int = 1) -> tuple[Records, dict[str, Any]]:
    """The job's ``normalize:`` steps applied to ``records``: a new :class:`Records` and per-field stats.

    Raises :class:`~er_framework.errors.InputError` when the job says ``normalize_strict: true`` and a chain
    could not read some present values (:func:`require_parsed`)."""
    normalized, stats, _ = normalize_keeping_input(job, records, workers)
    return normalized, stats


def require_parsed(job: Job, stats: dict[str, Any]) -> None:
    """With ``normalize_strict: true``: :class:`~er_framework.errors.InputError` naming every field whose chain
    could not read some of its present values (the count, the share, examples and the fix), from the
    normalize stage's ``stats``; nothing otherwise (the run then reports them as a warning)."""
    if not job.spec.normalize_strict:
        return
    problems = [p for name, st in stats.items() if (p := unparsed_problem(name, st, str(job.config_path))) is not None]
    if problems:
        raise InputError(problems)


def normalize_keeping_input(
    job: Job,
    records: Records,
    workers: int = 1,
    worker: ForkedWorker | None = None,
) -> tuple[Records, dict[str, Any], Records]:
    """:func:`normalize` and the records as given, their normalized fields held compactly
    (:class:`~er_framework.kernels.arrow.ArrowValues`, about their UTF-8 bytes): what a run keeps for
    report.html's example records once it has let go of ``records`` (the columns as read, a Python string
    per value: at 2 x 1,000,000 customers ~1.3 GB of the process's peak); ``worker`` as :func:`normalize_fields`."""
    fields = dict(records.fields)
    given: dict[str, Any] = dict(records.fields)  # read-only sequences: lists, or ArrowValues
    stats: dict[str, Any] = {}
    for name, (values, st, kept) in normalize_fields(records, job.normalizer_chains(), workers, worker).items():
        fields[name], stats[name], given[name] = values, st, kept
    require_parsed(job, stats)
    return (
        Records(records.ids, records.source, records.source_names, fields),
        stats,
        Records(records.ids, records.source, records.source_names, given),
    )
