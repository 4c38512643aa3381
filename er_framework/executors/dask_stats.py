"""The Dask executor's report statistics that the local run gathers over all records at once, computed where
the data is and merged on the client, which holds O(partitions) numbers:

* **sources** — each read task keeps its reader's statistics (a page folder's) and those of the HTML text
  extraction; the client adds the counts up per source and shifts each partition's example positions by
  where the partition starts in its source (:func:`merge_source_stats`), as the local read stage reports them
  (:func:`~er_framework.engine.stages.reading.read_sources`).
* **normalize** — the distinct values of each normalized field, before and after its chain, over every
  partition: each read task hashes its distinct values (BLAKE2b-64 of the text,
  :func:`~er_framework.kernels.digests.text_digests`) and sends each hash to one of P shuffle parts by the
  hash; a part counts the distinct hashes it received (a value lives in one part only) and the client sums P
  counts (:func:`distinct_counts`). The other statistics are sums, merged by
  :func:`~er_framework.normalize.merge_stats`.
* **blockers** — the per-key statistics of a blocker that pairs records within windows of a sort order
  (``sorted_neighbourhood``): records sorted per pass summed over the partitions, distinct sort keys counted
  by the same hash shuffle, and the pairs each pass generated counted by the window tasks' results
  (:func:`submit_window_stats`, :func:`window_reports`).
* **diagnostics** — the blockers' :class:`~er_framework.capabilities.Diagnostic` (LSH's measured S-curve) run
  on one worker on a batch of the active records read from their partitions: every active record, in the
  local run's order, when there are at most :data:`DIAGNOSTIC_RECORDS` (then the section is the local run's);
  beyond, a uniform random pool of that many, drawn per partition (:func:`diagnostics_of_parts`).

Distinct counts by 64-bit hashes are exact unless two different values share a hash: a collision makes the
count one lower; among a billion distinct values the chance that any two collide is about 2.7%
(n**2 / 2**65), among ten million about 3e-6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Diagnostic, Windowed, ability, has
from er_framework.config.resolve import Job
from er_framework.data import Records
from er_framework.engine import stages
from er_framework.engine.engine import Engine
from er_framework.engine.model import Model
from er_framework.executors.dask_tasks import Blocked, Int64Array, JobRef, Part, engine, read_as_read_stats, read_normalized
from er_framework.kernels.digests import text_digests
from er_framework.kernels.hashing import mix64
from er_framework.normalize import is_missing

__all__ = [
    "DIAGNOSTIC_RECORDS",
    "HTML_POSITIONS",
    "ReadStats",
    "WindowStats",
    "counted_before",
    "diagnostics_of_parts",
    "distinct_counts",
    "field_digests",
    "merge_html_stats",
    "merge_source_stats",
    "pool_sizes",
    "read_with_stats",
    "source_stats",
    "split_digests",
    "submit_window_stats",
    "task_count_digests",
    "task_diagnostics",
    "task_pass_keys",
    "task_pool",
    "task_window_pairs",
    "value_digests",
    "window_passes",
    "window_reports",
    "with_distinct",
]

UInt64Array = npt.NDArray[np.uint64]

#: example positions an HTML column's statistics show (``empty_positions``, ...), as
#: :func:`~er_framework.io.html.extract_text` shows them (a test checks that they agree)
HTML_POSITIONS = 10
#: the HTML extraction's counts, summed over the partitions of a source
HTML_SUMS = ("pages", "missing", "plain_text", "empty_after_extraction", "boilerplate_fallbacks")
#: the HTML extraction's example positions (within the source), shifted by the partition's start
HTML_LISTS = ("empty_positions", "boilerplate_fallback_positions")
#: active records the diagnostics probe at most on Dask (the batch one worker signs and probes)
DIAGNOSTIC_RECORDS = 50_000


# ------------------------------------------------------------------ read: sources and normalize


@dataclass
class ReadStats:
    """What a read task keeps for the report besides the normalize stage's sums: the reader's and the HTML
    extraction's statistics, and per normalized field the hashes of its distinct values before and after."""

    reader: dict[str, Any]
    html: dict[str, Any]
    digests: dict[str, tuple[UInt64Array, UInt64Array]]


def counted_before(value: Any, result: Any) -> bool:
    """Whether a distinct value given counts in ``distinct_before`` as
    :func:`~er_framework.normalize.normalize_column_keeping_input` counts: a value its chain gave a result,
    or one neither missing (``None``, NaN, blank) nor a placeholder (a value the chain could not read)."""
    if result is not None:
        return True
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if isinstance(value, str) and (not value or value.isspace()):
        return False
    return not is_missing(value)


