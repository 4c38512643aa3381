"""The built-in golden rules against a naive per-cluster reference, on random clusters (hypothesis)."""

from __future__ import annotations

import math
import types
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.components import GoldenRule, GoldenValues
from er_framework.config.resolve import parse_job
from er_framework.executors import run_job
from er_framework.registry import build_registry
from er_framework.testing import check_component, check_golden_rule, sample_golden_values
from er_plugins.golden import BUILTIN_GOLDEN_RULES, Longest, MostFrequent, MostRecent, SourcePriority, value_counts

# ---------------------------------------------------------------- the naive references: one cluster at a time


def _tie_break(rows: list[int], gv: GoldenValues) -> int:
    """The first of ``rows`` by source priority, then input order."""
    return min(rows, key=lambda r: (int(gv.priority[r]), r))


def _present(gv: GoldenValues, c: int) -> list[int]:
    return [int(r) for r in gv.members[gv.starts[c] : gv.starts[c + 1]] if gv.values[r] is not None]


def most_frequent_reference(gv: GoldenValues) -> list[int]:
    out = []
    for c in range(gv.clusters):
        rows = _present(gv, c)
        if not rows:
            out.append(-1)
            continue
        counts = Counter(gv.values[r] for r in rows)
        top = max(counts.values())
        out.append(_tie_break([r for r in rows if counts[gv.values[r]] == top], gv))
    return out


def most_recent_reference(gv: GoldenValues) -> list[int]:
    assert gv.dates is not None
    out = []
    for c in range(gv.clusters):
        rows = _present(gv, c)
        if not rows:
            out.append(-1)
            continue
        dated = [r for r in rows if not math.isnan(gv.dates[r])]
        if dated:
            latest = max(gv.dates[r] for r in dated)
            rows = [r for r in dated if gv.dates[r] == latest]
        out.append(_tie_break(rows, gv))
    return out


def longest_reference(gv: GoldenValues) -> list[int]:
    out = []
    for c in range(gv.clusters):
        rows = _present(gv, c)
        if not rows:
            out.append(-1)
            continue
        top = max(len(gv.values[r]) for r in rows)
        out.append(_tie_break([r for r in rows if len(gv.values[r]) == top], gv))
    return out


def source_priority_reference(gv: GoldenValues) -> list[int]:
    out = []
    for c in range(gv.clusters):
        rows = _present(gv, c)
        out.append(_tie_break(rows, gv) if rows else -1)
    return out


REFERENCES = {
    MostFrequent: most_frequent_reference,
    MostRecent: most_recent_reference,
    Longest: longest_reference,
    SourcePriority: source_priority_reference,
}


@st.composite
def golden_values(draw: st.DrawFn) -> GoldenValues:
    """Random clusters (members in input order), values from a small pool (repeats, equal lengths, missing)."""
    n = draw(st.integers(0, 40))
    labels = np.asarray(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)), dtype=np.int64)
    members = np.argsort(labels, kind="stable").astype(np.int64)
    _, sizes = np.unique(labels, return_counts=True)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pool = ["ann", "anna", "bob", "rob", "anne", "x", "robert"]
    picks = draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)), min_size=n, max_size=n))
    values = np.empty(n, dtype=object)
    values[:] = picks
    distinct = {v: i for i, v in enumerate(pool)}
    codes = np.asarray([-1 if v is None else distinct[v] for v in picks], dtype=np.int64)
    lengths = np.asarray([0 if v is None else len(v) for v in picks], dtype=np.int64)
    priority = np.asarray(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    raw = draw(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n))
    dates = np.asarray([math.nan if d is None else float(d) for d in raw], dtype=np.float64)
    return GoldenValues(starts, members, values, codes, lengths, priority, dates)


@pytest.mark.parametrize("cls", BUILTIN_GOLDEN_RULES, ids=lambda c: c.name)
@settings(max_examples=150, deadline=None)
@given(gv=golden_values())
def test_builtin_rules_equal_their_naive_reference(cls: type[GoldenRule], gv: GoldenValues) -> None:
    assert cls().choose(gv).tolist() == REFERENCES[cls](gv)


@pytest.mark.parametrize("cls", BUILTIN_GOLDEN_RULES, ids=lambda c: c.name)
def test_builtin_rules_keep_the_contract(cls: type[GoldenRule]) -> None:
    check_component(cls)
    for seed in range(3):
        gv = sample_golden_values(clusters=200, seed=seed)
        assert check_golden_rule(cls, gv).tolist() == REFERENCES[cls](gv)


