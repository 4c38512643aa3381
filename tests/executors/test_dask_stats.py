"""The Dask executor's report statistics merged from partitions (run in this process): distinct counts by a hash
shuffle equal a naive set over all partitions, the HTML statistics and a source's reading statistics merge to the
local read's, the window passes' key counts, the diagnostics' pool."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from er_framework.config.resolve import parse_job
from er_framework.data import Records
from er_framework.executors.dask_stats import (
    HTML_POSITIONS,
    counted_before,
    field_digests,
    merge_html_stats,
    merge_source_stats,
    pool_sizes,
    read_with_stats,
    split_digests,
    task_count_digests,
    task_pass_keys,
    task_window_pairs,
    value_digests,
    with_distinct,
)
from er_framework.executors.dask_tasks import Blocked, JobRef, Part, read_normalized
from er_framework.io.html import extract_text
from er_framework.normalize import merge_stats, normalize_column_keeping_input

ROOT = Path(__file__).resolve().parents[2]


def _records(values: list[str | None]) -> Records:
    return Records(
        ids=[str(i) for i in range(len(values))], source=np.zeros(len(values), np.int32), source_names=["s"], fields={"f": values}
    )


def _counts(parts: list[dict[str, tuple[np.ndarray, ...]]], n_out: int) -> dict[str, list[int]]:
    split = [split_digests(p, n_out) for p in parts]
    total: dict[str, list[int]] = {}
    for j in range(n_out):
        for name, c in task_count_digests(*[sp[j] for sp in split]).items():
            got = total.setdefault(name, [0] * len(c))
            for i, x in enumerate(c):
                got[i] += x
    return total


@pytest.mark.parametrize("n, n_parts, n_out, distinct", [(0, 1, 1, 1), (50, 1, 3, 10), (400, 5, 4, 60), (1000, 7, 1, 900), (300, 3, 8, 3)])
def test_distinct_counts_of_the_parts_equal_the_local_normalize_stats(n: int, n_parts: int, n_out: int, distinct: int) -> None:
    """Values repeated within and across partitions (missing ones, placeholders, unreadable ones too): the summed
    counts of the hash parts are the local stage's ``distinct_before`` / ``distinct_after`` of every value."""
    rng = np.random.default_rng(n + n_parts + n_out)
    pool: list[str | None] = [f"User{i}@Example.com" for i in range(distinct)]
    pool += [f"user{i}@example.com" for i in range(distinct // 2)]  # the same after normalizing
    pool += [None, "", "  ", "N/A", "null", "bad", "no at sign", "x@"]
    values = [pool[i] for i in rng.integers(0, len(pool), n)]
    cuts = sorted(rng.integers(0, n + 1, n_parts - 1).tolist())
    bounds = list(zip([0, *cuts], [*cuts, n]))
    parts, stats = [], []
    for a, b in bounds:
        given = _records(values[a:b])
        out, st, _ = normalize_column_keeping_input(given.fields["f"], ["email"])
        parts.append(field_digests(given, _records(out), ["f"]))
        stats.append({"f": st})
    _, want, _ = normalize_column_keeping_input(values, ["email"])
    got = _counts(parts, n_out)["f"]
    assert got == [want["distinct_before"], want["distinct_after"]]
    merged = with_distinct(merge_stats(stats), {"f": (got[0], got[1])})
    assert merged["f"] == want
    # against a naive set of the values
    assert got[1] == len({v.lower() for v in values if v and "@" in v and not v.endswith("@") and v.count("@") == 1})


def test_a_value_counts_before_as_the_local_stage_counts_it() -> None:
    assert counted_before("x", "x") and counted_before("bad", None)
    assert not counted_before(None, None) and not counted_before("", None) and not counted_before(" \t", None)
    assert not counted_before(math.nan, None) and not counted_before("N/A", None)
    assert counted_before(" ", "kept")  # a chain that gave a result: counted whatever the value


def test_value_digests_are_distinct_and_tell_texts_from_other_values() -> None:
    d = value_digests(["a", "b", "a", 1, "1"])
    assert len(d) == 4 and np.all(np.diff(d.astype(np.float64)) >= 0)
    assert len(value_digests([])) == 0


def test_the_html_statistics_of_the_parts_merge_to_those_of_the_whole() -> None:
    pages = ["<p>x</p>", "<p></p>", None, "plain", "<div></div>"] * 9
    _, whole = extract_text(pages)
    assert len(whole["empty_positions"]) == HTML_POSITIONS < whole["empty_after_extraction"]  # the local cut
    parts, start = [], 0
    for a, b in [(0, 7), (7, 7), (7, 30), (30, 45)]:
        _, st = extract_text(pages[a:b])
        parts.append((start, st))
        start += b - a
    assert merge_html_stats(parts) == whole


def test_the_sources_section_is_the_local_read_stages() -> None:
    """Per source: the reader's statistics in input order, the HTML columns merged, a source without any is {}."""
    job = parse_job(ROOT / "configs" / "febrl4.yaml")
    parts = [Part(0, "a", (0, 10)), Part(0, "a", (10, 20)), Part(1, "b", None)]
    counts = np.array([3, 4, 5], dtype=np.int64)
    html = [{"html:t": {"pages": 3, "empty_positions": [0, 2]}}, {"html:t": {"pages": 4, "empty_positions": [1]}}, {}]
    got = merge_source_stats(job, parts, counts, [({}, html[0]), ({"files": 1}, html[1]), ({}, html[2])])
    assert got == {"A": {"files": 1, "html:t": {"pages": 7, "empty_positions": [0, 2, 4]}}, "B": {}}


@pytest.mark.parametrize("n_out", [1, 3])
def test_window_pass_keys_count_the_distinct_keys_of_every_partition(n_out: int) -> None:
    rng = np.random.default_rng(n_out)
    runs = []
    every: list[str] = []
    for size in (0, 30, 50, 7):
        keys = np.sort(np.array([f"k{x}" for x in rng.integers(0, 25, size)], dtype=np.dtypes.StringDType()))
        every += keys.tolist()
        g = np.arange(size, dtype=np.int64)
        runs.append(Blocked([], [(keys, g, np.zeros(size, np.int32))], [], {}, []))
    got = [task_pass_keys(b, 0, n_out) for b in runs]
    assert sum(g[0] for g in got) == len(every)
    total = [sum(task_count_digests(*[g[1][j] for g in got]).get("keys", (0,))[0] for j in range(n_out))]
    assert total == [len(set(every))]
    assert task_pass_keys(runs[1], 1, n_out) == (0, [{} for _ in range(n_out)])  # no such pass
    assert task_window_pairs([(np.arange(3, dtype=np.uint64), np.zeros(3, np.int64)), (np.zeros(0, np.uint64), np.zeros(0, np.int64))]) == 3


@pytest.mark.parametrize("config", ["news.yaml", "febrl4.yaml"])
def test_the_read_with_statistics_gives_the_records_every_other_task_reads(config: str) -> None:
    """A page folder (read whole, with its files' statistics) and byte ranges of a file: the same normalized
    records as :func:`read_normalized`, the normalize stats too."""
    from er_framework.executors.dask import plan_parts

    path = ROOT / "configs" / config
    job = parse_job(path)
    text = path.read_text(encoding="utf-8")
    ref = JobRef(text, str(path.resolve()), str(job.base_dir), hashlib.sha256((text + str(job.base_dir) + "stats").encode()).hexdigest())
    parts = plan_parts(job, 0.2)
    assert len(parts) >= (1 if config == "news.yaml" else 3)
    for part in parts:
        recs, stats, read = read_with_stats(ref, part)
        want, want_stats = read_normalized(ref, part)
        assert recs.ids == want.ids and recs.fields == want.fields and np.array_equal(recs.source, want.source)
        assert stats == want_stats and set(read.digests) == set(stats)
        assert bool(read.reader) == (config == "news.yaml") and bool(read.html) == (config == "news.yaml")


def test_the_diagnostics_pool_takes_every_active_record_or_a_draw_of_the_limit() -> None:
    active = np.array([5, 0, 12, 3], dtype=np.int64)
    assert np.array_equal(pool_sizes(active, 20, 1), active)
    drawn = pool_sizes(active, 10, 1)
    assert drawn.sum() == 10 and np.all(drawn <= active) and np.array_equal(drawn, pool_sizes(active, 10, 1))
