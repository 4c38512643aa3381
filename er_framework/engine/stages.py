"""One function per stage of a job. No maths here: kernels and components do the work.

    read -> normalize -> exact duplicates -> [prune] -> shingle + sign -> block
         -> diagnostics -> verify -> cluster -> write

Every executor and the index call these functions (the local executor all
of them in order; the Dask executor the per-partition ones on its workers and
the rest on the client), so a behaviour lives in one place.

Record indices are global (all sources concatenated, in source order). The
exact-duplicate stage may collapse copies onto one representative; the later
stages then see only the *active* records, and their pairs are mapped back
to global indices.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from collections.abc import Iterable, Sequence
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import (
    Diagnostic, Partitionable, SignatureScreen, WholeCorpus, ability, has, multisets, shingle_with_report,
)
from er_framework.capabilities import block as block_reported
from er_framework.config.job import Job
from er_framework.data import Batch, LabelledPairs, Pairs, Records, Signatures, TokenSets
from er_framework.engine.columns import normalize_fields_shared
from er_framework.engine.engine import Engine, PrunedShingler
from er_framework.engine.log import StageLog
from er_framework.errors import ErError, InputError, Problem
from er_framework.io.frames import records_from_frame
from er_framework.io.html import extract_text
from er_framework.io.outputs import OutputDir, OutputStage, check_output_dir
from er_framework.io.parallel_read import read_jsonl_parallel
from er_framework.io.tables import merge_files, read_output_table, read_source_with_stats, write_files
from er_framework.kernels import group_sorted, pairs_in_groups
from er_framework.kernels.allocator import hand_back_freed_memory, keep_freed_memory
from er_framework.kernels.digests import normalize_text, normalized_digests, text_digests
from er_framework.kernels.df import DocFreq, df_limits, drop_tokens, pruned_tokens
from er_framework.kernels.graph import canonical_labels
from er_framework.kernels.hashing import unique_rows
from er_framework.kernels.groups import cross_group_pairs, sorted_unique
from er_framework.kernels.parallel import ForkedWorker, map_ordered, map_processes, split_sizes
from er_framework.kernels.windows import verify_windows
from er_framework.memory import available_memory, size_text
from er_framework.normalize import normalize_column_keeping_input
from er_framework.report.page import RunData, render_report

__all__ = [
    "explainer", "record_rows", "LABEL_COLUMNS", "MATCH_WORDS", "NON_MATCH_WORDS", "read_labels", "training_labels",
    "ANSWER_MEMORY_SHARE", "EXACT_CHUNK_CHARS", "ANSWER_PAIR_BYTES", "Answer", "answer", "comparisons_table", "exact_groups", "pairs_table",
    "Exact", "Shingled", "Verified", "block", "cluster", "cluster_stats", "diagnostics", "exact_duplicates", "html_to_text",
    "job_inputs", "require_out_dir", "with_exact", "FILE_BACKED_MIN_BYTES", "file_backed",
    "exact_from_keys", "exact_groups_from_keys", "exact_keys", "normalize", "normalize_fields", "normalize_keeping_input",
    "normalize_text", "output_tables",
    "PRUNE_MEMORY_SHARE", "Pruning", "check_frequency_memory", "prune_shingles", "pruned_by_frequency", "pruned_share",
    "KEEP_FORECAST_SHARE", "TOKEN_MEMORY_SHARE", "read", "read_sources", "score_streamed", "shingle_and_sign", "token_budget",
    "VERIFY_BLOCK_MB", "VERIFY_WINDOW_MB", "score_windowed", "rows_sets", "place_parts", "PREFETCH_CHUNKS",
    "shingle_frequencies", "subtract_pairs", "verify", "write",
]

Int64Array = npt.NDArray[np.int64]

#: smallest token budget of a verification block, MB
VERIFY_MIN_MB = 64
#: largest token budget of a verification block, MB, whatever ``token_memory_mb`` allows: the blocks'
#: memory is reused block after block (one buffer, :func:`streamed_subset`), while one block of every
#: candidate record's set is memory new to the process (page faults, huge-page compaction). 20,000
#: documents of ~4,100 characters, 2 cores, before the sets were kept in the shingle stage: blocks of
#: 64-256 MB verified in 1.15-1.25 s at a peak of 410-475 MB, one block of 2 GB in 1.2-1.35 s at 906 MB
#: (3% of the records are shingled twice at 256 MB)
VERIFY_BLOCK_MB = 256
#: largest token budget of a windowed verification (:func:`score_windowed`), MB: its two chunks of half
#: this share one buffer, reused chunk after chunk, and larger chunks leave fewer pairs whose records lie
#: in chunks further apart (1,000,000 documents, 1.03 M candidate pairs of 575,660 records: 753 k records
#: shingled with 256 MB, 663 k with 512 MB, 576 k with 1024 MB)
VERIFY_WINDOW_MB = 1024
#: chunks of a windowed verification whose texts are asked of the page cache ahead of the one being made
#: (:meth:`~er_framework.data.Records.prefetch`: the operating system reads them while the chunk is scored)
PREFETCH_CHUNKS = 2
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
        if src.name in job.frames:  # given in memory (er_framework.run(job, sources={name: DataFrame}))
            try:
                opts = src.read_options()
                recs = records_from_frame(job.frames[src.name], id_column=opts["id_column"], fields=opts["fields"],
                                          name=src.name, where=f"sources[{i}] {src.name!r} (given in memory)",
                                          layout=opts["layout"], max_record_mb=opts["max_record_mb"])
            except ErError as exc:
                problems.extend(exc.problems)
                continue
            st = {"given_in_memory": True, **html_to_text(job, i, recs)}
            stats[src.name] = st
            parts.append(recs)
            continue
        for path in job.source_paths(i):
            try:
                where = f"{job.config_path}: sources[{i}]"
                backed = file_backed(job, i, path)
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
        if len(files) != len(job.source_paths(i)):
            continue
        recs = files[0] if len(files) == 1 else merge_files(files, f"{job.config_path}: sources[{i}] ({src.path})")
        st.update(html_to_text(job, i, recs))
        if len(files) > 1:
            st["files"] = len(files)
        stats[src.name] = st
        parts.append(recs)
    return parts, stats, problems


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
        texts, html_stats = extract_text(records.fields[column], boilerplate=spec.html.boilerplate,
                                         language=spec.html.language)
        records.fields[column] = texts
        stats[f"html:{column}"] = html_stats
    return stats


# ------------------------------------------------------------------ normalize


def normalize_fields(
    records: Records, spec: dict[str, Any], workers: int, worker: ForkedWorker | None = None,
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
    """The job's ``normalize:`` steps applied to ``records``: a new :class:`Records` and per-field stats."""
    normalized, stats, _ = normalize_keeping_input(job, records, workers)
    return normalized, stats


