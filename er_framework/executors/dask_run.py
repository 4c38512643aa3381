"""The Dask executor's client side: :class:`DaskRun` submits each phase's tasks and gathers what the client
keeps (ids, small arrays, the verified pairs); :mod:`er_framework.executors.dask` describes the plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from distributed import as_completed

from er_framework.capabilities import (
    CodeFitted,
    GroupedKeys,
    Keyed,
    LimitedKeys,
    Partitionable,
    Reporting,
    Windowed,
    ability,
    has,
)
from er_framework.config.executor_params import DaskParams
from er_framework.config.resolve import Job
from er_framework.data import Pairs
from er_framework.engine import stages
from er_framework.engine.engine import Engine, kept_scores
from er_framework.engine.log import StageLog
from er_framework.errors import ErError, InputError, Problem
from er_framework.executors.dask_scan import (
    EXACT_STATS,
    ExactPart,
    scan_summary,
    task_active,
    task_exact_pairs_split,
    task_exact_part,
    task_exact_split,
    task_id_check,
    task_id_split,
    task_ids,
    task_read_stats,
    task_scan,
)
from er_framework.executors.dask_shuffle import (
    BUCKET_STATS,
    GROUP_STATS,
    Buckets,
    merge_bucket_stats,
    task_bounds,
    task_bucket_sort,
    task_buckets,
    task_carry,
    task_dedup,
    task_range,
    task_split,
    task_windows,
)
from er_framework.executors.dask_stats import (
    WindowStats,
    distinct_counts,
    merge_source_stats,
    source_stats,
    submit_window_stats,
    window_passes,
    with_distinct,
)
from er_framework.executors.dask_tasks import (
    Blocked,
    Int64Array,
    JobRef,
    Part,
    task_block,
    task_codes,
    task_frequencies,
    task_record_counts,
    task_score_codes,
    task_serve,
    task_verify,
)
from er_framework.executors.dask_training import Training, labelled_codes
from er_framework.kernels.df import DocFreq
from er_framework.kernels.groups import unpack_pairs
from er_framework.normalize import merge_stats


def options(job: Job) -> DaskParams:
    """The job's ``executor:`` options, validated by :class:`DaskParams` when the job was read."""
    if not isinstance(job.executor_params, DaskParams):
        raise ErError(
            Problem(
                where=str(job.config_path),
                path="executor.type",
                message=f"the dask executor was given a job for executor {job.spec.executor.type!r}",
                fix="write executor: {type: dask, address: tcp://HOST:8786} (or local_cluster: {n_workers: 2})",
            )
        )
    return job.executor_params


@dataclass
class Scanned:
    """What the client knows after reading: O(partitions) numbers, and futures of what the workers hold."""

    counts: Int64Array  # records per partition
    offsets: Int64Array  # global index of each partition's first record (and the total, last)
    source_of_part: Int64Array  # each partition's source
    exact_stats: dict[str, Any]
    #: per exact part: an :class:`~er_framework.executors.dask_scan.ExactPart`
    exact_parts: list[Any]
    #: per partition: its active records, numbered within it (futures), and their counts
    active: list[Any]
    active_counts: Int64Array
    #: per partition: its ids (futures, kept on the workers for the written tables)
    ids: list[Any]
    n_workers: int
    #: the normalize stage's per-field stats over every partition (:func:`~er_framework.normalize.merge_stats`)
    normalize_stats: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: report.json's ``sources``: each source's reading statistics (:func:`~er_framework.executors.dask_stats.merge_source_stats`)
    source_stats: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.offsets[-1])

    def per_source(self, n_sources: int, counts: Int64Array | None = None) -> Int64Array:
        """Records (default) or ``counts`` per source."""
        return np.bincount(self.source_of_part, weights=self.counts if counts is None else counts, minlength=n_sources).astype(np.int64)


@dataclass
class BlockedFutures:
    """The blocking phase's futures, and the bucket statistics gathered so far."""

    block: list[Any]
    dedup: list[Any]
    stats: list[Any]
    blocker_parts: list[list[dict[str, Any]]]
    bucket_stats: Int64Array | None
    #: the report's ``tokens`` section (:func:`tokens_report`)
    tokens: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: per shuffle part: the statistics of the groups of the blockers with groups, and their oversized buckets
    groups: list[Any] = dataclasses.field(default_factory=list)
    #: the shingler's report of the run, merged from the partitions' (a partitionable shingler's)
    shingler: dict[str, Any] | None = None
    #: the window passes' statistics (futures of small results; None: no window pass)
    windows: WindowStats | None = None


