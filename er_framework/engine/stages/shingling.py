"""The prune stage (``prune_shingles:``: count every shingle, choose the ones dropped) and the shingle and
signature stages, streamed a step of records at a time within the job's token budget."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Partitionable, WholeCorpus, ability, has, multisets, shingle_with_report
from er_framework.config.resolve import Job
from er_framework.data import Batch, Records, Signatures, TokenSets
from er_framework.engine.engine import Engine, PrunedShingler
from er_framework.engine.log import StageLog
from er_framework.errors import InputError, Problem
from er_framework.kernels.allocator import hand_back_freed_memory, keep_freed_memory
from er_framework.kernels.df import DocFreq, df_limits, drop_tokens, pruned_tokens
from er_framework.kernels.hashing import unique_rows
from er_framework.kernels.parallel import map_ordered, split_sizes
from er_framework.memory import available_memory, size_text

__all__ = [
    "FUSED_SLICE_CHARS",
    "KEEP_FORECAST_SHARE",
    "PRUNE_MEMORY_SHARE",
    "Pruning",
    "Shingled",
    "TOKEN_MEMORY_SHARE",
    "check_frequency_memory",
    "check_pruning_leaves_shingles",
    "prune_shingles",
    "pruned_by_frequency",
    "pruned_share",
    "shingle_and_sign",
    "shingle_frequencies",
    "token_budget",
]

Int64Array = npt.NDArray[np.int64]


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
    raise InputError(
        Problem(
            where="prune_shingles",
            path="prune_shingles",
            message=f"counting the shingles{of} needs a table of {freq.entries:,} distinct shingles so far "
            f"({size_text(freq.nbytes)}, and a merge needs as much again): more than this process can hold "
            f"({size_text(avail)} of memory available)",
            fix="remove prune_shingles, or use a shingler with fewer distinct shingles (word or stopword shingles, "
            "a smaller k), or run on a machine with more memory",
        )
    )


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
        "max_df": spec.max_df,
        "min_df": spec.min_df,
        "max_df_floor": spec.max_df_floor,
        "records_counted": int(freq.records),
        "max_records": most,  # a shingle in more records than this is dropped (None: no upper limit)
        "min_records": least,  # … in fewer records than this
        "vocabulary": int(len(tokens)),
        "shingles_pruned": int(len(dropped)),
        "above_max_df": above,
        "below_min_df": int(len(dropped)) - above,
        "most_frequent_df": [int(x) for x in top],  # records holding each of the 10 most frequent shingles
    }
    if len(dropped) and len(dropped) == len(tokens):  # every shingle goes: refused before any record is signed
        check_pruning_leaves_shingles(int(freq.records), int(freq.records), report)
    return dropped, report


def pruned_share(before: Int64Array, lost: Int64Array) -> dict[str, Any]:
    """How much of each record's shingles the pruning took: the overall share, quantiles per record, records emptied."""
    before = np.asarray(before, dtype=np.int64)
    lost = np.asarray(lost, dtype=np.int64)
    share = np.divide(lost, before, out=np.zeros(len(before)), where=before > 0)
    q = np.quantile(share, [0.5, 0.9, 0.99]) if len(share) else np.zeros(3)
    return {
        "token_share_pruned": round(float(lost.sum() / before.sum()), 4) if before.sum() else 0.0,
        "record_share_pruned": {
            "median": round(float(q[0]), 4),
            "p90": round(float(q[1]), 4),
            "p99": round(float(q[2]), 4),
            "max": round(float(share.max()), 4) if len(share) else 0.0,
        },
        "records_pruned": int((lost > 0).sum()),
        "records_emptied": int(((before > 0) & (lost == before)).sum()),
    }


def check_pruning_leaves_shingles(records: int, emptied: int, report: dict[str, Any]) -> None:
    """Refuse a pruning that left every one of the ``records`` records that had shingles without any (``emptied``
    of them): no record can then be in a bucket or match another, and the run would end with an empty answer.
    A pruning that empties some records is a warning of the report (plausibility ``records_emptied_by_pruning``)."""
    if records <= 0 or emptied < records:
        return
    raise InputError(
        Problem(
            where="prune_shingles",
            message=f"max_df {report.get('max_df')}, min_df {report.get('min_df')} drop every shingle of "
            f"every one of the {records:,} records ({report.get('shingles_pruned', '?')} of {report.get('vocabulary', '?')} "
            f"distinct shingles; the most frequent is held by {(report.get('most_frequent_df') or ['?'])[0]} records): "
            "no record could share a shingle with another, so the run would find nothing",
            fix="raise max_df (a share such as 0.05, or a count above the records a shingle is shared by) or lower "
            "min_df, or remove prune_shingles",
        )
    )