def value_digests(values: Any) -> UInt64Array:
    """The distinct 64-bit hashes of ``values`` (texts: BLAKE2b-64 of the UTF-8; a value that is not a text, which
    the readers do not give, by its type and ``repr``)."""
    texts = [v if isinstance(v, str) else f"\x00{type(v).__name__}\x00{v!r}" for v in values]
    return np.unique(text_digests(texts)) if texts else np.zeros(0, np.uint64)


def field_digests(given: Records, normalized: Records, fields: list[str]) -> dict[str, tuple[UInt64Array, UInt64Array]]:
    """Per field of ``fields``: the hashes of its distinct values counted in ``distinct_before`` and of its
    distinct normalized values (``distinct_after``: not missing)."""
    out: dict[str, tuple[UInt64Array, UInt64Array]] = {}
    for name in fields:
        table = dict(zip(given.fields[name], normalized.fields[name]))  # each distinct value and its result
        before = [v for v, r in table.items() if counted_before(v, r)]
        after = {r for r in table.values() if r is not None}
        out[name] = (value_digests(before), value_digests(after))
    return out


def read_with_stats(ref: JobRef, part: Part) -> tuple[Records, dict[str, Any], ReadStats]:
    """The partition read and normalized as :func:`~er_framework.executors.dask_tasks.read_normalized` reads it
    (:func:`~er_framework.executors.dask_tasks.read_as_read_stats`, the reader's statistics kept), the normalize
    stage's per-field stats, and its :class:`ReadStats`."""
    job = engine(ref).job
    recs, reader, html = read_as_read_stats(ref, part)
    normalized, stats = stages.normalize(job, recs)
    normalized.source[:] = part.source
    return normalized, stats, ReadStats(reader, html, field_digests(recs, normalized, sorted(stats)))


def source_stats(read: ReadStats) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the client gathers of a read task's :class:`ReadStats`: the reader's and the HTML statistics."""
    return read.reader, read.html


def merge_html_stats(parts: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """One HTML column's statistics over a source from its partitions' ``(start in the source, stats)``, in
    order: counts summed, example positions shifted to the source's and the first :data:`HTML_POSITIONS` kept."""
    out = dict(parts[0][1])
    for key in HTML_SUMS:
        if key in out:
            out[key] = sum(int(st.get(key, 0)) for _, st in parts)
    for key in HTML_LISTS:
        if key in out:
            out[key] = [start + int(p) for start, st in parts for p in st.get(key, [])][:HTML_POSITIONS]
    return out


