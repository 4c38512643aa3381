"""The verify stage: the candidates scored by the job's verifier (token sets kept by the shingle stage, or
computed again a block or a window of records at a time), kept at or above the threshold, and the verifier's
comparisons of any pairs (:func:`explainer`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Explainable, Learner, ScoreReporting, SignatureScreen, Trainable, ability, has
from er_framework.data import Batch, LabelledPairs, Pairs, Records, TokenSets
from er_framework.engine.engine import Engine
from er_framework.engine.log import StageLog
from er_framework.engine.stages.exact import Exact, exact_groups
from er_framework.engine.stages.shingling import FUSED_SLICE_CHARS, Shingled
from er_framework.kernels.allocator import hand_back_freed_memory, keep_freed_memory
from er_framework.kernels.groups import sorted_unique
from er_framework.kernels.parallel import map_ordered, split_sizes
from er_framework.kernels.windows import verify_windows

__all__ = [
    "PREFETCH_CHUNKS",
    "VERIFY_BLOCK_MB",
    "VERIFY_WINDOW_MB",
    "Verified",
    "explainer",
    "place_parts",
    "rows_sets",
    "score_candidates",
    "score_streamed",
    "score_windowed",
    "screened_scores",
    "signature_screen",
    "fit_verifier",
    "verify",
    "with_exact",
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
        scores[a:b] = engine.score_batch(block, local)
        del block
    del buffer
    hand_back_freed_memory()
    return scores, shingled, len(blocks)


def rows_sets(source: Callable[[Int64Array], TokenSets], rows: Int64Array, xy: tuple[int, int]) -> TokenSets:
    """The token sets of ``rows[x:y]`` from ``source`` (a batch's ``token_source``)."""
    return source(rows[xy[0] : xy[1]])


def place_parts(buffer: npt.NDArray[np.uint64], at: int, parts: list[TokenSets], workers: int) -> None:
    """The tokens of ``parts`` one after the other in ``buffer`` from ``at`` on, copied on ``workers``
    threads (numpy's copy releases the GIL: the copies of a chunk's sets, a few hundred MB, are not left
    to one core while the other waits)."""
    sizes = [len(p.tokens) for p in parts]
    starts = np.cumsum([at] + sizes[:-1]).tolist() if parts else []

    def place(i: int) -> None:
        buffer[starts[i] : starts[i] + sizes[i]] = parts[i].tokens

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
    chunk_rows = [plan.order[plan.starts[c] : plan.starts[c + 1]] for c in range(plan.chunks)]
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
                        grown[mine - m : mine] = buffer[half - m : half]
                    else:
                        grown[mine : mine + m] = buffer[half : half + m]
                buffer, half = grown, mine
            place_parts(buffer, half - mine if c % 2 == 0 else half, parts, workers)
            set_sizes = np.concatenate([p.sizes for p in parts]) if parts else np.zeros(0, dtype=np.int64)
            del parts
            ps = near[bounds[c] : bounds[c + 1]]
            if len(ps):
                chunks = (
                    [(c, rows, set_sizes)]
                    if before is None
                    else ([(c, rows, set_sizes), before] if c % 2 == 0 else [before, (c, rows, set_sizes)])
                )
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
                block.tokens = TokenSets(indptr, buffer[lo : lo + int(indptr[-1])])
                scores[ps] = engine.score_batch(block, local)
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


def streamed_subset(batch: Batch, rows: Int64Array, chars: Int64Array, buffer: npt.NDArray[np.uint64], workers: int) -> Batch:
    """``batch.subset(rows)`` of a streamed batch, its token sets recomputed (``batch.token_source``)
    slice by slice (:data:`FUSED_SLICE_CHARS` characters) on ``workers`` threads and laid out in
    ``buffer`` (at least the rows' token counts long; reused block after block, so that its memory is
    not new to the process every time; the sets are those of ``batch.tokens_for(rows)``)."""
    source = batch.token_source
    assert source is not None
    slices = split_sizes(chars[rows] + 1, FUSED_SLICE_CHARS)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    used = 0
    parts = map_ordered(lambda xy: source(rows[xy[0] : xy[1]]), slices, workers)
    for (x, y), part in zip(slices, parts):
        m = len(part.tokens)
        if used + m > len(buffer) or part.tokens.dtype != np.uint64:  # not the counts' bound: no buffer
            return subset_joined(batch, rows, parts)
        buffer[used : used + m] = part.tokens
        indptr[x + 1 : y + 1] = used + part.indptr[1:]
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
    #: the engine applying the model as this stage left it: the verifier's fitted state, the chosen threshold
    engine: Engine
    #: what the verifier says of this run: its fit (iterations, lambda, weights …) or a ScoreReporting
    #: verifier's report of the scores; None when it says nothing
    verifier_report: dict[str, Any] | None = None


def fit_verifier(
    engine: Engine, batch: Batch, pairs: Pairs, labelled: LabelledPairs | None
) -> tuple[Engine, npt.NDArray[np.float64], dict[str, Any]]:
    """A learner's fit on ``pairs`` (rows of ``batch``; the run's candidates) with the labelled pairs:
    the engine whose model holds the fitted state, every pair's score, and the fit's report."""
    v = engine.verifier
    assert isinstance(v, Learner)
    scores, fitted = v.fit_score(batch, pairs, labelled if isinstance(v, Trainable) else None)
    model = engine.model.learned(verifier={"type": v.name, "state": fitted.state})
    return engine.with_model(model), engine.checked_scores(scores, len(pairs)), dict(fitted.report)


def verify(
    engine: Engine,
    batch: Batch,
    candidates: Pairs,
    exact: Exact,
    shingled: Shingled,
    n: int,
    log: StageLog,
    labelled: LabelledPairs | None = None,
) -> Verified:
    """Score the candidates with the job's verifier; keep ``score >= threshold``; add the exact pairs.

    A learner without a fitted state in the model is fitted on the candidates first (the ``fit`` stage,
    with ``labelled`` pairs when it is trainable); with ``threshold: auto`` and no threshold in the model,
    the threshold is chosen from every candidate's score. Both go into the returned engine's model.
    """
    local_of = np.full(n, -1, dtype=np.int64)  # verifiers see the batch (active records)
    local_of[exact.active] = np.arange(len(exact.active), dtype=np.int64)
    local_cand = Pairs(local_of[candidates.left], local_of[candidates.right])
    verifier_report: dict[str, Any] | None = None
    if engine.learns() and engine.verifier_state() is None:
        with log.stage("fit") as fit_info:
            engine, fitted_scores, verifier_report = fit_verifier(engine, batch, local_cand, labelled)
            fit_info["pairs"] = int(len(local_cand))
    with log.stage("verify") as info:
        if verifier_report is not None:
            scores = fitted_scores
        else:
            scores, verifier_report = score_candidates(engine, batch, local_cand, shingled, info)
        auto_chosen = engine.auto and engine.model.threshold is None
        if auto_chosen:  # threshold: auto, chosen from every candidate's score
            choice = engine.choose_threshold(scores)
            engine = engine.with_model(engine.model.learned(threshold=choice))
            auto = choice.auto or {}
            info["threshold_chosen"] = {
                "method": auto.get("method"),
                "ok": bool(auto.get("ok")),
                "reason": auto.get("reason"),
                "n_scores": int(auto.get("n_scores", 0)),
            }
        keep = engine.keep(scores)
        verified = Pairs(candidates.left[keep], candidates.right[keep], scores[keep])
        info.update({"threshold": engine.threshold, "verified_pairs": int(len(verified)), "rejected_pairs": int((~keep).sum())})
        if engine.learns() and engine.model.origin != "fitted":
            info["model"] = engine.model.origin  # applied, not fitted
    return Verified(scores, verified, with_exact(verified, exact.pairs), info, engine, verifier_report)


def score_candidates(
    engine: Engine, batch: Batch, local_cand: Pairs, shingled: Shingled, info: dict[str, Any]
) -> tuple[npt.NDArray[np.float64], dict[str, Any] | None]:
    """Every candidate's score (rows of ``batch``) with the model as it is, and what a
    :class:`~er_framework.capabilities.ScoreReporting` verifier reports of them (else None): a signature screen
    first when the verifier has one (jaccard's skip_unlikely; not with ``threshold: auto`` still to choose,
    which needs every candidate's own score), the token sets of a streamed corpus a window at a time."""
    decided = signature_screen(engine, batch, local_cand)
    todo = local_cand
    report: dict[str, Any] | None = None
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
    elif (reporting := ability(engine.verifier, ScoreReporting)) is not None:
        got = reporting.score_reported(batch, todo)
        scored, report = engine.checked_scores(got.scores, len(todo)), dict(got.report)
    else:
        scored = engine.score_batch(batch, todo)
    if decided is None:
        return scored, report
    scores = np.asarray(estimate, dtype=np.float64).copy()
    scores[~skip] = scored
    return scores, report


def signature_screen(engine: Engine, batch: Batch, pairs: Pairs) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]] | None:
    """The verifier's signature screen of ``pairs`` (jaccard's ``skip_unlikely``): which pairs are rejected from
    their signatures alone and every pair's estimate; None without a screen, or with ``threshold: auto`` still to
    choose (which needs every candidate's own score)."""
    screen = ability(engine.verifier, SignatureScreen)
    choosing = engine.auto and engine.model.threshold is None
    return screen.decided_by_signatures(batch, pairs) if screen is not None and not choosing else None


def screened_scores(engine: Engine, records: Records, pairs: Pairs) -> npt.NDArray[np.float64]:
    """Every pair's score as :func:`score_candidates` gives it, for an executor holding only the pairs'
    records: the signature screen first (signatures of every record), then the verifier on the pairs it
    kept, with the token sets of their records only; the rejected pairs keep their estimate."""
    if ability(engine.verifier, SignatureScreen) is None or len(pairs) == 0:
        return engine.score(records, pairs)
    decided = signature_screen(engine, engine.batch(records, tokens=False, signatures=True), pairs)
    if decided is None:
        return engine.score(records, pairs)
    skip, estimate = decided
    todo = pairs.select(~skip)
    rows = np.unique(np.concatenate([todo.left, todo.right]))
    scores = np.asarray(estimate, dtype=np.float64).copy()
    scores[~skip] = engine.score(records.take(rows), Pairs(np.searchsorted(rows, todo.left), np.searchsorted(rows, todo.right)))
    return scores


def explainer(engine: Engine, batch: Batch, exact: Exact, n: int) -> Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None:
    """The verifier's comparisons of any pairs of the job's records (global indices; a collapsed copy is
    compared as its representative), or None when the verifier cannot explain its scores."""
    if not has(engine.verifier, Explainable):
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