@dataclass
class Pruning:
    """What the ``prune`` stage leaves for the shingle stage."""

    sizes: Int64Array  # distinct shingles of every record before pruning
    tokens: TokenSets | None  # the pruned token sets, when pass 1 could keep them (else shingled again)
    info: dict[str, Any]  # the stage's log entry (the shingle stage adds how much of each record went)
    dropped: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))  # sorted, distinct
    #: the shingler's reports of pass 1's calls (:func:`shingle_frequencies`), for kept token sets
    reports: list[dict[str, Any]] = field(default_factory=list)


def prune_shingles(engine: Engine, records: Records, log: StageLog) -> tuple[Engine, Pruning | None]:
    """The ``prune`` stage (when the job sets ``prune_shingles:`` and the model holds no pruned list yet):
    count, choose; returns the engine applying the pruning (its model holds the dropped shingles) and
    what the stage found.

    The token sets of pass 1 are kept when they fit ``token_memory_mb``;
    :func:`shingle_and_sign` then signs those instead of shingling again.
    With a saved model the list is the model's: nothing is counted.
    """
    job = engine.job
    if job.spec.prune_shingles is None or engine.base_shingler is None or engine.model.pruned is not None:
        return engine, None
    with log.stage("prune") as info:
        freq, sizes, kept, reports = shingle_frequencies(engine, records, job.spec.token_memory_mb)
        dropped, report = pruned_by_frequency(job, freq)
        with_tokens = int((sizes > 0).sum())
        engine = engine.with_model(engine.model.learned(pruned=dropped, prune_report=dict(report)))
        info.update(report)
        pruned = None if kept is None else drop_tokens(kept, dropped, sets=True, workers=job.context.workers)[0]
        if pruned is not None:  # the pruned sets are known: refused before signing when every one is empty
            check_pruning_leaves_shingles(with_tokens, int(((sizes > 0) & (pruned.sizes == 0)).sum()), report)
    return engine, Pruning(sizes, pruned, info, dropped, reports)


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
    shingled = _shingle_chunks(
        records,
        shingler,
        builder,
        keep,
        chunk,
        job.spec.token_memory_mb,
        log,
        pruned,
        step_chars=SHINGLE_STEP_CHARS if streamed else None,
        workers=job.context.workers,
    )
    partitionable = ability(shingler, Partitionable)
    if partitionable is not None:  # the report of the calls that shingled the records (pass 1's, when it kept them)
        shingled.shingler_report = partitionable.merge_reports(
            pruning.reports if pruned is not None and pruning is not None else shingled.reports
        )
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
        lost = (
            shingled.lost
            if shingled.lost is not None
            else (pruning.sizes - sizes if pruned is not None else np.zeros(len(sizes), dtype=np.int64))
        )  # nothing dropped
        pruning.info.update(pruned_share(pruning.sizes, lost))
        check_pruning_leaves_shingles(int((pruning.sizes > 0).sum()), pruning.info["records_emptied"], pruning.info)
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
    records: Records,
    shingler: Any,
    builder: Any,
    keep: str,
    chunk_records: int,
    token_memory_mb: float,
    log: StageLog,
    pruned: TokenSets | None = None,
    *,
    step_chars: int | None = None,
    workers: int = 1,
) -> Shingled:
    """The chunk loop of :func:`shingle_and_sign` (``keep``: ``all``, ``budget`` or ``none``).

    Kept token sets fill one buffer of at most :func:`token_budget` tokens;
    whether the corpus's sets fit is forecast from the first step's tokens
    per character, so a corpus far over the budget never fills a buffer it
    then drops (one that outgrows the forecast drops it when the budget runs
    out, and verification shingles the candidates' records again,
    :func:`~er_framework.engine.stages.verification.score_streamed`). Steps hold at most ``chunk_records`` records
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
        for step, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]), 1):  # one step per chunk of records
            pieces: list[tuple[Int64Array, TokenSets, Signatures | None]] = []
            if fused:  # slices shingled, made sets and signed on the workers, in record order
                want_sets = keep == "none" and kept and buffer is not None
                assert text_chars is not None
                slices = [(a + x, a + y) for x, y in split_sizes(text_chars[a:b] + 1, FUSED_SLICE_CHARS)]
                with timer("shingle"):
                    done = map_ordered(
                        partial(_shingle_and_sign_slice, records, shingler, builder, keep == "none", want_sets), slices, workers
                    )
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
                    elif kept and buffer is not None and used + len(tokens.tokens) <= cap and tokens.tokens.dtype == np.uint64:
                        buffer[used : used + len(tokens.tokens)] = tokens.tokens
                        used += len(tokens.tokens)
                        set_sizes.append(tokens.sizes)
                    elif kept:
                        kept, buffer = False, None  # over budget: stream from here on
            del pieces
            log.batch(step, len(bounds) - 1)
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
    return Shingled(sizes=all_sizes, tokens=token_sets, signatures=signatures, chunks=len(bounds) - 1, lost=lost_all, reports=reports)