def normalize_keeping_input(
    job: Job, records: Records, workers: int = 1, worker: ForkedWorker | None = None,
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
    return (Records(records.ids, records.source, records.source_names, fields), stats,
            Records(records.ids, records.source, records.source_names, given))


# ------------------------------------------------------------------ exact duplicates


#: characters of text normalized and digested per step of the exact-duplicate stage: the stage's
#: memory is a few bytes per character of one step (~5-20 MB), not of the corpus. Steps of 1M characters
#: keep the temporaries small enough for the allocator to reuse them (20,000 documents of ~4,000
#: characters, in-process: 0.17-0.18 s wall, 0.24-0.26 s CPU, against 0.32-0.66 s with steps of 16M
#: characters, whose temporaries were memory new to the process at every step)
EXACT_CHUNK_CHARS = 1 << 20


def exact_keys(
    records: Records, normalize: bool, *, workers: int = 1, chunk_chars: int = EXACT_CHUNK_CHARS
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """``(keys, nonempty)``: the stable 64-bit digest of each record's (normalized) text.

    The key is BLAKE2b-64 of the UTF-8 bytes of :func:`normalize_text` of the
    text (``normalize``) or of the text as read
    (:mod:`er_framework.kernels.digests`). Records with equal keys are exact
    duplicates; an empty text is nobody's duplicate (``nonempty`` false).
    The corpus goes through in chunks of about ``chunk_chars`` characters
    (texts joined, normalized, digested and dropped one chunk at a time), on
    ``workers`` threads (the kernels release the GIL in their array work and
    while hashing); the keys do not depend on either.
    """
    n = len(records)
    ranges = split_sizes(records.text_sizes() + 1, max(1, chunk_chars)) if n else []

    def chunk(ab: tuple[int, int]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        texts = records.text(rows=slice(*ab))
        if normalize:
            return normalized_digests(texts)
        return text_digests(texts), np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) > 0

    parts = map_ordered(chunk, ranges, workers)
    if not parts:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([k for k, _ in parts]), np.concatenate([e for _, e in parts])


@dataclass
class Exact:
    """What the exact-duplicate stage found."""

    pairs: Pairs  # scored 1.0, global indices, normalized
    active: Int64Array  # records that take part in the later stages
    stats: dict[str, Any]


def exact_groups_from_keys(
    keys: npt.NDArray[np.uint64], nonempty: npt.NDArray[np.bool_], source: npt.NDArray[Any], collapse: bool
) -> Exact:
    """Exact copies from the records' :func:`exact_keys` and sources.

    With ``collapse`` (dedup modes) each group of identical records is linked
    as a star to its first record with score 1.0 and only that
    representative stays active for the later stages. Without ``collapse``
    (link mode) all cross-source pairs inside a group are returned and every
    record stays active (within-source copies are not pairs in link mode, but
    each must still find its near-duplicates in the other source). Empty
    texts are never exact duplicates of each other.
    """
    n = len(keys)
    idx = np.flatnonzero(nonempty).astype(np.int64)
    order, starts, sizes = group_sorted(keys[idx])
    members = idx[order]  # stable sort: ascending record index within each group
    group_of = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    in_group = sizes[group_of] >= 2
    multi = sizes >= 2
    active = np.arange(n, dtype=np.int64)
    stats: dict[str, Any] = {"groups": int(multi.sum()), "records_in_groups": int(sizes[multi].sum())}
    if collapse:
        rep_of = members[starts[group_of]]  # representative = smallest index of the group
        dup = in_group & (members != rep_of)
        pairs = Pairs(rep_of[dup], members[dup], np.ones(int(dup.sum()))).normalized()
        collapsed = np.zeros(n, dtype=bool)
        collapsed[members[dup]] = True
        active = np.flatnonzero(~collapsed).astype(np.int64)
        stats["records_collapsed"] = int(collapsed.sum())
    else:
        left, right = pairs_in_groups(members, starts[multi], sizes[multi])
        cross = source[left] != source[right]
        pairs = Pairs(left[cross], right[cross], np.ones(int(cross.sum()))).normalized()
        stats["records_collapsed"] = 0
    stats["pairs"] = int(len(pairs))
    return Exact(pairs, active, stats)


def exact_duplicates(job: Job, records: Records) -> Exact:
    """The exact-duplicate stage (or its no-op when the job turns it off)."""
    if not job.exact.enabled:
        return exact_from_keys(job, None, None, records.source)
    keys, nonempty = exact_keys(records, job.exact.normalize, workers=job.context.workers)
    return exact_from_keys(job, keys, nonempty, records.source)


def exact_from_keys(
    job: Job, keys: npt.NDArray[np.uint64] | None, nonempty: npt.NDArray[np.bool_] | None, source: npt.NDArray[Any]
) -> Exact:
    """The exact-duplicate stage from the records' :func:`exact_keys` (computed wherever the records were read)."""
    if job.exact.enabled and keys is not None and nonempty is not None:
        found = exact_groups_from_keys(keys, nonempty, source, collapse=job.spec.mode != "link")
    else:
        found = Exact(Pairs.empty(scored=True), np.arange(len(source), dtype=np.int64),
                      {"groups": 0, "records_in_groups": 0, "records_collapsed": 0, "pairs": 0})
    found.stats["enabled"] = job.exact.enabled
    return found


# ------------------------------------------------------------------ shingle + sign


@dataclass
class Shingled:
    """What the streamed shingle/signature stages produced."""

    sizes: Int64Array
    tokens: TokenSets | None
    signatures: Signatures | None
    chunks: int
    report: dict[str, Any] = field(default_factory=dict)
    #: tokens each record lost to ``prune_shingles:`` when they were pruned while shingling (else None)
    lost: Int64Array | None = None
    #: a :class:`~er_framework.capabilities.Partitionable` shingler's report of the run (its ``merge_reports``)
    shingler_report: dict[str, Any] | None = None
    #: the shingler's reports of the calls made while shingling (see :func:`_shingle_chunks`)
    reports: list[dict[str, Any]] = field(default_factory=list)


#: the counts of ``prune_shingles:`` may take this share of the memory still available (a merge doubles them briefly)
PRUNE_MEMORY_SHARE = 0.4


def check_frequency_memory(freq: DocFreq, records: int | None = None) -> None:
    """Refuse, with a clear error, shingle counts that the memory still available could not merge."""
    avail = available_memory()
    if avail is None or freq.nbytes <= PRUNE_MEMORY_SHARE * avail:
        return
    of = f" of {records:,} records" if records is not None else ""
    raise InputError(Problem(
        where="prune_shingles", path="prune_shingles",
        message=f"counting the shingles{of} needs a table of {freq.entries:,} distinct shingles so far "
        f"({size_text(freq.nbytes)}, and a merge needs as much again): more than this process can hold "
        f"({size_text(avail)} of memory available)",
        fix="remove prune_shingles, or use a shingler with fewer distinct shingles (word or stopword shingles, "
        "a smaller k), or run on a machine with more memory",
    ))


def shingle_frequencies(
    engine: Engine, records: Records, keep_mb: float = 0.0
) -> tuple[DocFreq, Int64Array, TokenSets | None, list[dict[str, Any]]]:
    """Pass 1 of ``prune_shingles:``: the document frequency of every shingle of ``records``, a chunk at a time.

    Returns the counts, each record's number of distinct shingles and, when
    every token set fits in ``keep_mb`` (the job's ``token_memory_mb``), the
    sets themselves (so that pass 2 prunes them instead of shingling again;
    ``None`` beyond that), and the shingler's reports of its calls (empty
    unless it is partitionable). The Dask executor calls it per partition and
    merges the counts (:meth:`DocFreq.merge`).
    """
    shingler = engine.base_shingler
    assert shingler is not None
    freq = DocFreq()
    n = len(records)
    chunk = engine.job.spec.chunk_records if not has(shingler, WholeCorpus) else max(n, 1)
    cap = int(keep_mb * 2**20) // 8
    parts: list[TokenSets] | None = []
    sizes: list[Int64Array] = []
    reports: list[dict[str, Any]] = []
    used = 0
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        got = shingle_with_report(shingler, records if (a, b) == (0, n) else records.take(np.arange(a, b, dtype=np.int64)))
        ts = got.tokens
        if has(shingler, Partitionable):
            reports.append(got.report)
        freq.add(ts)
        check_frequency_memory(freq, n)
        sizes.append(ts.sizes)
        if parts is not None and used + len(ts.tokens) <= cap:
            parts.append(ts)
            used += len(ts.tokens)
        else:
            parts = None
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    if parts is None:
        return freq, all_sizes, None, reports
    return freq, all_sizes, TokenSets.concat(parts) if len(parts) != 1 else parts[0], reports


def pruned_by_frequency(job: Job, freq: DocFreq) -> tuple[npt.NDArray[np.uint64], dict[str, Any]]:
    """The shingles ``prune_shingles:`` drops, from the corpus's counts, and the report's numbers on them."""
    spec = job.spec.prune_shingles
    assert spec is not None
    tokens, df = freq.table()
    most, least = df_limits(freq.records, spec.max_df, spec.min_df, spec.max_df_floor)
    dropped = pruned_tokens(tokens, df, most, least)
    above = int((df > most).sum()) if most is not None else 0
    top = np.sort(df)[::-1][:10]
    report = {
        "max_df": spec.max_df, "min_df": spec.min_df, "max_df_floor": spec.max_df_floor,
        "records_counted": int(freq.records),
        "max_records": most,  # a shingle in more records than this is dropped (None: no upper limit)
        "min_records": least,  # … in fewer records than this
        "vocabulary": int(len(tokens)),
        "shingles_pruned": int(len(dropped)),
        "above_max_df": above,
        "below_min_df": int(len(dropped)) - above,
        "most_frequent_df": [int(x) for x in top],  # records holding each of the 10 most frequent shingles
    }
    return dropped, report


def pruned_share(before: Int64Array, lost: Int64Array) -> dict[str, Any]:
    """How much of each record's shingles the pruning took: the overall share, quantiles per record, records emptied."""
    before = np.asarray(before, dtype=np.int64)
    lost = np.asarray(lost, dtype=np.int64)
    share = np.divide(lost, before, out=np.zeros(len(before)), where=before > 0)
    q = np.quantile(share, [0.5, 0.9, 0.99]) if len(share) else np.zeros(3)
    return {
        "token_share_pruned": round(float(lost.sum() / before.sum()), 4) if before.sum() else 0.0,
        "record_share_pruned": {"median": round(float(q[0]), 4), "p90": round(float(q[1]), 4),
                                "p99": round(float(q[2]), 4), "max": round(float(share.max()), 4) if len(share) else 0.0},
        "records_pruned": int((lost > 0).sum()),
        "records_emptied": int(((before > 0) & (lost == before)).sum()),
    }


@dataclass
class Pruning:
    """What the ``prune`` stage leaves for the shingle stage."""

    sizes: Int64Array  # distinct shingles of every record before pruning
    tokens: TokenSets | None  # the pruned token sets, when pass 1 could keep them (else shingled again)
    info: dict[str, Any]  # the stage's log entry (the shingle stage adds how much of each record went)
    #: the shingler's reports of pass 1's calls (:func:`shingle_frequencies`), for kept token sets
    reports: list[dict[str, Any]] = field(default_factory=list)


def prune_shingles(engine: Engine, records: Records, log: StageLog) -> Pruning | None:
    """The ``prune`` stage (when the job sets ``prune_shingles:``): count, choose, and make the engine prune.

    After it, the engine's shingler gives pruned sets (:meth:`Engine.apply_pruning`).
    The token sets of pass 1 are kept when they fit ``token_memory_mb``;
    :func:`shingle_and_sign` then signs those instead of shingling again.
    """
    job = engine.job
    if job.spec.prune_shingles is None or engine.base_shingler is None:
        return None
    with log.stage("prune") as info:
        freq, sizes, kept, reports = shingle_frequencies(engine, records, job.spec.token_memory_mb)
        dropped, report = pruned_by_frequency(job, freq)
        engine.apply_pruning(dropped)
        info.update(report)
        pruned = None if kept is None else drop_tokens(kept, dropped, sets=True, workers=job.context.workers)[0]
    return Pruning(sizes, pruned, info, reports)


#: the token sets kept after signing may take at most this share of the memory available when shingling
#: starts (``token_memory_mb`` is the other limit)
TOKEN_MEMORY_SHARE = 0.4
#: token sets are kept only when the corpus's, extrapolated from the first chunk's tokens per character,
#: fill at most this share of the budget (the first chunk may not be typical; a wrong guess is caught when
#: the budget runs out)
KEEP_FORECAST_SHARE = 0.8


def token_budget(token_memory_mb: float) -> int:
    """Tokens (8 bytes each) that the shingle stage may keep: ``token_memory_mb``, and at most
    :data:`TOKEN_MEMORY_SHARE` of the memory available now."""
    cap = int(token_memory_mb * 2**20)
    avail = available_memory()
    if avail is not None:
        cap = min(cap, int(TOKEN_MEMORY_SHARE * avail))
    return max(cap, 0) // 8


def shingle_and_sign(engine: Engine, records: Records, batch: Batch, log: StageLog, pruning: Pruning | None = None) -> Shingled:
    """Token sets and signatures of ``records`` (the active ones), a chunk of records at a time; fills ``batch``.

    Components see whole chunks (never one record); token sets and
    signatures are per record, so the result does not depend on the chunk
    size. Token sets are kept when a blocker reads them (or the shingler
    must see every record at once); otherwise while they fit the budget
    (:func:`token_budget`: ``token_memory_mb``, at most a share of the
    memory available), and beyond that dropped after signing and recomputed
    for the records a later stage asks for through ``batch.token_source``.
    With a builder that takes minima (``MultisetSigning``, ``"none"``) the
    shingler's multisets are counted (with repeats); while the corpus's
    sets fit the budget they are sorted from the multisets, signed and kept,
    beyond it the multisets are signed and nothing is kept (see
    :func:`_shingle_chunks`). Streamable shinglers go through steps of
    about :data:`SHINGLE_STEP_CHARS` characters, each cut into slices that
    one worker shingles, makes sets of and signs
    (:func:`_shingle_and_sign_slice`). ``pruning``: what the ``prune``
    stage found; the token sets it kept (pruned) are signed and kept, not
    shingled again.
    """
    job, shingler, builder = engine.job, engine.shingler, engine.builder
    if shingler is not None:
        keep_freed_memory()  # the steps' temporaries reuse the memory of the last ones (kernels.allocator)
    if shingler is None:
        for name in ["shingle", "signatures"]:  # logged as skipped
            with log.stage(name):
                pass
        return Shingled(np.zeros(0, dtype=np.int64), None, None, 0)
    pruned = pruning.tokens if pruning is not None else None
    keep = "all" if pruned is not None else engine.token_keep()
    streamed = not has(shingler, WholeCorpus)
    chunk = job.spec.chunk_records if streamed else max(len(records), 1)
    shingled = _shingle_chunks(records, shingler, builder, keep, chunk, job.spec.token_memory_mb, log, pruned,
                               step_chars=SHINGLE_STEP_CHARS if streamed else None,
                               workers=job.context.workers)
    partitionable = ability(shingler, Partitionable)
    if partitionable is not None:  # the report of the calls that shingled the records (pass 1's, when it kept them)
        shingled.shingler_report = partitionable.merge_reports(
            pruning.reports if pruned is not None and pruning is not None else shingled.reports)
    hand_back_freed_memory()  # the steps' reused temporaries: the later stages do not start from this peak
    sizes = shingled.sizes
    batch.tokens = shingled.tokens
    shingled.report = {
        "records_shingled": int(len(sizes)),
        "empty_token_sets": int((sizes == 0).sum()),
        "mean_tokens": round(float(sizes.mean()), 2) if len(sizes) else 0.0,
        "total_tokens": int(sizes.sum()),
        # multisets: shingles counted with repeats (the sets were never built)
        "tokens_counted": "with repeats" if keep == "none" else "distinct",
        "token_sets_kept": shingled.tokens is not None,
        "chunks": shingled.chunks,
    }
    log.stages[-2 if builder is not None else -1].update(shingled.report)
    if pruning is not None:  # how much of each record went (distinct shingles)
        lost = shingled.lost if shingled.lost is not None else (
            pruning.sizes - sizes if pruned is not None else np.zeros(len(sizes), dtype=np.int64))  # nothing dropped
        pruning.info.update(pruned_share(pruning.sizes, lost))
    if shingled.tokens is None:
        batch.token_source = lambda rows: shingler.shingle(records.take(rows))
    if builder is not None:
        batch.signatures = shingled.signatures
        assert batch.signatures is not None
        log.stages[-1]["shape"] = list(batch.signatures.values.shape)
        log.stages[-1]["bytes"] = int(batch.signatures.values.nbytes)
    return shingled


def step_bounds(records: Records, chunk_records: int, step_chars: int | None) -> list[int]:
    """Where the shingle stage's steps start (and, last, ``len(records)``): at most ``chunk_records``
    records and, with ``step_chars``, about that many characters of text per step (a longer record
    is a step of its own)."""
    n = len(records)
    if n == 0:
        return [0, 0]
    cuts = set(range(0, n, chunk_records))
    if step_chars is not None:
        cuts.update(a for a, _ in split_sizes(records.text_sizes() + 1, step_chars))
    return sorted(cuts) + [n]


#: characters of text shingled and signed per step of the shingle stage (besides ``chunk_records``): a
#: step's tokens (8 bytes per character) and the kernels' temporaries stay small enough for the
#: allocator to reuse their memory step after step. Steps of a whole ``chunk_records`` (10,000 documents
#: of ~4,000 characters, 320 MB of tokens) were memory new to the process every time: page faults and
#: huge-page compaction made the stage vary from 0.5 s to 1.5 s on 20,000 such documents
SHINGLE_STEP_CHARS = 1 << 22


#: characters per slice of a fused shingle-and-sign step (each slice is shingled, made a set and signed by
#: one worker: no barrier between the three, and the slices' memory stays in the allocator's reuse)
FUSED_SLICE_CHARS = 1 << 19


def _shingle_and_sign_slice(
    records: Records, shingler: Any, builder: Any, multiset: bool, sets: bool, rows: tuple[int, int]
) -> tuple[Int64Array, TokenSets, Signatures | None, float, float]:
    """One slice of records ``rows`` (a range): ``(token counts, tokens, signatures, seconds shingling,
    seconds signing)``. ``multiset``: the shingler's multisets are counted (with repeats) and, with
    ``sets``, made sets (:func:`~er_framework.kernels.hashing.unique_rows`) before signing; the
    signatures are the same either way (the builder takes minima)."""
    t0 = time.perf_counter()
    part = records.take(np.arange(rows[0], rows[1], dtype=np.int64))
    tokens = multisets(shingler, part) if multiset else shingler.shingle(part)
    counted = tokens.sizes
    if multiset and sets:
        tokens = unique_rows(tokens, 1, in_place=True)
    t1 = time.perf_counter()
    sig = builder.build(tokens) if builder is not None else None
    return counted, tokens, sig, t1 - t0, time.perf_counter() - t1


def _shingle_chunks(
    records: Records, shingler: Any, builder: Any, keep: str, chunk_records: int, token_memory_mb: float,
    log: StageLog, pruned: TokenSets | None = None, *, step_chars: int | None = None, workers: int = 1,
) -> Shingled:
    """The chunk loop of :func:`shingle_and_sign` (``keep``: ``all``, ``budget`` or ``none``).

    Kept token sets fill one buffer of at most :func:`token_budget` tokens;
    whether the corpus's sets fit is forecast from the first step's tokens
    per character, so a corpus far over the budget never fills a buffer it
    then drops (one that outgrows the forecast drops it when the budget runs
    out, and verification shingles the candidates' records again,
    :func:`score_streamed`). Steps hold at most ``chunk_records`` records
    and, with ``step_chars``, about that many characters (:func:`step_bounds`).

    With multisets (``none``) the shingler's multisets are signed and their
    tokens counted with repeats (the report's counts, as on Dask). While the
    sets fit the budget, each step's multisets are also turned into sets
    (:func:`~er_framework.kernels.hashing.unique_rows`, the shingler's sets
    by the contract of :meth:`~er_framework.capabilities.Multiset.shingle_multiset`), which are signed
    instead (fewer tokens, the same minima) and kept, so that verification
    and the diagnostics do not shingle again. Measured on 20,000 documents
    of ~4,000 characters (2 cores): the sort costs ~0.2 s here, re-shingling
    the candidates' records in verification cost 0.9 s. Beyond the budget
    nothing is sorted (the 1,000,000-document corpus is streamed).
    """
    names = ["shingle"] + (["signatures"] if builder is not None else [])
    n = len(records)
    bounds = step_bounds(records, chunk_records, step_chars)
    # kept token sets are appended to one buffer: np.empty reserves address
    # space only, pages become resident as they are written (no 2x concat)
    cap = token_budget(token_memory_mb) if keep in ("budget", "none") else 0
    buffer: npt.NDArray[Any] | None = np.empty(cap, dtype=np.uint64) if cap else None
    used = 0
    token_parts: list[TokenSets] = []
    sig_parts: list[Signatures] = []
    sizes: list[Int64Array] = []  # as counted (with repeats for multisets)
    set_sizes: list[Int64Array] = []  # of the kept sets
    reports: list[dict[str, Any]] = []  # a partitionable shingler's, one per call
    # pruned while shingling: the distinct tokens each record lost, for the report
    lost: list[Int64Array] | None = [] if pruned is None and isinstance(shingler, PrunedShingler) else None
    kept = keep == "all" or buffer is not None
    chars = records.text_sizes() if buffer is not None and len(bounds) > 2 else None
    fused = pruned is None and lost is None and step_chars is not None
    text_chars = (chars if chars is not None else records.text_sizes()) if fused else None
    spent = [0.0, 0.0]  # the fused slices' time shingling and signing, summed over the threads
    with log.interleaved(names) as timer:
        for a, b in zip(bounds[:-1], bounds[1:]):  # one step per chunk of records
            pieces: list[tuple[Int64Array, TokenSets, Signatures | None]] = []
            if fused:  # slices shingled, made sets and signed on the workers, in record order
                want_sets = keep == "none" and kept and buffer is not None
                assert text_chars is not None
                slices = [(a + x, a + y) for x, y in split_sizes(text_chars[a:b] + 1, FUSED_SLICE_CHARS)]
                with timer("shingle"):
                    done = map_ordered(partial(_shingle_and_sign_slice, records, shingler, builder, keep == "none",
                                               want_sets), slices, workers)
                for counted, tokens, sig, t_shingle, t_sign in done:
                    pieces.append((counted, tokens, sig))
                    spent[0] += t_shingle
                    spent[1] += t_sign
                del done
            else:
                part = records if (a, b) == (0, n) else records.take(np.arange(a, b, dtype=np.int64))
                with timer("shingle"):
                    if pruned is not None:
                        tokens = pruned.slice(a, b)
                    elif lost is not None:
                        got, lost_part = shingler.shingle_counted(part, multiset=keep == "none")
                        tokens = got.tokens
                        lost.append(lost_part)
                        reports.append(got.report)
                    else:
                        got = shingle_with_report(shingler, part, multiset=keep == "none")
                        tokens = got.tokens
                        reports.append(got.report)
                    counted = tokens.sizes
                    if keep == "none" and kept and buffer is not None:
                        tokens = unique_rows(tokens, workers, in_place=True)  # the sets, kept below
                sig = None
                if builder is not None:
                    with timer("signatures"):
                        sig = builder.build(tokens)
                pieces.append((counted, tokens, sig))
                del tokens
            if buffer is not None and chars is not None and a == 0:  # forecast the corpus's sets from this step's
                per_char = sum(len(t.tokens) for _, t, _ in pieces) / max(int(chars[a:b].sum()), 1)
                if per_char * int(chars.sum()) > KEEP_FORECAST_SHARE * cap:
                    kept, buffer = False, None
            with timer("shingle"):  # keeping the sets: their memory is new to the process
                for counted, tokens, sig in pieces:
                    sizes.append(counted)
                    if sig is not None:
                        sig_parts.append(sig)
                    if keep == "all":
                        token_parts.append(tokens)
                    elif (kept and buffer is not None and used + len(tokens.tokens) <= cap
                          and tokens.tokens.dtype == np.uint64):
                        buffer[used : used + len(tokens.tokens)] = tokens.tokens
                        used += len(tokens.tokens)
                        set_sizes.append(tokens.sizes)
                    elif kept:
                        kept, buffer = False, None  # over budget: stream from here on
            del pieces
    if fused and builder is not None and sum(spent) > 0:
        # the fused slices' wall time is shared between the two stages by the time the workers spent on each
        shingle_info, sign_info = log.stages[-2], log.stages[-1]
        total = float(shingle_info["seconds"]) + float(sign_info["seconds"])
        sign_info["seconds"] = round(total * spent[1] / sum(spent), 4)
        shingle_info["seconds"] = round(total - sign_info["seconds"], 4)
    if builder is None:
        with log.stage("signatures"):
            pass
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    token_sets: TokenSets | None = None
    if pruned is not None:
        token_sets = pruned
    elif keep == "all":
        token_sets = token_parts[0] if len(token_parts) == 1 else TokenSets.concat(token_parts)
    elif kept and buffer is not None:
        indptr = np.zeros(len(all_sizes) + 1, dtype=np.int64)
        np.cumsum(np.concatenate(set_sizes) if set_sizes else all_sizes, out=indptr[1:])
        token_sets = TokenSets(indptr, buffer[:used])
    signatures = None
    if builder is not None:
        signatures = sig_parts[0] if len(sig_parts) == 1 else Signatures.concat(sig_parts)
    lost_all = None if lost is None else (np.concatenate(lost) if lost else np.zeros(0, dtype=np.int64))
    return Shingled(sizes=all_sizes, tokens=token_sets, signatures=signatures, chunks=len(bounds) - 1, lost=lost_all,
                    reports=reports)


# ------------------------------------------------------------------ block


def subtract_pairs(pairs: Pairs, known: Pairs) -> Pairs:
    """Pairs not in ``known`` (both normalized)."""
    if len(known) == 0 or len(pairs) == 0:
        return pairs
    n = int(max(pairs.right.max(), known.right.max())) + 1
    a = pairs.left * n + pairs.right
    b = known.left * n + known.right
    return pairs.select(~np.isin(a, b))


def block(engine: Engine, batch: Batch, exact: Exact) -> tuple[Pairs, list[dict[str, Any]]]:
    """Candidate pairs of every blocker (global indices, normalized, exact pairs removed) and each blocker's report.

    Each blocker's answer is checked against the contract
    (:meth:`Engine.checked_candidates`): a broken answer is a plugin error.
    """
    found: list[Pairs] = []
    # with several blockers, each one's candidates wait for the union packed (8 bytes a pair, not 16)
    keys: list[npt.NDArray[np.uint64]] = []
    reports: list[dict[str, Any]] = []
    for blocker in engine.blockers:
        blocked = block_reported(blocker, batch)  # the pairs with the call's report
        cand = engine.checked_candidates(blocker, blocked.pairs, batch)
        rep = {**blocker.describe(), **blocked.report}
        del blocked
        rep["candidate_pairs"] = int(len(cand))
        reports.append(rep)
        key = cand.packed() if len(engine.blockers) > 1 else None
        if key is None:
            found.append(cand)
        else:
            keys.append(key)
        del cand
    if keys:
        found.append(Pairs.from_packed(np.concatenate(keys) if len(keys) > 1 else keys[0]))
        keys.clear()
    local = found[0] if len(found) == 1 else Pairs.union(found)
    del found
    active = exact.active
    if len(active) and int(active[-1]) == len(active) - 1:  # increasing and unique: the identity, no copy
        candidates = local
    else:
        candidates = Pairs(active[local.left], active[local.right])  # increasing map: still normalized
    return subtract_pairs(candidates, exact.pairs), reports


def diagnostics(engine: Engine, batch: Batch, sample: int) -> dict[str, Any]:
    """The blockers' evidence for the report (the measured S-curve …), ``sample`` records probed."""
    out: dict[str, Any] = {}
    for blocker in engine.blockers:
        diagnostic = ability(blocker, Diagnostic)
        d = diagnostic.diagnostics(batch, sample) if diagnostic is not None else None
        if d is not None:
            out.update(d)
    return out


# ------------------------------------------------------------------ verify


def score_streamed(
    engine: Engine, batch: Batch, pairs: Pairs, sizes: Int64Array, token_memory_mb: float
) -> tuple[npt.NDArray[np.float64], int, int]:
    """Scores of ``pairs`` with token sets recomputed per block of pairs: (scores, records shingled, blocks).

    A pair costs the token counts of its two records (``sizes``, an upper
    bound of the set sizes); blocks hold about ``token_memory_mb`` of tokens
    (at least one pair; at least :data:`VERIFY_MIN_MB`, so that a zero budget,
    which keeps no token sets after signing, still verifies in large blocks;
    at most :data:`VERIFY_BLOCK_MB`). Pairs come sorted by their left record,
    so a block's records are mostly its own. Each pair is scored exactly
    once, with the same token sets as without blocks, so the scores do not
    depend on the budget.
    """
    budget = int(min(max(token_memory_mb, VERIFY_MIN_MB), max(VERIFY_BLOCK_MB, VERIFY_MIN_MB)) * 2**20) // 8
    cost = sizes[pairs.left] + sizes[pairs.right] + 2
    scores = np.empty(len(pairs), dtype=np.float64)
    shingled = 0
    blocks = split_sizes(cost, budget)
    chars = batch.records.text_sizes() if batch.token_source is not None else None
    buffer: npt.NDArray[np.uint64] | None = None  # one buffer for every block's sets: its memory is reused
    for a, b in blocks:  # one step per block of pairs
        left, right = pairs.left[a:b], pairs.right[a:b]
        involved = sorted_unique(np.concatenate([left, right]))
        shingled += len(involved)
        local = Pairs(np.searchsorted(involved, left), np.searchsorted(involved, right))
        if chars is None:
            block = batch.subset(involved)
        else:
            need = int(sizes[involved].sum())
            if buffer is None or len(buffer) < need:
                buffer = np.empty(max(need, budget if buffer is None else 0), dtype=np.uint64)
            block = streamed_subset(batch, involved, chars, buffer, engine.job.context.workers)
        scores[a:b] = engine.checked_scores(engine.verifier.score(block, local), len(local))
        del block
    del buffer
    hand_back_freed_memory()
    return scores, shingled, len(blocks)


def rows_sets(source: Callable[[Int64Array], TokenSets], rows: Int64Array, xy: tuple[int, int]) -> TokenSets:
    """The token sets of ``rows[x:y]`` from ``source`` (a batch's ``token_source``)."""
    return source(rows[xy[0]: xy[1]])


def place_parts(buffer: npt.NDArray[np.uint64], at: int, parts: list[TokenSets], workers: int) -> None:
    """The tokens of ``parts`` one after the other in ``buffer`` from ``at`` on, copied on ``workers``
    threads (numpy's copy releases the GIL: the copies of a chunk's sets, a few hundred MB, are not left
    to one core while the other waits)."""
    sizes = [len(p.tokens) for p in parts]
    starts = np.cumsum([at] + sizes[:-1]).tolist() if parts else []

    def place(i: int) -> None:
        buffer[starts[i]: starts[i] + sizes[i]] = parts[i].tokens

    map_ordered(place, range(len(parts)), workers)


def score_windowed(
    engine: Engine, batch: Batch, pairs: Pairs, sizes: Int64Array, token_memory_mb: float
) -> tuple[npt.NDArray[np.float64], int, int, int]:
    """:func:`score_streamed` with each candidate record's set computed once, mostly: ``(scores, records
    shingled, blocks, far pairs)``.

    The pairs' records are read in the order of
    :func:`~er_framework.kernels.windows.verify_windows` (reverse Cuthill-McKee
    of the candidate graph), in chunks of half the budget (``token_memory_mb``,
    at least :data:`VERIFY_MIN_MB`, at most :data:`VERIFY_WINDOW_MB`); a pair is verified when the later of its two
    records' chunks is read, with the chunk before it still in memory (one
    buffer of two halves: even chunks end at its middle, odd ones start there,
    so a chunk and the one before are side by side, nothing copied between
    steps). Pairs whose records lie
    further apart (far pairs) are verified the same way in a window order of
    their own graph (sparser: on 1,000,000 documents, 1.03 M pairs, 144 k far
    pairs in the first round, 47 k in the second, none in the third; 753 k
    records shingled against 1.39 M in record order), or by
    :func:`score_streamed` when no pair was near. Each pair is
    scored once, with the same token sets, so the scores are those of
    :func:`score_streamed` (tests compare them).
    """
    source = batch.token_source
    assert source is not None
    keep_freed_memory()  # the chunks' temporaries reuse the memory of the last ones (kernels.allocator)
    budget = int(min(max(token_memory_mb, VERIFY_MIN_MB), max(VERIFY_WINDOW_MB, VERIFY_MIN_MB)) * 2**20) // 8
    cost = np.asarray(sizes, dtype=np.int64) + 1
    plan = verify_windows(len(batch), pairs.left, pairs.right, cost, max(budget // 2, 1))
    scores = np.empty(len(pairs), dtype=np.float64)
    near = np.flatnonzero(~plan.far)
    near = near[np.argsort(plan.pair_chunk[near], kind="stable")]
    bounds = np.searchsorted(plan.pair_chunk[near], np.arange(plan.chunks + 1, dtype=np.int64))
    chunk_cost = np.add.reduceat(cost[plan.order], plan.starts[:-1]) if plan.chunks else np.zeros(0, dtype=np.int64)
    # one buffer of two halves: an even chunk's sets end at the middle, an odd chunk's start there, so that
    # a chunk and the one before lie side by side around the middle with no copy between steps
    half = int(chunk_cost.max()) if len(chunk_cost) else 0
    buffer = np.empty(2 * half, dtype=np.uint64)
    chars = batch.records.text_sizes()
    workers = engine.job.context.workers
    bare = replace(batch, tokens=None, token_source=None)
    before: tuple[int, Int64Array, Int64Array] | None = None  # the chunk before: (number, rows, set sizes)
    # the next chunks' texts are asked of the page cache while this one is scored (a file-backed corpus:
    # read in window order, scattered over the file; Records.prefetch), on a thread of its own
    chunk_rows = [plan.order[plan.starts[c]: plan.starts[c + 1]] for c in range(plan.chunks)]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="er-prefetch") as hints:
        hinted = [hints.submit(batch.records.prefetch, chunk_rows[c]) for c in range(min(PREFETCH_CHUNKS, plan.chunks))]
        for c in range(plan.chunks):  # one step per chunk of records in window order
            rows = chunk_rows[c]
            if c + PREFETCH_CHUNKS < plan.chunks:
                hinted.append(hints.submit(batch.records.prefetch, chunk_rows[c + PREFETCH_CHUNKS]))
            slices = split_sizes(chars[rows] + 1, FUSED_SLICE_CHARS)
            parts = map_ordered(partial(rows_sets, source, rows), slices, workers)
            mine = sum(len(p.tokens) for p in parts)
            if mine > half:  # a shingler whose sets outgrow the counts (not the contract's): a larger buffer
                grown = np.empty(2 * mine, dtype=np.uint64)
                if before is not None:  # the chunk before keeps its side of the middle
                    m = int(before[2].sum())
                    if before[0] % 2 == 0:
                        grown[mine - m: mine] = buffer[half - m: half]
                    else:
                        grown[mine: mine + m] = buffer[half: half + m]
                buffer, half = grown, mine
            place_parts(buffer, half - mine if c % 2 == 0 else half, parts, workers)
            set_sizes = np.concatenate([p.sizes for p in parts]) if parts else np.zeros(0, dtype=np.int64)
            del parts
            ps = near[bounds[c]: bounds[c + 1]]
            if len(ps):
                chunks = [(c, rows, set_sizes)] if before is None else (
                    [(c, rows, set_sizes), before] if c % 2 == 0 else [before, (c, rows, set_sizes)])
                first = chunks[0]
                lo = half - int(first[2].sum()) if first[0] % 2 == 0 else half
                block_rows = np.concatenate([x[1] for x in chunks])
                indptr = np.zeros(len(block_rows) + 1, dtype=np.int64)
                np.cumsum(np.concatenate([x[2] for x in chunks]), out=indptr[1:])
                # a record's row in the block: its place in its chunk, after the rows of the chunk before it
                offset = np.zeros(plan.chunks + 1, dtype=np.int64)
                if len(chunks) == 2:
                    offset[chunks[1][0]] = len(first[1])
                pl, pr = plan.position[pairs.left[ps]], plan.position[pairs.right[ps]]
                chunk_l, chunk_r = plan.chunk_of(pl), plan.chunk_of(pr)
                local = Pairs(pl - plan.starts[chunk_l] + offset[chunk_l], pr - plan.starts[chunk_r] + offset[chunk_r])
                block = bare.subset(block_rows)
                block.tokens = TokenSets(indptr, buffer[lo: lo + int(indptr[-1])])
                scores[ps] = engine.checked_scores(engine.verifier.score(block, local), len(local))
                del block
            before = (c, rows, set_sizes)
    for done in hinted:  # a hint that failed other than by the operating system (FileTexts.prefetch) is a bug
        done.result()
    del buffer
    shingled, blocks = len(plan.order), plan.chunks
    far = np.flatnonzero(plan.far)
    if len(far):
        far_pairs = Pairs(pairs.left[far], pairs.right[far])
        if len(far) < len(pairs):  # a window order of the far pairs' own (sparser) graph
            scores[far], more, more_blocks, _ = score_windowed(engine, batch, far_pairs, sizes, token_memory_mb)
        else:  # no pair was near: in record order
            scores[far], more, more_blocks = score_streamed(engine, batch, far_pairs, sizes, token_memory_mb)
        shingled, blocks = shingled + more, blocks + more_blocks
    hand_back_freed_memory()
    return scores, shingled, blocks, int(len(far))


def streamed_subset(
    batch: Batch, rows: Int64Array, chars: Int64Array, buffer: npt.NDArray[np.uint64], workers: int
) -> Batch:
    """``batch.subset(rows)`` of a streamed batch, its token sets recomputed (``batch.token_source``)
    slice by slice (:data:`FUSED_SLICE_CHARS` characters) on ``workers`` threads and laid out in
    ``buffer`` (at least the rows' token counts long; reused block after block, so that its memory is
    not new to the process every time; the sets are those of ``batch.tokens_for(rows)``)."""
    source = batch.token_source
    assert source is not None
    slices = split_sizes(chars[rows] + 1, FUSED_SLICE_CHARS)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    used = 0
    parts = map_ordered(lambda xy: source(rows[xy[0]: xy[1]]), slices, workers)
    for (x, y), part in zip(slices, parts):
        m = len(part.tokens)
        if used + m > len(buffer) or part.tokens.dtype != np.uint64:  # not the counts' bound: no buffer
            return subset_joined(batch, rows, parts)
        buffer[used: used + m] = part.tokens
        indptr[x + 1: y + 1] = used + part.indptr[1:]
        used += m
    del parts
    sub = replace(batch, tokens=None, token_source=None).subset(rows)
    sub.tokens = TokenSets(indptr, buffer[:used])
    return sub


def subset_joined(batch: Batch, rows: Int64Array, parts: list[TokenSets]) -> Batch:
    """``batch.subset(rows)`` with the rows' token sets ``parts`` (slices in row order) joined."""
    sub = replace(batch, tokens=None, token_source=None).subset(rows)
    sub.tokens = TokenSets.concat(parts)
    return sub


@dataclass
class Verified:
    """What the verify stage produced (global indices)."""

    scores: npt.NDArray[np.float64]  # one per candidate pair
    verified: Pairs  # candidates at or above the threshold, scored
    pairs: Pairs  # verified + exact-duplicate pairs: the graph that is clustered and written
    info: dict[str, Any]


def verify(engine: Engine, batch: Batch, candidates: Pairs, exact: Exact, shingled: Shingled, n: int) -> Verified:
    """Score the candidates with the job's verifier; keep ``score >= threshold``; add the exact pairs."""
    local_of = np.full(n, -1, dtype=np.int64)  # verifiers see the batch (active records)
    local_of[exact.active] = np.arange(len(exact.active), dtype=np.int64)
    local_cand = Pairs(local_of[candidates.left], local_of[candidates.right])
    info: dict[str, Any] = {}
    # a verifier may reject some pairs from the signatures alone (jaccard's skip_unlikely); not with
    # threshold: auto, which chooses from every candidate's own score
    screen = ability(engine.verifier, SignatureScreen)
    decided = screen.decided_by_signatures(batch, local_cand) if screen is not None and not engine.auto else None
    todo = local_cand
    if decided is not None:
        skip, estimate = decided
        todo = local_cand.select(~skip)
        info["decided_by_signatures"] = int(skip.sum())
    if batch.tokens is None and batch.token_source is not None and "tokens" in engine.verifier.needs:
        # streamed corpus: the token sets of the records in candidate pairs
        # only, a block of pairs at a time so that the sets in memory stay
        # within token_memory_mb (pairs are sorted by left record, so a
        # record's pairs mostly fall into one block)
        scored, info["records_reshingled"], info["verify_blocks"], info["verify_far_pairs"] = score_windowed(
            engine, batch, todo, shingled.sizes, engine.job.spec.token_memory_mb
        )
    else:
        scored = engine.checked_scores(engine.verifier.score(batch, todo), len(todo))
    if decided is None:
        scores = scored
    else:
        scores = np.asarray(estimate, dtype=np.float64).copy()
        scores[~skip] = scored
    if engine.auto:  # threshold: auto, chosen from every candidate's score
        info["threshold_chosen"] = engine.choose_threshold(scores)
    keep = scores >= engine.threshold
    verified = Pairs(candidates.left[keep], candidates.right[keep], scores[keep])
    info.update({"threshold": engine.threshold, "verified_pairs": int(len(verified)), "rejected_pairs": int((~keep).sum())})
    return Verified(scores, verified, with_exact(verified, exact.pairs), info)


def explainer(engine: Engine, batch: Batch, exact: Exact, n: int) -> Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None:
    """The verifier's comparisons of any pairs of the job's records (global indices; a collapsed copy is
    compared as its representative), or None when the verifier cannot explain its scores."""
    if not engine.verifier.explainable:
        return None
    group_of, starts, _sizes, members = exact_groups(exact, n)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[exact.active] = np.arange(len(exact.active), dtype=np.int64)
    row = row_of[members[starts][group_of]]

    def explain(pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
        return engine.comparisons(batch, Pairs(row[pairs.left], row[pairs.right]))

    return explain


def with_exact(verified: Pairs, exact_pairs: Pairs) -> Pairs:
    """The verified pairs and the exact-duplicate pairs (score 1.0), normalized."""
    exact_score = exact_pairs.score if exact_pairs.score is not None else np.ones(len(exact_pairs))
    verified_score = verified.score if verified.score is not None else np.ones(len(verified))
    return Pairs(
        np.concatenate([exact_pairs.left, verified.left]),
        np.concatenate([exact_pairs.right, verified.right]),
        np.concatenate([exact_score, verified_score]),
    ).normalized()


# ------------------------------------------------------------------ training labels

#: what a labels file may write for a match and for a non-match (case-insensitive)
MATCH_WORDS = frozenset({"1", "yes", "y", "true", "t", "match", "same"})
NON_MATCH_WORDS = frozenset({"0", "no", "n", "false", "f", "non-match", "nonmatch", "no-match", "different"})
LABEL_COLUMNS = ("left_source", "left_id", "right_source", "right_id", "match")


def record_rows(records: Records, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The index of each wanted record, by ``(source name, id)`` (records not found are absent)."""
    ids = np.asarray(records.ids, dtype=object)
    names = np.asarray(records.source_names, dtype=object)
    keys = set(map(str, (i for _, i in wanted)))
    hit = np.flatnonzero(np.isin(ids, list(keys))) if keys else np.zeros(0, dtype=np.int64)
    found = {(str(names[records.source[k]]), str(ids[k])): int(k) for k in hit}
    return {key: found[key] for key in wanted if key in found}


def read_labels(job: Job, records: Records) -> tuple[Int64Array, Int64Array, npt.NDArray[np.bool_], dict[str, Any]]:
    """The labelled pairs of ``training: {labels: FILE}`` as global record indices: ``(left, right, match, stats)``.

    Rows with an empty ``match`` are skipped (a file ``er review`` wrote and
    nobody finished); ids no source holds, unreadable labels and a pair of a
    record with itself are problems naming their line, all reported at once.
    """
    path = job.training_path()
    assert path is not None
    rows = list(read_output_table(path, LABEL_COLUMNS))
    index = record_rows(records, {(str(r[0]), str(r[1])) for _, r in rows} | {(str(r[2]), str(r[3])) for _, r in rows})
    left: list[int] = []
    right: list[int] = []
    match: list[bool] = []
    problems: list[Problem] = []
    skipped = 0
    for where, (ls, lid, rs, rid, label) in rows:
        word = str(label or "").strip().lower()
        if not word:
            skipped += 1
            continue
        if word not in MATCH_WORDS and word not in NON_MATCH_WORDS:
            problems.append(Problem(where=where, path="match", message=f"match {label!r} is neither a match nor a non-match",
                                    fix="write 1 (yes, true, match) or 0 (no, false, non-match), or leave it empty to skip the row"))
            continue
        a, b = index.get((str(ls), str(lid))), index.get((str(rs), str(rid)))
        for side, key, found in (("left", (ls, lid), a), ("right", (rs, rid), b)):
            if found is None:
                problems.append(Problem(where=where, path=f"{side}_id",
                                        message=f"no record {key[1]!r} in source {key[0]!r}",
                                        fix=f"sources: {', '.join(records.source_names)}; ids as in the job's data"))
        if a is None or b is None:
            continue
        if a == b:
            problems.append(Problem(where=where, message=f"a record paired with itself ({ls} {lid})", fix="remove the row"))
            continue
        left.append(a)
        right.append(b)
        match.append(word in MATCH_WORDS)
        if len(problems) > 20:
            break
    if problems:
        raise InputError(problems[:20])
    m = np.asarray(match, dtype=bool)
    if not m.any() or m.all():
        raise InputError(Problem(where=str(path), path="match",
                                 message=f"the labels hold {int(m.sum())} matches and {int((~m).sum())} non-matches "
                                 f"({skipped} rows without a label): training needs both",
                                 fix="label pairs of both kinds (er review OUT lists pairs on both sides of the threshold)"))
    stats = {"file": str(path), "matches": int(m.sum()), "non_matches": int((~m).sum()), "unlabelled_rows": skipped,
             "prior": job.spec.training.prior if job.spec.training is not None else None}
    return np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64), m, stats


def training_labels(job: Job, records: Records, exact: Exact) -> tuple[LabelledPairs | None, dict[str, Any]]:
    """``training:``'s labelled pairs as rows of the verifier's batch (the active records; a collapsed copy
    stands for its representative), or None without ``training:``; and the report's ``training`` stats."""
    if job.spec.training is None:
        return None, {}
    left, right, match, stats = read_labels(job, records)
    n = len(records)
    group_of, starts, _sizes, members = exact_groups(exact, n)
    rep = members[starts][group_of]  # each record's representative (itself when it has no copies)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[exact.active] = np.arange(len(exact.active), dtype=np.int64)
    a, b = row_of[rep[left]], row_of[rep[right]]
    same = a == b
    stats["pairs_of_exact_copies"] = int(same.sum())  # both sides one text: not evidence of anything
    keep = ~same
    return LabelledPairs(Pairs(a[keep], b[keep]), match[keep], job.spec.training.prior), stats


# ------------------------------------------------------------------ cluster


def cluster(engine: Engine, n: int, pairs: Pairs) -> Int64Array:
    """The job's clusterer over the verified pairs: canonical labels (0, 1, … in order of first record)."""
    raw = np.asarray(engine.clusterer.cluster(n, pairs))
    if raw.shape != (n,):
        raise ErError(f"clusterer {engine.distribution(engine.clusterer)} returned {raw.shape} labels for {n} records")
    return canonical_labels(raw)


def cluster_stats(labels: Int64Array) -> dict[str, int]:
    """Counts of the clusters for the report."""
    counts = np.bincount(labels) if len(labels) else np.zeros(0, dtype=np.int64)
    return {
        "count": int(len(counts)),
        "singletons": int((counts == 1).sum()),
        "largest": int(counts.max()) if len(counts) else 0,
        "records_in_multi_record_clusters": int(counts[counts > 1].sum()),
    }


# ------------------------------------------------------------------ answer: the pairs a job reports


#: bytes of memory one listed pair costs until it is written (indices, score, the table's id columns)
ANSWER_PAIR_BYTES = 64
#: the listed pairs may take this share of the memory still available
ANSWER_MEMORY_SHARE = 0.4


@dataclass
class Answer:
    """The pairs a job reports (``pairs.csv``, ``Result.pairs``), global indices, normalized, scored."""

    pairs: Pairs
    #: with a clusterer that selects pairs (``one_to_one``): every verified pair before it (``verified_pairs.csv``)
    verified: Pairs | None
    stats: dict[str, Any]


def exact_groups(exact: Exact, n: int) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array]:
    """The groups of exact copies that the exact-duplicate stage collapsed, every record in one group
    (a record without copies alone): ``(group_of, starts, sizes, members)``; group ``g`` is
    ``members[starts[g] : starts[g] + sizes[g]]`` in record order, its representative first."""
    rep_of = np.arange(n, dtype=np.int64)
    if exact.stats.get("records_collapsed", 0):
        # collapsed copies are linked as a star to their representative, the group's smallest index
        rep_of[exact.pairs.right] = exact.pairs.left
    members, starts, sizes = group_sorted(rep_of)
    group_of = np.empty(n, dtype=np.int64)
    group_of[rep_of[members[starts]]] = np.arange(len(starts), dtype=np.int64)
    return group_of[rep_of], starts, sizes, members


def answer(job: Job, exact: Exact, verified: Pairs, labels: Int64Array, selects_pairs: bool) -> Answer:
    """The pairs the job reports: every pair at or above the threshold after the job's last step.

    Exact copies collapsed onto a representative (dedup modes) are listed
    with every pair among them (score 1.0), and each verified pair of a
    representative with every copy on either side (the copies' text is the
    representative's, so is their score): a group of k copies gives
    k (k - 1) / 2 pairs, a near-duplicate of it k more. ``output:
    {exact_pairs: star}`` lists each group as a star around its
    representative and pairs near-duplicates with the representative only
    (groups too large to list); the report counts the pairs either way. A
    clusterer that selects pairs (``one_to_one``) reports the pairs inside
    its clusters, the final links; the verified pairs before it go to
    ``verified``.
    """
    n = len(labels)
    group_of, starts, sizes, members = exact_groups(exact, n)
    vs = verified.score if verified.score is not None else np.ones(len(verified))
    within = sizes * (sizes - 1) // 2
    implied = int(within.sum()) + int((sizes[group_of[verified.left]] * sizes[group_of[verified.right]]).sum())
    mode = job.spec.output.exact_pairs
    stats: dict[str, Any] = {"exact_pairs": mode, "pairs_with_every_copy": implied}
    if mode == "star" or not exact.stats.get("records_collapsed", 0):
        listed = with_exact(verified, exact.pairs)
    else:
        avail = available_memory()
        if avail is not None and implied * ANSWER_PAIR_BYTES > ANSWER_MEMORY_SHARE * avail:
            raise InputError(Problem(
                where=str(job.config_path), path="output.exact_pairs",
                message=f"listing every pair of the exact copies gives {implied:,} pairs "
                f"(~{size_text(implied * ANSWER_PAIR_BYTES)}): more than this process can hold "
                f"({size_text(avail)} of memory available)",
                fix="set output: {exact_pairs: star} to list each group of copies as a star around its first record "
                "(the report still counts every pair)",
            ))
        left, right = pairs_in_groups(members, starts, sizes)
        x, y, p = cross_group_pairs(group_of[verified.left], group_of[verified.right], starts, sizes, members)
        listed = Pairs(np.concatenate([left, x]), np.concatenate([right, y]),
                       np.concatenate([np.ones(len(left)), vs[p]])).normalized()
    kept = listed
    if selects_pairs:
        kept = listed.select(labels[listed.left] == labels[listed.right])
        stats["verified_pairs_listed"] = int(len(listed))
    stats["pairs_listed"] = int(len(kept))
    stats["pairs_across_clusters"] = int((labels[kept.left] != labels[kept.right]).sum())
    return Answer(kept, listed if selects_pairs else None, stats)


# ------------------------------------------------------------------ write


def pairs_table(records: Records, pairs: Pairs) -> dict[str, Any]:
    """A pairs table: ``left_source, left_id, right_source, right_id, score``."""
    ids = np.asarray(records.ids, dtype=object)
    names = np.asarray(records.source_names, dtype=object)
    src = records.source
    return {
        "left_source": names[src[pairs.left]],
        "left_id": ids[pairs.left],
        "right_source": names[src[pairs.right]],
        "right_id": ids[pairs.right],
        "score": pairs.score if pairs.score is not None else np.ones(len(pairs)),
    }


def comparisons_table(
    records: Records, scored: Pairs, explain: Callable[[Pairs], dict[str, npt.NDArray[Any]]]
) -> dict[str, Any]:
    """The ``comparisons`` table: the ids of each scored pair, the verifier's terms of its score
    (:meth:`Engine.comparisons` through :func:`explainer`) and the score the run gave it, last."""
    table = pairs_table(records, scored)
    score = table.pop("score")
    table.update(explain(Pairs(scored.left, scored.right)))
    table["score"] = score
    return table


def output_tables(
    records: Records, found: Answer, labels: Int64Array, *, candidates: Pairs | None = None,
    comparisons: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """The tables of a run, by name: ``pairs`` and ``clusters`` (ids and source names), ``verified_pairs``
    with a pair-selecting clusterer, ``candidates`` and ``comparisons`` when given."""
    tables = {
        "pairs": pairs_table(records, found.pairs),
        "clusters": {
            "source": np.asarray(records.source_names, dtype=object)[records.source],
            "id": np.asarray(records.ids, dtype=object),
            "cluster_id": labels,
        },
    }
    if found.verified is not None:
        tables["verified_pairs"] = pairs_table(records, found.verified)
    if candidates is not None:
        tables["candidates"] = pairs_table(records, candidates)
    if comparisons is not None:
        tables["comparisons"] = comparisons
    return tables


def write(
    job: Job, out_path: Path, records: Records, pairs: Pairs, labels: Int64Array, report: dict[str, Any],
    *, tables: dict[str, dict[str, Any]], as_read: Records | None = None, html: bool = True,
) -> dict[str, Path]:
    """The run's ``tables`` (:func:`output_tables`), report.json and report.html, committed as one set
    (``pairs``: the pairs of the pairs table, which report.html's cluster examples show).

    Everything is written into a stage beside the outputs and swapped in
    under the folder's lock (:mod:`er_framework.io.outputs`); outputs of an
    earlier run that this one does not write (a candidates table, the other
    format) are removed in the same commit. ``records`` needs ids and
    sources only; ``as_read`` (the records with their fields as read) lets
    report.html show example records without reading the sources again. A
    failure drawing report.html keeps the other outputs and says how to draw
    it again.
    """
    fmt = job.spec.output.format
    names = [f"{t}.{fmt}" for t in tables] + ["report.json"] + (["report.html"] if html else [])
    report["outputs"] = names
    with OutputStage(out_path) as stage:
        write_files(stage.path, tables, {"report": report}, fmt=fmt)
        if not html:
            return {name.rsplit(".", 1)[0]: path for name, path in stage.commit(names, replace_all=True).items()}
        try:  # the visual report is derived from the outputs; a failure must not lose them
            run = RunData(as_read, pairs, labels) if as_read is not None else None
            stage.write_text("report.html", render_report(stage.path, config_path=job.config_path, run=run,
                                                          shown_dir=out_path))
        except Exception as exc:  # noqa: BLE001 - reported, outputs kept
            names.remove("report.html")
            print(f"warning: report.html not written: {type(exc).__name__}: {exc} "
                  f"(the other outputs are complete; retry with: er report {out_path})", file=sys.stderr)
        written = stage.commit(names, replace_all=True)
    # keys: the table names, "report" (report.json) and "report_html"
    return {("report_html" if name == "report.html" else name.rsplit(".", 1)[0]): path for name, path in written.items()}


def job_inputs(job: Job) -> list[tuple[str, Path]]:
    """Every input of a job: ``(what, path)`` of the job file and of each source's files (or page folder)."""
    inputs: list[tuple[str, Path]] = [("the job file", job.config_path)]
    for i, spec in enumerate(job.spec.sources):
        try:
            paths = job.source_paths(i)
        except ErError:
            paths = [job.source_path(i)]
        inputs += [(f"sources[{i}] {spec.name!r}", p) for p in paths]
    return inputs


def require_out_dir(job: Job, out_dir: str | Path | OutputDir | None, write: bool) -> Path | None:
    """The output folder of a run, checked before any work (:func:`er_framework.io.outputs.check_output_dir`):
    an error when the run writes and none is given, when it is an empty string, holds an input, holds files
    er did not write (unless forced) or cannot be written."""
    force = False
    where = "--out"
    if isinstance(out_dir, OutputDir):
        force, out_dir = out_dir.force, out_dir.path
    if out_dir is None:
        where = f"{job.config_path}: output.dir"
    if out_dir is not None and str(out_dir).strip() == "" and write:
        return check_output_dir(out_dir, [], where=where)
    out_path = job.output_dir(out_dir)
    if not write:
        return out_path
    if out_path is None:
        raise InputError(Problem(where=str(job.config_path), path="output.dir", message="no output folder given",
                                 fix="pass --out DIR or set output: {dir: …} in the YAML"))
    return check_output_dir(out_path, job_inputs(job), force=force, where=where)