def merge_source_stats(job: Job, parts: list[Part], counts: Int64Array, got: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """report.json's ``sources`` from each partition's reader and HTML statistics (``got``, in partition order),
    as :func:`~er_framework.engine.stages.reading.read_sources` gives them: the reader's in input order (a later
    input's replace an earlier's, as locally), the HTML columns' merged, and ``files`` for a source of several."""
    out: dict[str, Any] = {}
    for i, src in enumerate(job.spec.sources):
        mine = [k for k, p in enumerate(parts) if p.source == i]
        starts = np.concatenate([[0], np.cumsum(counts[mine])]).astype(np.int64) if mine else np.zeros(1, np.int64)
        st: dict[str, Any] = {}
        for k in mine:
            st.update(got[k][0])
        for column in dict.fromkeys(c for k in mine for c in got[k][1]):
            st[column] = merge_html_stats([(int(starts[n]), got[k][1][column]) for n, k in enumerate(mine) if column in got[k][1]])
        if src.name not in job.frames and src.database is None and len(inputs := job.source_inputs(i)) > 1:
            st["files"] = len(inputs)
        out[src.name] = st
    return out


def split_digests(digests: dict[str, tuple[UInt64Array, ...]], n_out: int) -> list[dict[str, tuple[UInt64Array, ...]]]:
    """Each field's hashes sent to the part of ``n_out`` given by the hash (every copy of a value to one part)."""
    out: list[dict[str, tuple[UInt64Array, ...]]] = [{} for _ in range(n_out)]
    for name, arrays in digests.items():
        dests = [(mix64(a) % np.uint64(n_out)).astype(np.int64) for a in arrays]
        for j in range(n_out):
            out[j][name] = tuple(a[d == j] for a, d in zip(arrays, dests))
    return out


def task_count_digests(*pieces: dict[str, tuple[UInt64Array, ...]]) -> dict[str, tuple[int, ...]]:
    """The distinct hashes of one part, per field and array (the parts' counts add up: a hash is in one part)."""
    out: dict[str, tuple[int, ...]] = {}
    for name in dict.fromkeys(n for p in pieces for n in p):
        arrays = [p[name] for p in pieces if name in p]
        out[name] = tuple(len(np.unique(np.concatenate([a[j] for a in arrays]))) for j in range(len(arrays[0])))
    return out


def _digests(read: ReadStats) -> dict[str, tuple[UInt64Array, UInt64Array]]:
    return read.digests


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


def _count_parts(run: Any, split: list[Any]) -> list[Any]:
    """One task per hash part counting its distinct hashes (``split``: futures of each partition's hashes split
    in ``run.n_parts``); the hashes stay on the workers."""
    return [run.submit(task_count_digests, *[run.submit(_pick, sp, j, retries=0) for sp in split]) for j in range(run.n_parts)]


def _summed(parts: list[dict[str, tuple[int, ...]]]) -> dict[str, list[int]]:
    """The parts' distinct counts summed per field."""
    total: dict[str, list[int]] = {}
    for part in parts:
        for name, c in part.items():
            got = total.setdefault(name, [0] * len(c))
            for j, x in enumerate(c):
                got[j] += int(x)
    return total


def distinct_counts(run: Any, read_futs: list[Any]) -> dict[str, tuple[int, int]]:
    """Per normalized field, its distinct values before and after normalizing over every partition
    (``read_futs``: futures of each read task's :class:`ReadStats`); a hash shuffle on the workers."""
    split = [run.submit(split_digests, run.submit(_digests, f, retries=0), run.n_parts) for f in read_futs]
    return {name: (c[0], c[1]) for name, c in _summed(run.client.gather(_count_parts(run, split))).items()}


def with_distinct(stats: dict[str, dict[str, Any]], counts: dict[str, tuple[int, int]]) -> dict[str, dict[str, Any]]:
    """The merged normalize ``stats`` with each field's ``distinct_before`` and ``distinct_after`` over every part."""
    for name, st in stats.items():
        if name in counts:
            st["distinct_before"], st["distinct_after"] = counts[name]
    return stats


# ------------------------------------------------------------------ blockers: the window passes' statistics


def window_passes(engine: Engine, job: Job) -> list[tuple[int, int]]:
    """``(blocker number, window)`` of every window pass, in the order of :meth:`Engine.window_keys`
    (the passes are counted on an empty batch: their number does not depend on the records)."""
    if not any(engine.has_windows(b) and not engine.has_keys(b) for b in engine.blockers):
        return []
    sizes = [w.window_size() if (w := ability(b, Windowed)) is not None else 0 for b in engine.blockers]
    return [(i, sizes[i]) for i, _, _ in engine.window_keys(engine.block_batch(_empty(job)))]


def _empty(job: Job) -> Records:
    fields = sorted({f for src in job.spec.sources for f in src.fields})
    return Records(ids=[], source=np.zeros(0, np.int32), source_names=[s.name for s in job.spec.sources], fields={f: [] for f in fields})


def task_pass_keys(blocked: Blocked, k: int, n_out: int) -> tuple[int, list[dict[str, tuple[UInt64Array, ...]]]]:
    """A partition's records sorted by window pass ``k`` and the hashes of its distinct sort keys, split by hash."""
    if k >= len(blocked.runs):
        return 0, [{} for _ in range(n_out)]
    keys = blocked.runs[k][0]
    return len(keys), split_digests({"keys": (value_digests(keys.tolist()),)}, n_out)


def task_window_pairs(out: list[tuple[UInt64Array, Int64Array]]) -> int:
    """The pairs a window task made (each pair of a pass once: a record is at one place of its pass's order)."""
    return int(sum(len(p[0]) for p in out))


@dataclass
class WindowStats:
    """Futures of the window passes' statistics (small results), per pass: each partition's records sorted,
    each hash part's count of distinct sort keys, each range's pairs generated."""

    passes: list[tuple[int, int]]
    records: list[list[Any]]
    distinct: list[list[Any]]
    pairs: list[list[Any]]


def submit_window_stats(run: Any, block_futs: list[Any], window_futs: list[Any]) -> WindowStats | None:
    """The tasks counting the window passes' statistics (``window_futs``: one task per range and pass, pass by
    pass, as the blocking phase submits them); None without window passes. Only counts are kept: the key
    hashes are released once counted."""
    passes = window_passes(run.engine, run.job)
    if not passes:
        return None
    n = run.n_parts
    keys = [[run.submit(task_pass_keys, f, k, n) for f in block_futs] for k in range(len(passes))]
    return WindowStats(
        passes,
        [[run.submit(_pick, f, 0, retries=0) for f in fs] for fs in keys],
        [_count_parts(run, [run.submit(_pick, f, 1, retries=0) for f in fs]) for fs in keys],
        [[run.submit(task_window_pairs, w, retries=0) for w in window_futs[k * n : (k + 1) * n]] for k in range(len(passes))],
    )


def _pass_counts(run: Any, stats: WindowStats, k: int) -> dict[str, int]:
    """Pass ``k``'s records sorted, distinct keys and pairs generated, over every partition and range."""
    records, distinct, pairs = run.client.gather([stats.records[k], stats.distinct[k], stats.pairs[k]])
    return {
        "records_sorted": int(sum(records)),
        "distinct_keys": int(_summed(distinct).get("keys", [0])[0]),
        "pairs_generated": int(sum(pairs)),
    }


def window_reports(run: Any, stats: WindowStats | None, records: int, per_blocker: Int64Array) -> dict[int, dict[str, Any]]:
    """Per windowed blocker, its report as its ``block`` gives it on all the active records (``records``): the
    report it gives on no records, with the counts the workers measured filled in where it names them
    (``records``, ``per_key``'s ``records_sorted``, ``records_missing``, ``distinct_keys``,
    ``pairs_generated``, ``raw_pairs``, ``candidates``: ``sorted_neighbourhood``'s); a blocker whose report
    has another shape is left out (its section then has its parameters and ``candidate_pairs`` only)."""
    if stats is None:
        return {}
    engine = run.engine
    counts = [_pass_counts(run, stats, k) for k in range(len(stats.passes))]
    out: dict[int, dict[str, Any]] = {}
    for b in dict.fromkeys(b for b, _ in stats.passes):
        mine = [c for (blocker, _), c in zip(stats.passes, counts) if blocker == b]
        report = dict(engine.blockers[b].block(engine.block_batch(_empty(run.job))).report)
        per_key = report.get("per_key")
        if not isinstance(per_key, list) or len(per_key) != len(mine):
            continue
        for entry, c in zip(per_key, mine):
            entry.update({k: v for k, v in c.items() if k in entry})
            if "records_missing" in entry:
                entry["records_missing"] = records - c["records_sorted"]
        filled = {"records": records, "raw_pairs": sum(c["pairs_generated"] for c in mine), "candidates": int(per_blocker[b])}
        report.update({k: v for k, v in filled.items() if k in report})
        out[b] = report
    return out


# ------------------------------------------------------------------ diagnostics


def task_pool(ref: JobRef, part: Part, active: Int64Array, take: int, seed: int) -> Records:
    """The partition's active records in the diagnostics' pool: all (``take`` >= their number), else ``take``
    drawn without replacement with ``seed`` (kept in their order)."""
    rows = active
    if take < len(active):
        rows = np.sort(np.random.default_rng(seed).choice(active, size=take, replace=False))
    return read_normalized(ref, part)[0].take(rows)


def task_diagnostics(ref: JobRef, model: Model | None, sample: int, *pools: Records) -> dict[str, Any]:
    """The blockers' diagnostics (:func:`~er_framework.engine.stages.diagnostics`) on a batch of the pooled
    records, signed as the local shingle stage signs them (token sets recomputed on demand when not kept)."""
    eng = engine(ref)
    if model is not None:
        eng = eng.with_model(model)
    job = eng.job
    names = [s.name for s in job.spec.sources]
    if pools:
        stacked = Records.stack(list(pools))  # each partition's records carry the global source number
        recs = Records(ids=stacked.ids, source=stacked.source, source_names=names, fields=stacked.fields)
    else:
        recs = _empty(job)
    batch = eng.signed_batch(recs).batch
    if batch.tokens is None and eng.shingler is not None:
        shingler = eng.shingler
        batch.token_source = lambda rows: shingler.shingle(recs.take(rows))
    return stages.diagnostics(eng, batch, sample)


def pool_sizes(active: Int64Array, limit: int, seed: int) -> Int64Array:
    """Active records each partition gives to the pool: all when they fit ``limit``, else a uniform draw of
    ``limit`` records over the partitions (multivariate hypergeometric)."""
    if int(active.sum()) <= limit:
        return active.astype(np.int64)
    return np.random.default_rng(seed).multivariate_hypergeometric(active.astype(np.int64), limit).astype(np.int64)


def diagnostics_of_parts(run: Any, scanned: Any) -> dict[str, Any]:
    """report.json's ``diagnostics``: the blockers' :class:`~er_framework.capabilities.Diagnostic` on one
    worker, on every active record in order when they are at most :data:`DIAGNOSTIC_RECORDS` (the local run's
    batch: the same section), else on a uniform random pool of that many; ``{}`` when the job probes none."""
    job = run.job
    sample = int(job.spec.diagnostics)
    if sample <= 0 or not any(has(b, Diagnostic) for b in run.engine.blockers):
        return {}
    seed = int(job.context.seed)
    sizes = pool_sizes(scanned.active_counts, DIAGNOSTIC_RECORDS, seed)
    pools = [
        run.submit(task_pool, run.ref, p, scanned.active[i], int(sizes[i]), seed + 1 + i) for i, p in enumerate(run.parts) if sizes[i] > 0
    ]
    result: dict[str, Any] = run.client.gather(run.submit(task_diagnostics, run.ref, run.model, sample, *pools))
    return result
