"""The Dask executor's worker side: the job rebuilt once per worker process, and the tasks that read,
block, serve and score the input partitions (:mod:`er_framework.executors.dask` describes the plan).

Dask pickles a task by reference (module and name): a worker imports this module to run it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import CodeFitted, GroupedKeys, Keyed, LabelledCodes, ability
from er_framework.config.resolve import resolve_job
from er_framework.config.spec import SourceSpec
from er_framework.config.yaml_load import load_yaml
from er_framework.data import Batch, LabelledPairs, Pairs, Records
from er_framework.engine import stages
from er_framework.engine.engine import Engine
from er_framework.engine.model import Model
from er_framework.engine.report_parts import part_weights
from er_framework.engine.score_scale import Weights
from er_framework.engine.stages.golden import job_fields
from er_framework.errors import InputError, PluginError, Problem
from er_framework.io.database_parts import DatabasePiece, read_database_piece_group, write_database_pieces
from er_framework.io.database_read import DatabaseRows
from er_framework.io.frame_parts import records_from_chunk
from er_framework.io.source_files import read_source, read_source_with_stats
from er_framework.kernels.groups import unpack_pairs

Int64Array = npt.NDArray[np.int64]


#: test hook: seconds each verify task sleeps (the worker-kill test needs time to kill)
SLOW_ENV = "ER_DASK_TEST_TASK_SECONDS"


@dataclass(frozen=True)
class Part:
    """One input partition: a source file (a local path or a URL), a byte range of it, one Parquet file of a
    dataset folder (``hive``: its partition columns), or a chunk of a table given in memory (``data``)."""

    source: int
    #: the file read, or (``data``) where the chunk is, as messages name it
    path: str
    byte_range: tuple[int, int] | None
    #: a Parquet file of a dataset: its hive partition columns (:class:`~er_framework.io.parquet_dataset.DatasetFile`)
    hive: tuple[tuple[str, str | None], ...] | None = None
    #: a chunk of a source given in memory (:func:`~er_framework.io.frame_parts.frame_chunks`): a Dask partition's
    #: ``Delayed`` (computed by the task that reads it, on its worker) or a ``pyarrow.Table`` slice
    data: Any = dataclasses.field(default=None, compare=False, repr=False)
    #: a part of a database source read into pieces (:mod:`~er_framework.io.database_parts`): what was read, and
    #: this partition's pieces (consecutive rows)
    database: DatabaseRows | None = dataclasses.field(default=None, compare=False, repr=False)
    pieces: tuple[DatabasePiece, ...] = ()


@dataclass(frozen=True)
class JobRef:
    """What a worker needs to rebuild the job: the YAML text and where it came from (``frames``: the sources given
    in memory, which need no path)."""

    text: str
    filename: str
    base_dir: str
    digest: str
    frames: tuple[str, ...] = ()


_JOBS: dict[str, Engine] = {}


def _tune_malloc() -> None:
    """Let glibc serve large numpy temporaries from the heap again on Dask workers.

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``; setting
    any malloc threshold turns off glibc's dynamic mmap threshold, so every
    array above 128 KB is mmapped and unmapped, page-faulting on each use:
    the shingling and signing tasks ran 2.3x slower (measured), and the
    65 KB trim threshold gives pages back after every task. Fixed 64 MB
    thresholds restore the speed; free memory above 64 MB is still returned.
    """
    if sys.platform != "linux":
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 * 2**20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 * 2**20)  # M_TRIM_THRESHOLD: free heap above 64 MB still goes back
    except (OSError, AttributeError):  # not glibc
        pass


def engine(ref: JobRef) -> Engine:
    """The job's components on this worker (built once per process)."""
    got = _JOBS.get(ref.digest)
    if got is None:
        if os.environ.get("MALLOC_TRIM_THRESHOLD_"):
            _tune_malloc()

        data, lines, problems = load_yaml(ref.text, ref.filename)
        base, config = Path(ref.base_dir), Path(ref.filename)
        job = resolve_job(data, lines, ref.filename, base, problems, check_files=False, config_path=config, frames=list(ref.frames))
        job.context.workers = 1
        got = _JOBS[ref.digest] = Engine(job)
    return got