@dataclass
class Found:
    """What verification left on the workers (futures, one per pair part) and the counts the client keeps."""

    #: ``(left, right, score)`` of the pairs at or above the threshold
    verified: list[Any]
    #: ``(left, right, score)`` of every candidate, in the part's packed order
    candidates: list[Any]
    n_candidates: int
    n_verified: int
    per_blocker: Int64Array
    #: each blocker's report of the run, as its ``block`` gives it locally (``{}``: none merged)
    blocker_reports: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: per pair part: its packed pairs, and the futures of the records serving it and their global indices
    packed: list[Any] = dataclasses.field(default_factory=list)
    served: list[tuple[list[Any], list[Any]]] = dataclasses.field(default_factory=list)


@dataclass
class DaskRun:
    """One job on one Dask client: the phases submit tasks; the client keeps ids and small arrays."""

    job: Job
    engine: Engine
    ref: JobRef
    client: Any
    parts: list[Part]
    #: a future of the model as the tasks need it (the pruned shingles, a saved model's state), sent with every
    #: task that shingles or scores; and the prune stage's numbers
    model: Any = None
    pruning: stages.Pruning | None = None
    #: what the verifier's fit on the client said (None: nothing fitted in this run)
    verifier_report: dict[str, Any] | None = None
    #: MB per input partition the plan used (:func:`~er_framework.executors.dask.partition_size`)
    partition_mb: float = 0.0
    #: ``training:``'s labels (:func:`~er_framework.executors.dask_training.read_training`), None without
    training: Training | None = None
    #: the reading statistics of each database source (read on a worker into pieces), by source name
    database_stats: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def n_parts(self) -> int:
        return max(1, len(self.parts))

    def submit(self, fn: Callable[..., Any], *args: Any, retries: int = 3) -> Any:
        return self.client.submit(fn, *args, pure=False, retries=retries)

    def gather(self, futures: list[Any], log: StageLog) -> list[Any]:
        """The results of ``futures`` in their order, telling ``log`` of each one finished (a batch boundary)."""
        for done, _ in enumerate(as_completed(futures), 1):
            log.batch(done, len(futures))
        return list(self.client.gather(futures))

    def scan(self, log: StageLog) -> Scanned:
        """read + exact_duplicates (:mod:`~er_framework.executors.dask_scan`): the partitions read on the workers,
        numbered by offsets, ids checked and exact copies grouped by shuffles; the client keeps counts."""
        client = self.client
        with log.stage("read") as info:
            scan_futs = [self.submit(task_scan, self.ref, p) for p in self.parts]
            summaries = self.gather([self.submit(scan_summary, f, retries=0) for f in scan_futs], log)
            counts = np.array([c for c, _ in summaries], dtype=np.int64)
            offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            source_of_part = np.array([p.source for p in self.parts], dtype=np.int64)
            self._check_ids(scan_futs)
            n_workers = len(client.scheduler_info()["workers"])
            info.update({"records": int(offsets[-1]), "partitions": len(self.parts), "workers": n_workers})
        with log.stage("normalize") as info:  # normalized on the workers as they read: the stats are merged here
            read_futs = [self.submit(task_read_stats, f, retries=0) for f in scan_futs]
            normalize_stats = with_distinct(merge_stats([st for _, st in summaries]), distinct_counts(self, read_futs))
            info["fields"] = sorted(normalize_stats)
        read_stats = client.gather([self.submit(source_stats, f, retries=0) for f in read_futs])
        sources = merge_source_stats(self.job, self.parts, counts, read_stats)
        with log.stage("exact_duplicates") as info:
            exact_parts, active, stats = self._exact(scan_futs, offsets, counts)
            info.update(stats)
        active_counts = np.array(client.gather([self.submit(len, a, retries=0) for a in active]), dtype=np.int64)
        ids = [self.submit(task_ids, f, retries=0) for f in scan_futs]
        return Scanned(counts, offsets, source_of_part, stats, exact_parts, active, active_counts, ids, n_workers, normalize_stats, sources)

    def _check_ids(self, scan_futs: list[Any]) -> None:
        """Ids must be unique within a source across partitions (each partition checked its own): a shuffle by id."""
        split = [self.submit(task_id_split, f, p.source, self.n_parts) for f, p in zip(scan_futs, self.parts)]
        checks = [self.submit(task_id_check, *[self.submit(_pick, sp, j, retries=0) for sp in split]) for j in range(self.n_parts)]
        found = self.client.gather(checks)
        count = sum(c for c, _ in found)
        if count:
            names = [s.name for s in self.job.spec.sources]
            bad = sorted(f"{names[s]}/{i}" for _, ex in found for s, i in ex)[:5]
            raise InputError(
                Problem(
                    where=str(self.job.config_path),
                    path="sources",
                    message=f"{count} id(s) appear more than once in a source (in different partitions or files): {', '.join(bad)}",
                    fix="ids must be unique within a source",
                )
            )

    def _exact(self, scan_futs: list[Any], offsets: Int64Array, counts: Int64Array) -> tuple[list[Any], list[Any], dict[str, Any]]:
        """The exact-duplicate stage as a shuffle by key: the parts' groups, each partition's active records, the stats."""
        job, n_out = self.job, self.n_parts
        enabled = job.exact.enabled
        if enabled:
            off_f = self.submit(_same, offsets, retries=0)
            split = [
                self.submit(task_exact_split, f, int(offsets[i]), p.source, n_out) for i, (f, p) in enumerate(zip(scan_futs, self.parts))
            ]
            exact_parts = [
                self.submit(task_exact_part, job.spec.mode != "link", off_f, *[self.submit(_pick, sp, j, retries=0) for sp in split])
                for j in range(n_out)
            ]
            sums = np.sum(self.client.gather([self.submit(_exact_stats, e, retries=0) for e in exact_parts]), axis=0)
        else:
            exact_parts, sums = [], np.zeros(len(EXACT_STATS), np.int64)
        stats: dict[str, Any] = {k: int(v) for k, v in zip(EXACT_STATS, sums)}
        stats["enabled"] = enabled
        active = [
            self.submit(task_active, int(counts[i]), int(offsets[i]), *[self.submit(_pick_collapsed, e, i, retries=0) for e in exact_parts])
            for i in range(len(self.parts))
        ]
        return exact_parts, active, stats

    def prune(self, scanned: Scanned, log: StageLog) -> None:
        """``prune_shingles:``: the partitions' shingle counts merged on the client, the dropped shingles
        chosen there as locally (:func:`stages.pruned_by_frequency`), then sent with every task that shingles."""
        job, engine = self.job, self.engine
        if job.spec.prune_shingles is None or engine.base_shingler is None or engine.model.pruned is not None:
            return
        with log.stage("prune") as info:
            futs = [self.submit(task_frequencies, self.ref, p, self._active_of(scanned, i)) for i, p in enumerate(self.parts)]
            got = self.client.gather(futs)
            freq = DocFreq()
            for g in got:  # the partitions' tables merged here, within the memory this process has
                freq.add_table(g[0], g[1], g[2])
                stages.check_frequency_memory(freq)
            dropped, report = stages.pruned_by_frequency(job, freq)
            self.engine = engine.with_model(engine.model.learned(pruned=dropped, prune_report=dict(report)))
            info.update(report)
        self.pruning = stages.Pruning(np.concatenate([g[3] for g in got]) if got else np.zeros(0, np.int64), None, info, dropped)

    def send_model(self) -> None:
        """The model as the tasks need it, as a future (a task, not scattered data: the scheduler can compute
        it again if its worker dies); none when the job learned nothing before verification."""
        m = self.engine.model
        if m.pruned is not None or m.verifier is not None:
            self.model = self.submit(_same, m, retries=0)

    def _active_of(self, scanned: Scanned, i: int) -> Any:
        """The active records of partition ``i``, numbered within it (a future)."""
        return scanned.active[i]

    def block(self, scanned: Scanned, info: dict[str, Any]) -> BlockedFutures:
        """Bucket keys and sort windows per partition, shuffled; candidate pairs deduplicated per pair part."""
        engine, offsets = self.engine, scanned.offsets
        block_futs = [
            self.submit(task_block, self.ref, p, int(offsets[i]), self._active_of(scanned, i), self.n_parts, self.model)
            for i, p in enumerate(self.parts)
        ]
        reports, blocker_parts, token_counts, lost = _partition_problems(self.job, self.client, block_futs)
        if self.pruning is not None:  # how much of each record went, as the local shingle stage reports it
            self.pruning.info.update(stages.pruned_share(self.pruning.sizes, np.concatenate(lost) if lost else np.zeros(0, np.int64)))
            pruned = self.pruning.info
            stages.check_pruning_leaves_shingles(int((self.pruning.sizes > 0).sum()), pruned["records_emptied"], pruned)
        partitionable = ability(engine.shingler, Partitionable)
        # the shingler's report over every record, from the partitions'
        shingler_report = partitionable.merge_reports(reports) if partitionable is not None else None
        sorted_futs = []
        for j in range(self.n_parts if any(engine.has_keys(b) for b in engine.blockers) else 0):
            pieces = [self.submit(_pick_attr, f, "pieces", j, retries=0) for f in block_futs]
            sorted_futs.append(self.submit(task_bucket_sort, self.ref, pieces))
        stats_futs = [self.submit(_bucket_stats, f, retries=0) for f in sorted_futs]
        grouped = any(has(b, GroupedKeys) for b in engine.blockers)
        group_futs = [self.submit(_group_parts, f, retries=0) for f in sorted_futs] if grouped else []
        bucket_stats = None
        if any(has(b, LimitedKeys) for b in engine.blockers):
            # a limit on the pairs of the buckets (e.g. grid_bits' max_pairs): checked on the sizes of
            # every bucket before any pair is made, with the blocker's own error, as locally
            bucket_stats = merge_bucket_stats(self.client.gather(stats_futs), len(engine.blockers))
            for i, b in enumerate(engine.blockers):
                if (limited := ability(b, LimitedKeys)) is not None:
                    limited.check_lookup_pairs(int(bucket_stats[i, 4]), int(bucket_stats[i, 1]))
        bucket_futs = [self.submit(task_buckets, self.ref, f, self.n_parts) for f in sorted_futs]
        window_futs = _submit_windows(self.client, engine, self.job, block_futs, self.n_parts)
        info["window_passes"] = len(window_futs)
        windows = submit_window_stats(self, block_futs, window_futs)
        # the exact pairs sent by pair hash as the candidates are: each dedup part removes its own
        exact_split = [self.submit(task_exact_pairs_split, e, self.n_parts) for e in scanned.exact_parts]
        # a small array every dedup task reads: a task, not scattered data, so that the
        # scheduler can compute it again if the worker holding it dies
        off_f = self.submit(_same, offsets, retries=0)
        dedup_futs = []
        for j in range(self.n_parts):
            pieces = [self.submit(_pick, f, j, retries=0) for f in bucket_futs + window_futs]
            exact_j = [self.submit(_pick, e, j, retries=0) for e in exact_split]
            dedup_futs.append(self.submit(task_dedup, pieces, exact_j, off_f, len(engine.blockers)))
        return BlockedFutures(
            block_futs,
            dedup_futs,
            stats_futs,
            blocker_parts,
            bucket_stats,
            tokens_report(engine, token_counts),
            group_futs,
            shingler_report,
            windows,
        )

    def verify(self, scanned: Scanned, blocked: BlockedFutures, info: dict[str, Any], log: StageLog | None = None) -> Found:
        """The candidates joined with their records and scored (pairwise, or by a verifier fitted on code counts)."""
        engine, n_parts = self.engine, self.n_parts
        fitted = engine.learns() and engine.verifier_state() is None
        needs = [self.submit(_pick, f, 1, retries=0) for f in blocked.dedup]
        sample, sample_need = self._sample(scanned) if fitted else (Pairs.empty(), [])
        serve_futs = []
        for i, p in enumerate(self.parts):
            wanted = [self.submit(_pick, nd, i, retries=0) for nd in needs]
            if fitted:
                wanted.append(self.submit(_same, sample_need[i], retries=0))
                if self.training is not None and self.training.need is not None:  # the labelled pairs' records
                    wanted.append(self.submit(_same, self.training.need[i], retries=0))
            serve_futs.append(self.submit(task_serve, self.ref, p, int(scanned.offsets[i]), wanted))
        packed_futs = [self.submit(_pick, blocked.dedup[j], 0, retries=0) for j in range(n_parts)]

        served_parts = [
            (
                [self.submit(_pick, s, j, retries=0) for s in serve_futs],
                [self.submit(_pick, needs[j], i, retries=0) for i in range(len(self.parts))],
            )
            for j in range(n_parts)
        ]

        def served_and_wanted(j: int) -> tuple[list[Any], list[Any]]:
            return served_parts[j]

        if fitted:
            population = population_of(scanned.per_source(len(self.job.spec.sources), scanned.active_counts), self.engine.link)
            verifier = engine.verifier
            assert isinstance(verifier, CodeFitted)
            count_futs = (
                [self.submit(task_record_counts, self.ref, p, self._active_of(scanned, i)) for i, p in enumerate(self.parts)]
                if verifier.needs_record_counts()
                else []
            )
            ver_futs = self._fit_and_score(packed_futs, served_and_wanted, serve_futs, sample, sample_need, population, count_futs, info)
        else:
            ver_futs = [self.submit(task_verify, self.ref, packed_futs[j], *served_and_wanted(j), self.model) for j in range(n_parts)]
        if log is not None:  # every verify task finished: a batch boundary each (the results stay on the workers)
            for done, _ in enumerate(as_completed(ver_futs), 1):
                log.batch(done, len(ver_futs))
        per_blocker = (
            np.sum(self.client.gather([self.submit(_pick, f, 2, retries=0) for f in blocked.dedup]), axis=0)
            if blocked.dedup
            else np.zeros(len(engine.blockers), np.int64)
        )
        n_cand = int(sum(self.client.gather([self.submit(_pick, v, 3, retries=0) for v in ver_futs])))
        engine = self.engine  # with the verifier's fitted state when fitted here
        if engine.auto and engine.model.threshold is None:  # threshold: auto, chosen on the client, as locally
            # every candidate's score comes to the client (8 bytes a candidate): the choice looks at them all
            every = self.client.gather([self.submit(_pick, v, 4, retries=0) for v in ver_futs])
            choice = engine.choose_threshold(np.concatenate(every) if every else np.zeros(0))
            del every
            engine = self.engine = engine.with_model(engine.model.learned(threshold=choice))
            auto = choice.auto or {}
            info["threshold_chosen"] = {
                "method": auto.get("method"),
                "ok": bool(auto.get("ok")),
                "reason": auto.get("reason"),
                "n_scores": int(auto.get("n_scores", 0)),
            }
        # the workers kept the pairs at or above the lowest threshold it may choose: kept again at the chosen one
        threshold = engine.threshold
        verified = [self.submit(task_kept, v, threshold, engine.auto, retries=0) for v in ver_futs]
        candidates = [self.submit(task_candidates, packed_futs[j], ver_futs[j], retries=0) for j in range(n_parts)]
        n_ver = int(sum(self.client.gather([self.submit(_n_pairs, v, retries=0) for v in verified])))
        info.update({"candidate_pairs": n_cand, "verified_pairs": n_ver, "threshold": threshold, "rejected_pairs": n_cand - n_ver})
        found = Found(verified, candidates, n_cand, n_ver, per_blocker, packed=packed_futs, served=served_parts)
        found.blocker_reports = self._merge_blocker_reports(blocked, scanned, per_blocker)
        return found

    def _sample(self, scanned: Scanned) -> tuple[Pairs, list[Int64Array]]:
        """The verifier's sample pairs (random pairs), drawn as locally over the active records, and who serves them.

        The draw needs the source of every active record in order (the local executor's input): built from
        the partitions' active counts, 4 bytes per active record for the time of the draw; the drawn
        positions are turned into global indices by the partitions holding them."""
        verifier = self.engine.verifier
        assert isinstance(verifier, CodeFitted)
        act = scanned.active_counts
        local_sample = verifier.sample_pairs(np.repeat(scanned.source_of_part.astype(np.int32), act), self.engine.link)
        ranks = np.unique(np.concatenate([local_sample.left, local_sample.right]))
        starts = np.concatenate([[0], np.cumsum(act)]).astype(np.int64)
        owner = np.searchsorted(starts, ranks, side="right") - 1
        futs = [
            self.submit(_take, scanned.active[i], ranks[owner == i] - starts[i], int(scanned.offsets[i]), retries=0)
            for i in range(len(self.parts))
        ]
        gidx = np.concatenate(self.client.gather(futs)) if futs else np.zeros(0, np.int64)  # ranks in order: owners ascend
        sample = Pairs(gidx[np.searchsorted(ranks, local_sample.left)], gidx[np.searchsorted(ranks, local_sample.right)])
        return sample, [gidx[owner == i] for i in range(len(self.parts))]

    def _fit_and_score(
        self,
        packed_futs: list[Any],
        served_and_wanted: Callable[[int], tuple[list[Any], list[Any]]],
        serve_futs: list[Any],
        sample: Pairs,
        sample_need: list[Int64Array],
        population: int,
        count_futs: list[Any],
        info: dict[str, Any],
    ) -> list[Any]:
        """A fitted verifier: pair codes on the workers, counts summed, one fit on the client, scores by code."""
        code_futs = [self.submit(task_codes, self.ref, packed_futs[j], *served_and_wanted(j), self.model) for j in range(self.n_parts)]
        served = [self.submit(_pick, s, self.n_parts, retries=0) for s in serve_futs]
        sample_fut = self.submit(task_codes, self.ref, (sample.left, sample.right), served, sample_need, self.model)
        counted = self.client.gather([self.submit(_pick_many, f, (1, 2), retries=0) for f in code_futs])
        s_counted = self.client.gather(self.submit(_pick_many, sample_fut, (1, 2), retries=0))
        pat_codes, pat_counts = _sum_counts(counted)
        s_codes, s_counts = _sum_counts([s_counted]) if len(sample) else (np.zeros(0, np.int64), np.zeros(0))
        verifier = self.engine.verifier
        assert isinstance(verifier, CodeFitted)
        counted = [c for c in self.client.gather(count_futs) if c is not None] if count_futs else None
        coded = None
        if self.training is not None:  # the labelled pairs' codes, where their records are served
            coded = labelled_codes(self, self.training, [self.submit(_pick, s, self.n_parts + 1, retries=0) for s in serve_futs])
        table, fitted = verifier.fit_counts(
            pat_codes, pat_counts, s_codes, s_counts, coded, population=population, record_counts=counted
        )  # on the client, as locally
        state = fitted.state
        self.engine = self.engine.with_model(self.engine.model.learned(verifier={"type": verifier.name, "state": state}))
        self.verifier_report = dict(fitted.report)
        info["patterns"] = int(len(pat_codes))
        if count_futs and state and verifier.scores_by_records(state):
            # scores by more than the pair's code: the model's score_with on the pairs' records, as locally
            self.send_model()
            return [self.submit(task_verify, self.ref, packed_futs[j], *served_and_wanted(j), self.model) for j in range(self.n_parts)]
        return [self.submit(task_score_codes, self.ref, packed_futs[j], code_futs[j], pat_codes, table) for j in range(self.n_parts)]

    def _merge_blocker_reports(self, blocked: BlockedFutures, scanned: Scanned, per_blocker: Int64Array) -> list[dict[str, Any]]:
        """The blockers' reports, as their ``block`` gives them locally, from the partitions' and the buckets'
        (with the statistics per group and the oversized buckets of blockers with groups); ``{}`` for a
        blocker without keys or without a report."""
        engine = self.engine
        out: list[dict[str, Any]] = [{} for _ in engine.blockers]
        if not any(has(b, Keyed) and has(b, Reporting) for b in engine.blockers):
            return out
        stats = blocked.bucket_stats
        if stats is None:
            stats = merge_bucket_stats(self.client.gather(blocked.stats), len(engine.blockers))
        groups, oversized = self._groups(blocked, scanned)
        for i, b in enumerate(engine.blockers):
            keyed = ability(b, Keyed)
            if keyed is not None and has(b, Reporting):
                buckets: dict[str, Any] = {**dict(zip(BUCKET_STATS, (int(x) for x in stats[i]))), "distinct_pairs": int(per_blocker[i])}
                if has(b, GroupedKeys):
                    buckets["groups"] = groups.get(i, {})
                    buckets["oversized"] = oversized.get(i, [])
                out[i] = keyed.merge_reports([parts_i[i] for parts_i in blocked.blocker_parts if parts_i], buckets)
        return out

    def _groups(
        self, blocked: BlockedFutures, scanned: Scanned
    ) -> tuple[dict[int, dict[int, dict[str, int]]], dict[int, list[dict[str, Any]]]]:
        """Per blocker with groups: each group's :data:`GROUP_STATS` over every shuffle part, and its
        oversized buckets with their first member's record (read from its partition)."""
        if not blocked.groups:
            return {}, {}
        got = self.client.gather(blocked.groups)
        rows = np.concatenate([g[0] for g in got])
        over = np.concatenate([g[1] for g in got])
        groups: dict[int, dict[int, dict[str, int]]] = {}
        for row in rows.tolist():  # one row per (blocker, group, part): few
            cell = groups.setdefault(row[0], {}).setdefault(row[1], dict.fromkeys(GROUP_STATS, 0))
            for name, x in zip(GROUP_STATS, row[2:]):
                cell[name] = max(cell[name], x) if name == "largest_bucket" else cell[name] + x
        oversized: dict[int, list[dict[str, Any]]] = {}
        if len(over):
            need = np.unique(over[:, 3])
            owner = np.searchsorted(scanned.offsets, need, side="right") - 1
            futs = {
                i: self.submit(task_serve, self.ref, self.parts[i], int(scanned.offsets[i]), [need[owner == i]])
                for i in np.unique(owner).tolist()
            }
            served = {i: f[0] for i, f in zip(futs, self.client.gather(list(futs.values())))}
            for blocker, group, size, g in over.tolist():
                i = int(np.searchsorted(scanned.offsets, g, side="right") - 1)
                row = int(np.searchsorted(need[owner == i], g))
                oversized.setdefault(blocker, []).append(
                    {"group": group, "size": size, "record": served[i].take(np.array([row], dtype=np.int64))}
                )
        return groups, oversized


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