def _one_cluster(values: list[str | None], priority: list[int], dates: list[float] | None = None) -> GoldenValues:
    n = len(values)
    vals = np.empty(n, dtype=object)
    vals[:] = values
    distinct = {v: i for i, v in enumerate(dict.fromkeys(v for v in values if v is not None))}
    codes = np.asarray([-1 if v is None else distinct[v] for v in values], dtype=np.int64)
    lengths = np.asarray([0 if v is None else len(v) for v in values], dtype=np.int64)
    return GoldenValues(
        np.asarray([0, n], dtype=np.int64),
        np.arange(n, dtype=np.int64),
        vals,
        codes,
        lengths,
        np.asarray(priority, dtype=np.int64),
        None if dates is None else np.asarray(dates, dtype=np.float64),
    )


def test_the_tie_rules_by_example() -> None:
    # most_frequent: "bob" twice beats "rob" once, whatever the priority
    assert MostFrequent().choose(_one_cluster(["rob", "bob", "bob"], [0, 1, 1])).tolist() == [1]
    # a tie of counts: the more trusted source's value; then the first record
    assert MostFrequent().choose(_one_cluster(["rob", "bob"], [1, 0])).tolist() == [1]
    assert MostFrequent().choose(_one_cluster(["rob", "bob"], [0, 0])).tolist() == [0]
    # missing values are never chosen while one is present, however many they are
    assert MostFrequent().choose(_one_cluster([None, None, "x"], [0, 0, 2])).tolist() == [2]
    assert Longest().choose(_one_cluster([None, None], [0, 0])).tolist() == [-1]
    # most_recent: a record without a date loses to a dated one, and wins when none has a date
    assert MostRecent().choose(_one_cluster(["a", "b", "c"], [0, 0, 0], [math.nan, 5.0, 3.0])).tolist() == [1]
    assert MostRecent().choose(_one_cluster(["a", "b"], [1, 0], [math.nan, math.nan])).tolist() == [1]
    assert MostRecent().choose(_one_cluster([None, "b"], [0, 0], [9.0, 1.0])).tolist() == [1]
    with pytest.raises(ValueError, match="needs by"):
        MostRecent().choose(_one_cluster(["a"], [0]))
    # longest by characters; source_priority: the most trusted present value
    assert Longest().choose(_one_cluster(["Zoë", "Zoe ", "Z"], [0, 0, 0])).tolist() == [1]
    assert SourcePriority().choose(_one_cluster(["a", None, "c"], [1, 0, 1])).tolist() == [0]


def test_value_counts_counts_within_each_cluster() -> None:
    gv = sample_golden_values(clusters=30, seed=4)
    counts = value_counts(gv)
    for c in range(gv.clusters):
        rows = gv.members[gv.starts[c] : gv.starts[c + 1]]
        for r in rows:
            want = 0 if gv.codes[r] < 0 else int((gv.codes[rows] == gv.codes[r]).sum())
            assert counts[r] == want


# ---------------------------------------------------------------- the plugin example of docs/golden.md

DOC = Path(__file__).resolve().parents[2] / "docs" / "golden.md"


def _doc_plugin() -> types.ModuleType:
    """The Python block of docs/golden.md, run as a module."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    module = types.ModuleType("golden_doc_plugin")
    exec(compile(block, str(DOC), "exec"), module.__dict__)  # noqa: S102 - our own documentation
    return module


def test_the_documented_plugin_rule_registers_keeps_the_contract_and_runs(tmp_path: Path) -> None:
    module = _doc_plugin()
    registry = build_registry(extra_modules=[module], autoload=False)
    cls = registry.get("golden_rule", "fewest_digits").cls
    assert issubclass(cls, GoldenRule)
    check_component(cls)
    gv = _one_cluster(["Ann2", "Ann", "A1n1"], [0, 1, 0])
    assert cls().choose(gv).tolist() == [1]
    (tmp_path / "people.csv").write_text("id,name,email\n1,J0hn Smith,j@x.org\n2,John Smith,j@x.org\n3,Mary,m@y.org\n", encoding="utf-8")
    job = tmp_path / "job.yaml"
    job.write_text(
        "mode: dedup\nsources: [{name: crm, path: people.csv, id: id, fields: [name, email]}]\n"
        "blockers: [{type: field_hash, fields: [email]}]\n"
        "verifier: {type: field_score, threshold: 90, fields: [{field: email, scorer: ratio}]}\n"
        "output: {golden: {rule: most_frequent, fields: {name: fewest_digits}}}\n",
        encoding="utf-8",
    )
    result = run_job(parse_job(job, registry=registry), write=False)
    golden = result.tables["golden"]
    assert golden["name"].tolist() == ["John Smith", "Mary"] and golden["name_id"].tolist() == ["2", "3"]