def _model_engine(ref: JobRef, model: Model | None) -> Engine:
    """The job's engine on this worker applying ``model`` (the client's: the shingles its ``prune`` stage
    dropped, a saved model's fitted state): one engine per model object this worker holds (a new value, the
    job's engine is not changed, so the tasks of its threads need no lock)."""
    eng = engine(ref)
    if model is None:
        return eng
    key = (ref.digest, id(model))
    got = _MODEL_ENGINES.get(key)
    if got is None or got[0] is not model:
        while len(_MODEL_ENGINES) >= 4:  # models of earlier runs on this worker
            _MODEL_ENGINES.pop(next(iter(_MODEL_ENGINES)))
        got = _MODEL_ENGINES[key] = (model, eng.with_model(model))
    return got[1]


#: (job digest, id of the model) -> (the model, kept alive so that its id stays its own; its engine)
_MODEL_ENGINES: dict[tuple[str, int], tuple[Model, Engine]] = {}


def read_normalized(ref: JobRef, part: Part) -> tuple[Records, dict[str, Any]]:
    """The partition's records, read and normalized by the engine's stages (as the local executor does),
    and the normalize stage's per-field stats."""
    eng = engine(ref)
    recs, stats = stages.normalize(eng.job, read_as_read(ref, part))
    recs.source[:] = part.source
    return recs, stats


def read_as_read(ref: JobRef, part: Part) -> Records:
    """The partition's records as the local run's read stage gives them, before normalizing: HTML columns made
    text, and every field of the job in the local records' order (a field its source lacks missing)."""
    return read_as_read_stats(ref, part)[0]


def read_as_read_stats(ref: JobRef, part: Part) -> tuple[Records, dict[str, Any], dict[str, Any]]:
    """:func:`read_as_read` with the reader's statistics (:func:`read_part_stats`) and the HTML extraction's."""
    job = engine(ref).job
    recs, reader = read_part_stats(part, job.spec.sources[part.source])
    html = stages.html_to_text(job, part.source, recs)
    return recs.with_fields(job_fields(job)), reader, html


def read_part_stats(part: Part, spec: SourceSpec) -> tuple[Records, dict[str, Any]]:
    """The partition as read (:func:`read_part`'s records), with the reader's statistics as the local read stage
    gives them: a whole local input is read by :func:`read_source_with_stats` (a page folder gives its files'
    counts, a data file none), a chunk given in memory says so; a byte range, a dataset file or database pieces
    have none here (a database source's are the client's: read on a worker into pieces)."""
    if part.data is not None:
        return read_part(part, spec), {"given_in_memory": True}
    if part.database is None and part.byte_range is None and part.hive is None:
        return read_source_with_stats(part.path, where=f"sources[{part.source}]", **spec.read_options())
    return read_part(part, spec), {}


def read_part(part: Part, spec: SourceSpec) -> Records:
    """The records of an input partition as read (not normalized): a file or byte range of one, a Parquet file of a
    dataset, or a chunk of a table given in memory (a Dask partition computed here)."""
    opts = spec.read_options()
    if part.database is not None:
        return read_database_piece_group(part.database, part.pieces, id_column=spec.id, name=spec.name, layout=spec.layout)
    if part.data is not None:
        return records_from_chunk(
            part.data,
            where=part.path,
            **{k: opts[k] for k in ("id_column", "fields", "name", "layout", "max_record_mb", "columns")},
        )
    return read_source(part.path, where=f"sources[{part.source}]", byte_range=part.byte_range, hive=part.hive, **opts)


def task_database_pieces(ref: JobRef, source: int, folder: str, piece_bytes: int) -> tuple[DatabaseRows, list[DatabasePiece], float]:
    """Database source ``source`` read once on this worker into pieces in ``folder`` (the rows in the result's
    order, as the local reader reads them): what was read with its statistics, the pieces, the seconds."""
    job = engine(ref).job
    t0 = time.perf_counter()
    own = Path(folder) / f"source-{source}"  # each source's pieces apart
    own.mkdir(exist_ok=True)
    read, pieces = write_database_pieces(own, **stages.database_arguments(job, source), piece_bytes=piece_bytes)
    return read, pieces, time.perf_counter() - t0