def _n_pairs(pairs: Any) -> int:
    return len(pairs[0])


def task_kept(verified: Any, threshold: float, auto: bool) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64]]:
    """A verify task's kept pairs ``(left, right, score)``, at or above the chosen ``threshold`` (``auto``:
    the task kept those at or above the lowest threshold the choice could give)."""
    left, right, score = verified[0], verified[1], verified[2]
    if auto:
        keep = kept_scores(score, threshold)
        return left[keep], right[keep], score[keep]
    return left, right, score


def task_candidates(packed: npt.NDArray[np.uint64], verified: Any) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64]]:
    """Every candidate of a part with its score ``(left, right, score)``."""
    left, right = unpack_pairs(packed)
    return left, right, verified[4]


def _pick_collapsed(part: ExactPart, i: int) -> Int64Array:
    return part.collapsed[i]


def _exact_stats(part: ExactPart) -> Int64Array:
    return part.stats


def _take(active: Int64Array, at: Int64Array, offset: int) -> Int64Array:
    """Global indices of the active records at positions ``at`` of a partition's active list."""
    out: Int64Array = active[at] + offset
    return out


def population_of(per_source: Int64Array, cross_source_only: bool) -> int:
    """:func:`~er_framework.data.pair_population` from the records per source."""
    n = int(per_source.sum())
    total = n * (n - 1) // 2
    if not cross_source_only:
        return total
    return int(total - sum(int(k) * (int(k) - 1) // 2 for k in per_source.tolist()))


def _pick_attr(obj: Any, name: str, i: int) -> Any:
    return getattr(obj, name)[i]


def _run_length(blocked: Blocked, k: int) -> int:
    """Records of a partition sorted by window pass ``k``."""
    return len(blocked.runs[k][1]) if k < len(blocked.runs) else 0


def _pick_many(obj: Any, idx: tuple[int, ...]) -> tuple[Any, ...]:
    return tuple(obj[i] for i in idx)


def _bucket_stats(buckets: Buckets) -> Int64Array:
    return buckets.stats


def _group_parts(buckets: Buckets) -> tuple[Int64Array, Int64Array]:
    return buckets.group_stats, buckets.oversized


def _report_and_problems(
    blocked: Blocked,
) -> tuple[dict[str, Any], list[Problem], list[dict[str, Any]], tuple[int, int, int], Int64Array | None]:
    return blocked.report, blocked.problems, blocked.blocker_reports, blocked.tokens, blocked.lost


def _partition_problems(
    job: Job, client: Any, block_futs: list[Any]
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]], list[tuple[int, int, int]], list[Int64Array]]:
    """The shingler's and the blockers' per-partition reports, token counts and (pruning) the shingles each
    record lost; every partition's input problems raised together."""
    got = client.gather([client.submit(_report_and_problems, f, pure=False) for f in block_futs])
    problems = [pr for g in got for pr in g[1]]
    if problems:
        raise InputError(problems)
    return [g[0] for g in got], [g[2] for g in got], [g[3] for g in got], [g[4] for g in got if g[4] is not None]


def tokens_report(engine: Engine, counts: list[tuple[int, int, int]]) -> dict[str, Any]:
    """The report's ``tokens`` section from the partitions' ``(records, empty sets, tokens)``, with the
    local executor's definitions (:func:`stages.shingle_and_sign`): the same counts, ``mean_tokens``
    rounded as locally, and ``tokens_counted`` as the local run of this job says. Two keys say what is
    true on Dask and differ from a local run: ``token_sets_kept`` is false (each task drops its token
    sets once its records are signed and keyed; a local run may keep them), and ``chunks`` is the number
    of partitions shingled (locally: the chunks of ``chunk_records``). Empty without a shingler, as locally."""
    if engine.shingler is None:
        return {}
    n = sum(c[0] for c in counts)
    total = sum(c[2] for c in counts)
    return {
        "records_shingled": n,
        "empty_token_sets": sum(c[1] for c in counts),
        # sizes.mean() locally: a sum of whole numbers below 2**53 is exact, so the same float
        "mean_tokens": round(total / n, 2) if n else 0.0,
        "total_tokens": total,
        "tokens_counted": "with repeats" if engine.token_keep() == "none" else "distinct",
        "token_sets_kept": False,
        "chunks": len(counts),
    }


def _submit_windows(client: Any, engine: Engine, job: Job, block_futs: list[Any], n_parts: int) -> list[Any]:
    """The tasks of the blockers that pair records within windows of a sort order: per pass, a distributed
    sort (sampled boundaries, each partition's sorted run cut into ranges, one task per range) and each
    range's window pairs, with the last ``window - 1`` records of the ranges before it carried in.
    Returns one task per range and pass, giving pairs split by pair hash as :func:`task_buckets` does."""
    passes = window_passes(engine, job)
    # the pairs each blocker's passes will make, checked on every partition's count before any pair is made
    counts = client.gather([client.submit(_run_length, f, k, pure=False) for k in range(len(passes)) for f in block_futs])
    per_blocker: dict[int, list[int]] = {}
    for k, (blocker_no, _) in enumerate(passes):
        per_blocker.setdefault(blocker_no, []).append(sum(counts[k * len(block_futs) : (k + 1) * len(block_futs)]))
    for blocker_no, rows in per_blocker.items():
        windowed = ability(engine.blockers[blocker_no], Windowed)
        assert windowed is not None  # a pass of Engine.window_keys
        windowed.check_window_pairs(rows)
    out = []
    for k, (blocker_no, window) in enumerate(passes):
        samples = [client.submit(_pick_attr, f, "samples", k, pure=False) for f in block_futs]
        bounds = client.submit(task_bounds, samples, n_parts, pure=False, retries=3)
        runs = [client.submit(_pick_attr, f, "runs", k, pure=False) for f in block_futs]
        split = [client.submit(task_split, r, bounds, n_parts, pure=False, retries=3) for r in runs]
        ranges = [
            client.submit(task_range, *[client.submit(_pick, sp, r, pure=False) for sp in split], pure=False, retries=3)
            for r in range(n_parts)
        ]
        carry: Any = (np.zeros(0, np.int64), np.zeros(0, np.int32))
        for r in range(n_parts):
            out.append(client.submit(task_windows, ranges[r], carry, window, engine.link, blocker_no, n_parts, pure=False, retries=3))
            carry = client.submit(task_carry, carry, ranges[r], window - 1, pure=False, retries=3)
    return out


def _same(obj: Any) -> Any:
    return obj


def _sum_counts(parts: list[tuple[Int64Array, npt.NDArray[np.float64]]]) -> tuple[Int64Array, npt.NDArray[np.float64]]:
    """Distinct codes (sorted) and their counts summed over the parts (whole numbers: exact in any order)."""
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0)
    codes = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    uniq, inv = np.unique(codes, return_inverse=True)
    return uniq.astype(np.int64), np.bincount(inv.reshape(-1), weights=counts, minlength=len(uniq)).astype(np.float64)


__all__ = [
    "BlockedFutures",
    "DaskRun",
    "Found",
    "Scanned",
    "options",
    "tokens_report",
]