def _read(ref: JobRef, part: Part) -> Records:
    """The partition's records, read and normalized (:func:`read_normalized`)."""
    return read_normalized(ref, part)[0]


def task_frequencies(ref: JobRef, part: Part, active_local: Int64Array) -> tuple[npt.NDArray[np.uint64], Int64Array, int, Int64Array]:
    """``prune_shingles:`` pass 1 on a partition's active records: its shingles' document frequencies
    ``(tokens, df, records)`` and each record's distinct shingles (:func:`stages.shingle_frequencies`)."""
    eng = engine(ref)
    recs = _read(ref, part).take(active_local)
    freq, sizes, _, _ = stages.shingle_frequencies(eng, recs)
    tokens, df = freq.table()
    return tokens, df, freq.records, sizes


@dataclass
class Blocked:
    """What blocking one input partition gives (a task result; the client picks its pieces)."""

    #: bucket entries ``(keys, global index, source, blocker)`` split into the shuffle parts
    pieces: list[tuple[Int64Array, ...]]
    #: per window pass: the partition's records sorted by ``(key, global index)``: ``(keys, index, source)``
    runs: list[tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]]
    #: per window pass: evenly spaced ``(keys, index)`` of the run, to choose the range boundaries
    samples: list[tuple[npt.NDArray[Any], Int64Array]]
    #: the shingler's report of the partition (:meth:`~er_framework.capabilities.Partitionable.shingle_reported`)
    report: dict[str, Any]
    #: the input problems found in this partition (bad values), reported with every other partition's
    problems: list[Problem]
    #: each blocker's :meth:`~er_framework.capabilities.Keyed.partition_report` (``{}`` for window blockers)
    blocker_reports: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: the partition's token counts, as the local executor counts them: ``(records, empty sets, tokens)``
    tokens: tuple[int, int, int] = (0, 0, 0)
    #: with ``prune_shingles:``, the distinct shingles each active record lost
    lost: Int64Array | None = None


#: sort keys per partition and window pass sent to choose the range boundaries
SAMPLE_KEYS = 64


def task_block(ref: JobRef, part: Part, offset: int, active_local: Int64Array, n_parts: int, model: Model | None = None) -> Blocked:
    """Blocking of a partition's active records: bucket ids split into ``n_parts`` shuffle parts, and
    each window pass's records sorted by ``(sort key, global index)`` with a sample of their keys.
    ``model``: the client's model (the shingles ``prune_shingles:`` removes, from its ``prune`` stage)."""
    eng = _model_engine(ref, model)
    try:
        recs = _read(ref, part).take(active_local)
        signed = eng.signed_batch(recs)  # the shingler's report and the lost tokens are values: no lock
        batch, sizes, lost, report = signed.batch, signed.sizes, signed.lost, signed.report or {}
        rows, keys, which = eng.keys(recs, batch)
        group = _lookup_groups(eng, batch, which)
        windows = eng.window_keys(batch)
        blocker_reports = [keyed.partition_report(batch) if (keyed := ability(b, Keyed)) is not None else {} for b in eng.blockers]
    except InputError as exc:  # reported with the other partitions' problems
        return Blocked([], [], [], {}, list(exc.problems))
    gidx = active_local[rows] + offset
    src = np.full(len(rows), part.source, dtype=np.int64)
    dest = (keys.view(np.uint64) % np.uint64(n_parts)).astype(np.int64)
    pieces: list[tuple[Int64Array, ...]] = []
    for j in range(n_parts):
        m = dest == j
        pieces.append((keys[m], gidx[m], src[m], which[m], group[m]))
    runs: list[tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]] = []
    samples: list[tuple[npt.NDArray[Any], Int64Array]] = []
    for _, w_rows, w_keys in windows:
        g = active_local[w_rows] + offset
        order = np.lexsort((g, w_keys))
        k, g = w_keys[order], g[order]
        runs.append((k, g, np.full(len(g), part.source, dtype=np.int32)))
        pick = np.unique(np.linspace(0, len(g) - 1, min(SAMPLE_KEYS, len(g))).astype(np.int64))
        samples.append((k[pick], g[pick]))
    tokens = (int(len(sizes)), int(np.count_nonzero(sizes == 0)), int(sizes.sum()))
    return Blocked(pieces, runs, samples, report, [], blocker_reports, tokens, lost)


def _lookup_groups(eng: Engine, batch: Batch, which: Int64Array) -> Int64Array:
    """The group of every entry of :meth:`Engine.keys` (``which``: their blockers, each blocker's entries
    together): the blocker's :meth:`~er_framework.capabilities.GroupedKeys.lookup_groups`, 0 without groups."""
    groups = np.zeros(len(which), np.int64)
    for i, b in enumerate(eng.blockers):
        grouped = ability(b, GroupedKeys)
        if grouped is None:
            continue
        at = np.flatnonzero(which == i)
        g: Any = grouped.lookup_groups(batch)
        if g is None or len(g) != len(at):
            raise PluginError(
                Problem(
                    where="blocker",
                    message=f"blocker {eng.distribution(b)}: lookup_groups gave "
                    f"{'no' if g is None else len(g)} groups for {len(at)} lookup keys",
                )
            )
        groups[at] = np.asarray(g, dtype=np.int64)
    return groups


def task_serve(ref: JobRef, part: Part, offset: int, wanted: list[Int64Array]) -> list[Records]:
    """The records of this partition that each pair part needs (the join by id)."""
    recs = _read(ref, part)
    return [recs.take(w - offset) for w in wanted]


def task_verify(
    ref: JobRef,
    packed: npt.NDArray[np.uint64],
    served: list[Records],
    needed: list[Int64Array],
    model: Model | None = None,
) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64], int, npt.NDArray[np.float64]]:
    """Scores of one part's candidate pairs: the pairs at or above the threshold, the candidate count,
    and (link modes, for the report's link answer) every candidate's score in ``packed`` order."""
    slow = os.environ.get(SLOW_ENV)
    if slow:
        time.sleep(float(slow))
    eng = _model_engine(ref, model)
    recs, left, right, li, ri = _join(packed, served, needed)
    scores = stages.screened_scores(eng, recs, Pairs(li, ri))  # skip_unlikely's screen, as locally
    keep = eng.keep(scores)
    all_scores = scores  # every candidate's score: the report's histograms and review, the link answer
    return left[keep], right[keep], scores[keep], int(len(packed)), all_scores


def task_comparisons(
    ref: JobRef,
    packed: npt.NDArray[np.uint64],
    served: list[Records],
    needed: list[Int64Array],
    verified: tuple[Any, ...],
    model: Model | None = None,
) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64], dict[str, npt.NDArray[Any]]]:
    """The ``comparisons`` rows of one part's candidates: ``(left, right, the run's score, the verifier's
    terms)`` (:meth:`Engine.comparisons` without its own score column, which the run's score replaces)."""
    eng = _model_engine(ref, model)
    recs, left, right, li, ri = _join(packed, served, needed)
    needs = eng.verifier.needs
    terms = eng.comparisons(eng.batch(recs, tokens="tokens" in needs, signatures="signatures" in needs), Pairs(li, ri)) if len(left) else {}
    terms.pop("score", None)
    return left, right, verified[4], terms


def task_weights(
    ref: JobRef,
    packed: npt.NDArray[np.uint64],
    served: list[Records],
    needed: list[Int64Array],
    candidates: tuple[Any, ...],
    refine: bool,
    model: Model | None = None,
) -> Weights:
    """One part's match weights in bits (:func:`~er_framework.engine.report_parts.part_weights`): the
    near-one pairs' weights read from the verifier's terms when ``refine``."""
    if not refine:
        return part_weights(candidates[2], None, None, False)
    eng = _model_engine(ref, model)
    recs, _, _, li, ri = _join(packed, served, needed)
    needs = eng.verifier.needs
    batch = eng.batch(recs, tokens="tokens" in needs, signatures="signatures" in needs)

    def explain(pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
        return eng.comparisons(batch, pairs)

    return part_weights(candidates[2], Pairs(li, ri), explain, True)


def _join(
    packed_or_pairs: Any,
    served: list[Records],
    needed: list[Int64Array],
) -> tuple[Records, Int64Array, Int64Array, Int64Array, Int64Array]:
    """The records served for a part, and each pair's two rows among them: ``(records, left, right, li, ri)``."""
    if isinstance(packed_or_pairs, tuple):
        left, right = packed_or_pairs
    else:
        left, right = unpack_pairs(packed_or_pairs)
    gids = np.concatenate(needed) if needed else np.zeros(0, np.int64)
    recs = Records.stack(served)
    order = np.argsort(gids, kind="stable")
    g_sorted = gids[order]
    return recs, left, right, order[np.searchsorted(g_sorted, left)], order[np.searchsorted(g_sorted, right)]


def task_codes(
    ref: JobRef, pairs: Any, served: list[Records], needed: list[Int64Array], model: Model | None = None
) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64]]:
    """A fitted verifier's code of every pair of one part (packed pairs, or ``(left, right)`` in their
    orientation), and the part's distinct codes with their counts (summed over the parts by the client)."""
    eng = _model_engine(ref, model)
    recs, left, _, li, ri = _join(pairs, served, needed)
    codes = eng.codes(recs, Pairs(li, ri)) if len(left) else np.zeros(0, np.int64)
    uniq, counts = np.unique(codes, return_counts=True)
    return codes, uniq.astype(np.int64), counts.astype(np.float64)


def task_labelled_codes(
    ref: JobRef, labelled: LabelledPairs, served: list[Records], needed: list[Int64Array], model: Model | None = None
) -> LabelledCodes:
    """The labelled pairs (global indices) as the fit takes them (:meth:`Engine.labelled_codes`), computed on
    their records served here."""
    eng = _model_engine(ref, model)
    recs, _, _, li, ri = _join((labelled.pairs.left, labelled.pairs.right), served, needed)
    return eng.labelled_codes(recs, LabelledPairs(Pairs(li, ri), labelled.match, labelled.lam))


def task_record_counts(ref: JobRef, part: Part, active: Int64Array) -> dict[str, Any] | None:
    """A fitted verifier's counts over one partition's active records (:meth:`CodeFitted.record_counts`),
    summed by the client into the fitted state."""
    eng = engine(ref)
    verifier = eng.verifier
    assert isinstance(verifier, CodeFitted)
    recs = _read(ref, part).take(active)
    return verifier.record_counts(Batch(records=recs, cross_source_only=eng.link, seed=eng.job.context.seed))


def task_score_codes(
    ref: JobRef,
    packed: npt.NDArray[np.uint64],
    coded: tuple[Int64Array, ...],
    table_codes: Int64Array,
    table: npt.NDArray[np.float64],
) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64], int, npt.NDArray[np.float64]]:
    """Scores of one part's pairs from the fitted table (score of each distinct code); as :func:`task_verify`."""
    slow = os.environ.get(SLOW_ENV)
    if slow:
        time.sleep(float(slow))
    eng = engine(ref)
    left, right = unpack_pairs(packed)
    scores = np.asarray(table, dtype=np.float64)[np.searchsorted(table_codes, coded[0])] if len(packed) else np.zeros(0)
    keep = eng.keep(scores)
    all_scores = scores  # every candidate's score: the report's histograms and review, the link answer
    return left[keep], right[keep], scores[keep], int(len(packed)), all_scores


__all__ = [
    "Blocked",
    "Int64Array",
    "JobRef",
    "Part",
    "SAMPLE_KEYS",
    "SLOW_ENV",
    "engine",
    "read_as_read",
    "read_as_read_stats",
    "read_normalized",
    "read_part",
    "read_part_stats",
    "task_block",
    "task_codes",
    "task_comparisons",
    "task_database_pieces",
    "task_frequencies",
    "task_labelled_codes",
    "task_record_counts",
    "task_score_codes",
    "task_serve",
    "task_verify",
    "task_weights",
]
