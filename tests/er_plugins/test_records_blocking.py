"""Record blockers (er_plugins.records_blocking) against naive Python references."""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

import er_plugins.records_blocking as rb
from er_framework.data import Batch, Pairs, Records
from er_framework.registry import build_registry
from er_framework.testing import check_blocker
from er_plugins.records_blocking import FieldHash, SortedNeighbourhood, field_codes, key_codes

# ---------------------------------------------------------------------------
# naive references


def _value(records: Records, names: list[str], i: int) -> tuple[str, ...] | None:
    vals = tuple(records.fields[f][i] for f in names)
    if any(v is None or v == "" for v in vals):
        return None
    return vals  # type: ignore[return-value]


def ref_field_hash(records: Records, fields: list[Any], cap: int | None, link: bool) -> tuple[set[tuple[int, int]], list[dict[str, Any]]]:
    src = records.source.tolist()
    pairs: set[tuple[int, int]] = set()
    stats = []
    for key in fields:
        any_order = isinstance(key, dict)
        names = key["any_order"] if any_order else [key] if isinstance(key, str) else list(key)
        buckets: dict[tuple[str, ...], list[int]] = {}
        for i in range(len(records)):
            v = _value(records, names, i)
            if v is not None:
                buckets.setdefault(tuple(sorted(v)) if any_order else v, []).append(i)
        generated = 0
        purged = []
        for v, members in buckets.items():
            bucket_pairs = [(a, b) for a, b in itertools.combinations(members, 2) if not link or src[a] != src[b]]
            if cap is not None and len(members) > cap:
                purged.append((len(members), v, len(bucket_pairs)))
                continue
            generated += len(bucket_pairs)
            pairs.update((min(a, b), max(a, b)) for a, b in bucket_pairs)
        purged.sort(key=lambda t: (-t[0], t[1]))
        stats.append(
            {
                "key": f"any_order({'+'.join(names)})" if any_order else "+".join(names),
                "records_keyed": sum(len(m) for m in buckets.values()),
                "records_missing": len(records) - sum(len(m) for m in buckets.values()),
                "distinct_values": len(buckets),
                "buckets": sum(1 for m in buckets.values() if len(m) >= 2),
                "largest_bucket": max((len(m) for m in buckets.values()), default=0),
                "pairs_generated": generated,
                "purged": {
                    "buckets": len(purged),
                    "records": sum(t[0] for t in purged),
                    "pairs_cost": sum(t[2] for t in purged),
                    "largest": [{"value": " | ".join(t[1])[:40], "size": t[0]} for t in purged[:10]],
                },
            }
        )
    return pairs, stats


def ref_snm(records: Records, keys: list[Any], window: int, link: bool, prefix: dict[str, int] | None = None) -> set[tuple[int, int]]:
    """A key is a list of fields (their values in that order) or ``{"any_order": fields}`` (the values sorted)."""
    prefix = prefix or {}
    src = records.source.tolist()
    pairs: set[tuple[int, int]] = set()
    for key in keys:
        names = key["any_order"] if isinstance(key, dict) else key
        entries = []
        for i in range(len(records)):
            v = _value(records, names, i)
            if v is not None:
                cut = tuple(x[: prefix[f]] if f in prefix else x for f, x in zip(names, v))
                entries.append((tuple(sorted(cut)) if isinstance(key, dict) else cut, i))
        entries.sort()  # by key tuple, ties by record index
        order = [i for _, i in entries]
        for p in range(len(order)):
            for q in range(p + 1, min(p + window, len(order))):
                a, b = order[p], order[q]
                if not link or src[a] != src[b]:
                    pairs.add((min(a, b), max(a, b)))
    return pairs


def as_set(p: Pairs) -> set[tuple[int, int]]:
    return set(zip(p.left.tolist(), p.right.tolist()))


# ---------------------------------------------------------------------------
# data


ALPHABET = ["a", "b", "ab", "ba", "abc", "A", "é", "", None]


def random_records(rng: random.Random, n: int, n_sources: int, fields: tuple[str, ...] = ("x", "y", "z")) -> Records:
    vocab = {f: rng.sample(ALPHABET, rng.randint(1, len(ALPHABET))) for f in fields}
    cols = {f: [rng.choice(vocab[f]) for _ in range(n)] for f in fields}
    source = np.array([rng.randrange(n_sources) for _ in range(n)], dtype=np.int32)
    if rng.random() < 0.5:
        source = np.sort(source)  # the usual layout (Records.concat); else interleaved
    return Records(ids=[str(i) for i in range(n)], source=source, source_names=[f"s{i}" for i in range(n_sources)], fields=cols)


def two_sources(a: dict[str, list[str | None]], b: dict[str, list[str | None]]) -> Records:
    na = len(next(iter(a.values())))
    nb = len(next(iter(b.values())))
    return Records.concat(
        [Records.from_columns([f"a{i}" for i in range(na)], a, "A"), Records.from_columns([f"b{i}" for i in range(nb)], b, "B")]
    )


def field_hash(fields: list[Any], cap: int | None = 500) -> FieldHash:
    return FieldHash(FieldHash.Params(fields=fields, max_block_size=cap))


def described(blocker: FieldHash | SortedNeighbourhood, batch: Batch) -> dict[str, Any]:
    """The blocker's section of report.json: ``describe()`` with the report of ``block(batch)``."""
    return {**blocker.describe(), **blocker.block(batch).report}


def strip_fields(stats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.items() if k != "fields"} for s in stats]


# ---------------------------------------------------------------------------
# field_hash


@pytest.mark.parametrize("seed", range(120))
def test_field_hash_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    records = random_records(rng, rng.randint(0, 40), rng.choice([1, 2, 3]))
    keys: list[Any] = rng.choice(
        [
            ["x"],
            ["x", "y"],
            [["x", "y"]],
            ["z", ["x", "y", "z"]],
            [["y", "x"], "x"],
            [{"any_order": ["x", "y"]}],
            ["z", {"any_order": ["z", "y", "x"]}, ["x", "y"]],
        ]
    )
    cap = rng.choice([None, 2, 3, 5, 500])
    for link in (False, True):
        blocker = field_hash(keys, cap)
        batch = Batch(records=records, cross_source_only=link)
        pairs = check_blocker(blocker, batch)
        want, stats = ref_field_hash(records, keys, cap, link)
        assert as_set(pairs) == want
        report = described(blocker, batch)
        assert strip_fields(report["per_key"]) == stats
        assert report["candidates"] == len(want)
        assert report["raw_pairs"] == sum(s["pairs_generated"] for s in stats)


def test_field_hash_link_mode_pairs_only_across_sources() -> None:
    # one bucket of 300 A records and 2 B records: 600 cross pairs, no within-source pair made
    recs = two_sources({"x": ["k"] * 300}, {"x": ["k", "k"]})
    blocker = field_hash(["x"], cap=None)
    blocked = blocker.block(Batch(records=recs, cross_source_only=True))
    assert len(blocked.pairs) == 600
    assert blocked.report["per_key"][0]["pairs_generated"] == 600
    assert blocked.report["raw_pairs"] == 600
    # dedup: all pairs
    assert len(blocker.candidates(Batch(records=recs))) == 302 * 301 // 2


def test_field_hash_link_mode_interleaved_sources() -> None:
    src = np.array([1, 0, 1, 0, 2, 0], dtype=np.int32)
    recs = Records(ids=list("abcdef"), source=src, source_names=["s0", "s1", "s2"], fields={"x": ["k"] * 6})
    pairs = check_blocker(field_hash(["x"]), Batch(records=recs, cross_source_only=True))
    assert as_set(pairs) == {(i, j) for i in range(6) for j in range(i + 1, 6) if src[i] != src[j]}


@pytest.mark.parametrize("link", [False, True])
def test_cap_purges_size_cap_plus_one_and_keeps_exactly_cap(link: bool) -> None:
    cap = 6
    # "big": 7 = cap + 1 records (4 in A, 3 in B) -> purged; "ok": exactly 6 (3 + 3) -> kept
    a = {"x": ["big"] * 4 + ["ok"] * 3 + ["solo"]}
    b = {"x": ["big"] * 3 + ["ok"] * 3}
    recs = two_sources(a, b)
    blocker = field_hash(["x"], cap=cap)
    batch = Batch(records=recs, cross_source_only=link)
    pairs = check_blocker(blocker, batch)
    ok = [i for i, v in enumerate(recs.fields["x"]) if v == "ok"]
    want = {(p, q) for p, q in itertools.combinations(ok, 2) if not link or recs.source[p] != recs.source[q]}
    assert as_set(pairs) == want
    purged = described(blocker, batch)["per_key"][0]["purged"]
    assert purged["buckets"] == 1
    assert purged["records"] == 7
    assert purged["pairs_cost"] == (4 * 3 if link else 7 * 6 // 2)
    assert purged["largest"] == [{"value": "big", "size": 7}]
    stats = described(blocker, batch)["per_key"][0]
    assert stats["pairs_generated"] == (9 if link else 15)
    assert stats["distinct_values"] == 3 and stats["buckets"] == 2 and stats["largest_bucket"] == 7


def test_report_lists_ten_largest_purged_buckets_with_truncated_values() -> None:
    long = "x" * 60
    values: list[str | None] = []
    sizes = {f"v{i:02d}": 3 + i for i in range(12)}  # 12 purged buckets of sizes 3..14
    sizes[long] = 20
    for v, m in sizes.items():
        values += [v] * m
    values += ["single", None, ""]
    recs = Records.from_columns([str(i) for i in range(len(values))], {"x": values, "y": ["q"] * len(values)})
    blocker = field_hash(["x", ["x", "y"]], cap=2)
    assert len(blocker.candidates(Batch(records=recs))) == 0
    report = described(blocker, Batch(records=recs))
    assert report["type"] == "field_hash" and report["max_block_size"] == 2 and report["records"] == len(values)
    for stats, suffix in zip(report["per_key"], ["", " | q"]):
        purged = stats["purged"]
        assert purged["buckets"] == 13
        assert purged["records"] == sum(sizes.values())
        assert purged["pairs_cost"] == sum(m * (m - 1) // 2 for m in sizes.values())
        assert len(purged["largest"]) == 10
        assert purged["largest"][0] == {"value": (long + suffix)[:40], "size": 20}
        assert [b["size"] for b in purged["largest"]] == [20, 14, 13, 12, 11, 10, 9, 8, 7, 6]
        assert purged["largest"][1]["value"] == "v11" + suffix
        assert stats["pairs_generated"] == 0
        assert stats["distinct_values"] == 14 and stats["buckets"] == 13
        assert stats["records_missing"] == 2
    assert report["per_key"][0]["key"] == "x" and report["per_key"][1]["key"] == "x+y"


def test_field_hash_never_buckets_missing_or_empty_values() -> None:
    recs = Records.from_columns(list("abcdef"), {"x": [None, None, "", "", "v", "w"], "y": ["1", "1", "1", "1", None, "1"]})
    blocker = field_hash(["x", ["x", "y"]])
    assert len(blocker.candidates(Batch(records=recs))) == 0
    stats = described(blocker, Batch(records=recs))["per_key"]
    assert stats[0]["records_keyed"] == 2 and stats[0]["records_missing"] == 4
    assert stats[1]["records_keyed"] == 1  # only "w" has both fields


def test_all_missing_field_and_empty_input() -> None:
    recs = Records.from_columns(list("abc"), {"x": [None, None, None], "y": ["1", "1", "1"]})
    blocker = field_hash(["x", ["x", "y"]])
    assert len(check_blocker(blocker, Batch(records=recs))) == 0
    assert described(blocker, Batch(records=recs))["per_key"][0]["distinct_values"] == 0
    # the all-missing field does not hide the other keys
    assert as_set(field_hash(["x", "y"]).candidates(Batch(records=recs))) == {(0, 1), (0, 2), (1, 2)}
    empty = Records.from_columns([], {"x": [], "y": []})
    for link in (False, True):
        for blk in (field_hash(["x", ["x", "y"]]), SortedNeighbourhood(SortedNeighbourhood.Params(key=["x", "y"]))):
            p = check_blocker(blk, Batch(records=empty, cross_source_only=link))
            assert len(p) == 0 and p.left.dtype == np.int64
            assert described(blk, Batch(records=empty, cross_source_only=link))["candidates"] == 0


def test_single_record_buckets_give_no_pairs() -> None:
    recs = two_sources({"x": ["a", "b"]}, {"x": ["c", "d"]})
    blocker = field_hash(["x"])
    assert len(blocker.candidates(Batch(records=recs, cross_source_only=True))) == 0
    assert described(blocker, Batch(records=recs, cross_source_only=True))["per_key"][0]["buckets"] == 0


def test_missing_column_is_a_clear_error() -> None:
    recs = Records.from_columns(["a"], {"x": ["1"]})
    with pytest.raises(ValueError, match="no field 'nope'"):
        field_hash(["nope"]).candidates(Batch(records=recs))
    with pytest.raises(ValueError, match="no field 'nope'"):
        SortedNeighbourhood(SortedNeighbourhood.Params(key=["x", "nope"])).candidates(Batch(records=recs))


# --- exactness: no hash is used (values are grouped by sorting the strings), so instead of a
# forced hash collision the tests force every other shortcut that could merge distinct values


def test_multi_field_key_is_a_tuple_not_a_concatenation() -> None:
    # "ab"+"c" and "a"+"bc" (and with a separator-like character) are different keys
    recs = Records.from_columns(
        list("abcdef"),
        {"x": ["ab", "a", "a|", "a", "ab", "a b"], "y": ["c", "bc", "c", "|c", "c", ""]},
    )
    pairs = field_hash([["x", "y"]]).candidates(Batch(records=recs))
    assert as_set(pairs) == {(0, 4)}


def test_nul_and_unicode_values_stay_distinct() -> None:
    values = ["a", "a\x00", "a\x00\x00", "a", "\x00", "é", "é", "ß", "ss", "A"]
    codes, n = field_codes(values)
    ref = {v: k for k, v in enumerate(sorted(set(values)))}
    assert codes.tolist() == [ref[v] for v in values] and n == len(ref)
    recs = Records.from_columns([str(i) for i in range(len(values))], {"x": values})
    assert as_set(field_hash(["x"]).candidates(Batch(records=recs))) == {(0, 3), (5, 6)}


@pytest.mark.parametrize("seed", range(20))
def test_variable_width_sort_path_and_key_reranking_give_identical_results(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(1000 + seed)
    records = random_records(rng, 40, 2)
    keys: list[Any] = ["x", ["x", "y", "z"], ["z", "y"]]
    for link in (False, True):
        batch = Batch(records=records, cross_source_only=link)
        want, _ = ref_field_hash(records, keys, 4, link)
        snm_want = ref_snm(records, [["y", "x", "z"]], 3, link, {"x": 1})
        with monkeypatch.context() as m:
            m.setattr(rb, "FIXED_WIDTH_BUDGET", 0)  # sort the variable-width StringDType arrays
            m.setattr(rb, "_PACK_LIMIT", 2)  # re-rank after every field of a key
            assert as_set(field_hash(keys, 4).candidates(batch)) == want
            snm = SortedNeighbourhood(SortedNeighbourhood.Params(key=["y", "x", "z"], window=3, prefix={"x": 1}))
            assert as_set(snm.candidates(batch)) == snm_want
        assert as_set(field_hash(keys, 4).candidates(batch)) == want


def test_key_codes_order_is_lexicographic_tuple_order() -> None:
    rng = random.Random(5)
    cols = [[rng.choice(["", "a", "b", "ab", "zz", "é"]) for _ in range(200)] for _ in range(3)]
    parts = [field_codes(c) for c in cols]
    keys = key_codes(parts)
    tuples = list(zip(*cols))
    for i in range(200):
        for j in range(200):
            if keys[i] >= 0 and keys[j] >= 0:
                assert (keys[i] < keys[j]) == (tuples[i] < tuples[j])
                assert (keys[i] == keys[j]) == (tuples[i] == tuples[j])
            else:
                assert any(v == "" for v in (tuples[i] if keys[i] < 0 else tuples[j]))


def test_large_chunked_enumeration_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    # pairs produced a few at a time give the same result as one step
    rng = random.Random(3)
    records = random_records(rng, 60, 2)
    want = as_set(field_hash(["x", ["y", "z"]], None).candidates(Batch(records=records)))
    monkeypatch.setattr(rb, "PAIR_CHUNK", 7)
    assert as_set(field_hash(["x", ["y", "z"]], None).candidates(Batch(records=records))) == want


# ---------------------------------------------------------------------------
# sorted_neighbourhood


@pytest.mark.parametrize("seed", range(120))
def test_sorted_neighbourhood_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    records = random_records(rng, rng.randint(0, 40), rng.choice([1, 2, 3]))
    keys = rng.choice(
        [
            [["x"]],
            [["x", "y"]],
            [["y", "x"], ["z"]],
            [["z", "x", "y"]],
            [{"any_order": ["x", "y"]}],
            [["z"], {"any_order": ["z", "y", "x"]}],
            [{"any_order": ["y", "z"]}, ["y", "z"]],
        ]
    )
    window = rng.choice([2, 3, 4, 7])
    prefix = rng.choice([{}, {"x": 1}, {"x": 2, "y": 1}])
    prefix = {f: k for f, k in prefix.items() if any(f in (key["any_order"] if isinstance(key, dict) else key) for key in keys)}
    params: dict[str, Any] = {"key": keys[0]} if len(keys) == 1 and rng.random() < 0.5 else {"keys": keys}
    for link in (False, True):
        blocker = SortedNeighbourhood(SortedNeighbourhood.Params(window=window, prefix=prefix, **params))
        batch = Batch(records=records, cross_source_only=link)
        pairs = check_blocker(blocker, batch)
        assert as_set(pairs) == ref_snm(records, keys, window, link, prefix)
        report = described(blocker, batch)
        assert report["candidates"] == len(pairs)
        assert [s["key"] for s in report["per_key"]] == [
            f"any_order({'+'.join(k['any_order'])})" if isinstance(k, dict) else "+".join(k) for k in keys
        ]


def test_any_order_key_sorts_swapped_values_together() -> None:
    # records 0 and 2 hold one name pair in either order; 3 misses a value; "" is missing too
    recs = Records.from_columns(
        list("abcdefg"),
        {
            "given": ["john", "ann", "smith", "joe", "", "zoe", "kate"],
            "surname": ["smith", "lee", "john", None, "x", "adams", "ray"],
        },
    )
    blocker = SortedNeighbourhood(SortedNeighbourhood.Params(key={"any_order": ["given", "surname"]}, window=2))
    # keys: (john, smith) 0, (ann, lee) 1, (john, smith) 2, (adams, zoe) 5, (kate, ray) 6 -> order 5 1 0 2 6
    assert as_set(blocker.candidates(Batch(records=recs))) == {(1, 5), (0, 1), (0, 2), (2, 6)}
    stats = described(blocker, Batch(records=recs))["per_key"][0]
    assert (stats["key"], stats["records_sorted"], stats["records_missing"], stats["distinct_keys"]) == (
        "any_order(given+surname)",
        5,
        2,
        4,
    )
    # in the given order: ann(1) john(0) kate(6) smith(2) zoe(5): 0 and 2 are not neighbours
    ordered = SortedNeighbourhood(SortedNeighbourhood.Params(key=["given", "surname"], window=2))
    assert (0, 2) not in as_set(ordered.candidates(Batch(records=recs)))


def test_any_order_codes_are_the_sorted_values_order() -> None:
    rng = random.Random(5)
    pool = ["a", "ab", "b", "é", "a\x00", "\x00", "zz", "", None]
    cols = [[rng.choice(pool) for _ in range(300)] for _ in range(3)]
    key = key_codes(rb.any_order_codes(cols, [None, 1, None]))
    values = rb.any_order_values(cols, [None, 1, None])
    tuples = list(zip(*values))
    # the naive definition: each record's values, the second cut to 1 character, sorted in Python
    naive = [tuple(sorted(t)) if all(t) else (None, None, None) for t in zip(cols[0], [v[:1] if v else v for v in cols[1]], cols[2])]
    assert tuples == naive
    assert rb.any_order_values([[], []], [None, None]) == [[], []]
    assert rb.any_order_values([[None, ""], ["a", None]], [None, None]) == [[None, None], [None, None]]
    for i in range(300):
        assert (key[i] < 0) == (tuples[i][0] is None)
        for j in range(0, 300, 7):
            if key[i] >= 0 and key[j] >= 0:
                assert (key[i] < key[j]) == (tuples[i] < tuples[j]) and (key[i] == key[j]) == (tuples[i] == tuples[j])


def test_sorted_neighbourhood_window_and_report() -> None:
    # sorted order: aa(0) ab(3) b(1) bb(4) c(2); record 5 has no key
    recs = Records.from_columns(list("abcdef"), {"k": ["aa", "b", "c", "ab", "bb", None]})
    blocker = SortedNeighbourhood(SortedNeighbourhood.Params(key=["k"], window=3))
    pairs = blocker.candidates(Batch(records=recs))
    assert as_set(pairs) == {(0, 3), (0, 1), (1, 3), (3, 4), (1, 4), (1, 2), (2, 4)}
    stats = described(blocker, Batch(records=recs))["per_key"][0]
    assert stats == {
        "key": "k",
        "fields": ["k"],
        "records_sorted": 5,
        "records_missing": 1,
        "distinct_keys": 5,
        "pairs_generated": 7,
    }
    # prefix 1: keys a a b b c, ties in record order: 0 3 1 4 2 -> same order here
    p1 = SortedNeighbourhood(SortedNeighbourhood.Params(key=["k"], window=2, prefix={"k": 1})).candidates(Batch(records=recs))
    assert as_set(p1) == {(0, 3), (1, 3), (1, 4), (2, 4)}


def test_sorted_neighbourhood_link_mode_keeps_only_cross_source_window_pairs() -> None:
    recs = two_sources({"k": ["a", "b", "c"]}, {"k": ["a", "bb", "d"]})  # A: 0 1 2, B: 3 4 5
    blocker = SortedNeighbourhood(SortedNeighbourhood.Params(key=["k"], window=2))
    # order a(0) a(3) b(1) bb(4) c(2) d(5): neighbours (0,3) (3,1) (1,4) (4,2) (2,5), all cross-source
    pairs = check_blocker(blocker, Batch(records=recs, cross_source_only=True))
    assert as_set(pairs) == {(0, 3), (1, 3), (1, 4), (2, 4), (2, 5)}
    recs2 = two_sources({"k": ["a", "b"]}, {"k": ["c"]})  # order 0 1 2: only (1, 2) crosses
    assert as_set(blocker.candidates(Batch(records=recs2, cross_source_only=True))) == {(1, 2)}


def test_sorted_neighbourhood_params() -> None:
    P = SortedNeighbourhood.Params
    with pytest.raises(ValidationError, match="exactly one"):
        P()
    with pytest.raises(ValidationError, match="exactly one"):
        P(key=["a"], keys=[["b"]])
    with pytest.raises(ValidationError):
        P(key=["a"], window=1)
    with pytest.raises(ValidationError, match="in no key"):
        P(key=["a"], prefix={"b": 2})
    with pytest.raises(ValidationError, match=">= 1"):
        P(key=["a"], prefix={"a": 0})
    with pytest.raises(ValidationError):
        P(key=[])
    with pytest.raises(ValidationError):
        P(key=["a"], unknown=1)
    assert P(keys=[["a"], ["b", "c"]]).sort_keys() == [rb.KeySpec(("a",)), rb.KeySpec(("b", "c"))]
    assert P(keys=[{"any_order": ["b", "c"]}]).sort_keys() == [rb.KeySpec(("b", "c"), any_order=True)]
    with pytest.raises(ValidationError, match="twice"):
        P(key={"any_order": ["a", "a"]})
    with pytest.raises(ValidationError, match=r"any-order key is \{any_order: \[two or more fields\]\}") as err:
        P(key={"any_order": ["a"]})  # one field has one order
    assert err.value.error_count() == 1  # one message, not also "expected a list" from the union's other arm
    with pytest.raises(ValidationError, match="any_ordr") as err:
        P(keys=[["a"], {"any_ordr": ["a", "b"]}])
    assert err.value.error_count() == 1
    with pytest.raises(ValidationError):
        P(key={"any_order": ["a", "b"], "other": 1})
    assert P(key=["a", "b"]).window == 10


def test_field_hash_params() -> None:
    P = FieldHash.Params
    with pytest.raises(ValidationError):
        P(fields=[])
    with pytest.raises(ValidationError):
        P(fields=[[]])
    with pytest.raises(ValidationError):
        P(fields=[["a", "a"]])
    with pytest.raises(ValidationError):
        P(fields=["a"], max_block_size=1)
    with pytest.raises(ValidationError):
        P()
    assert P(fields=["a"]).max_block_size == 500
    assert P(fields=["a"], max_block_size=None).max_block_size is None


def test_registered_through_the_hook() -> None:
    assert rb.er_register_blockers() == [FieldHash, SortedNeighbourhood]
    assert FieldHash.needs == frozenset({"fields"}) and SortedNeighbourhood.needs == frozenset({"fields"})
    reg = build_registry()
    if "field_hash" not in reg.names("blocker"):  # entry point not installed yet
        reg = build_registry(extra_modules=["er_plugins.records_blocking"])
    assert reg.get("blocker", "field_hash").cls is FieldHash
    assert reg.get("blocker", "sorted_neighbourhood").cls is SortedNeighbourhood


# ---------------------------------------------------------------------------
# pair limits (issue 18, case 20): counted before any pair is made


def flat_records(n: int, values: list[str | None], n_sources: int = 1) -> Records:
    return Records(
        ids=[str(i) for i in range(n)],
        source=np.arange(n) % n_sources,
        source_names=[f"s{i}" for i in range(n_sources)],
        fields={"k": values, "j": [str(i) for i in range(n)]},
    )


@pytest.fixture
def no_pairs_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal must come before any pair exists: making one fails the test."""

    def fail(*args: object) -> None:
        raise AssertionError("a pair was made before the limit was checked")

    monkeypatch.setattr(rb, "pack_pairs", fail)


@pytest.mark.parametrize(("m", "w"), [(0, 2), (1, 5), (5, 2), (5, 5), (5, 9), (100, 7)])
def test_window_pairs_counts_the_window(m: int, w: int) -> None:
    assert rb.window_pairs(m, w) == sum(1 for p in range(m) for q in range(p + 1, min(p + w, m)))


def test_sorted_neighbourhood_window_is_capped_with_a_reason() -> None:
    with pytest.raises(ValidationError, match="window 100,000 is above the maximum 10,000: .* n x 99,999 candidate"):
        SortedNeighbourhood.Params(key=["a"], window=100_000)
    assert SortedNeighbourhood.Params(key=["a"], window=rb.MAX_WINDOW).window == rb.MAX_WINDOW


def test_sorted_neighbourhood_refuses_more_pairs_than_max_pairs(no_pairs_made: None) -> None:
    recs = flat_records(1000, [f"v{i}" for i in range(1000)])
    blocker = SortedNeighbourhood(SortedNeighbourhood.Params(keys=[["k"], ["j"]], window=50, max_pairs=90_000))
    with pytest.raises(rb.InputError) as exc:
        blocker.candidates(Batch(records=recs))
    text = exc.value.render()
    expected = 2 * rb.window_pairs(1000, 50)  # 97,550: two keys
    assert f"about {expected:.2g} candidate pairs" in text and "max_pairs = 90,000" in text
    # the window that fits: 2 keys x 1000 records x (w - 1) <= 90,000
    assert "lower window to 46 or less" in text


def test_sorted_neighbourhood_within_the_limit_is_unchanged() -> None:
    recs = flat_records(300, [f"v{i % 17}" for i in range(300)], 2)
    a = SortedNeighbourhood(SortedNeighbourhood.Params(key=["k"], window=6)).candidates(Batch(records=recs))
    b = SortedNeighbourhood(SortedNeighbourhood.Params(key=["k"], window=6, max_pairs=None)).candidates(Batch(records=recs))
    assert as_set(a) == as_set(b) and len(a) > 0


@pytest.mark.parametrize("link", [False, True])
def test_field_hash_refuses_the_exact_count_over_max_pairs(monkeypatch: pytest.MonkeyPatch, link: bool) -> None:
    n = 400
    recs = flat_records(n, ["same"] * 300 + [f"v{i}" for i in range(100)], 2 if link else 1)
    pairs = 150 * 150 if link else 300 * 299 // 2  # the one big bucket
    blocker = FieldHash(FieldHash.Params(fields=["k"], max_block_size=None, max_pairs=pairs - 1))
    with monkeypatch.context() as m, pytest.raises(rb.InputError) as exc:
        m.setattr(rb, "pack_pairs", None)  # no pair may be made before the refusal
        blocker.candidates(Batch(records=recs, cross_source_only=link))
    text = exc.value.render()
    assert f"key 'k' would create about {pairs:.2g} candidate pairs" in text
    assert "largest kept bucket holds 300 records ('same')" in text and "now null: no cap" in text
    # exactly at the limit: made
    blocker = FieldHash(FieldHash.Params(fields=["k"], max_block_size=None, max_pairs=pairs))
    assert len(blocker.candidates(Batch(records=recs, cross_source_only=link))) == pairs


def test_field_hash_counts_the_keys_together_and_not_the_purged_buckets(no_pairs_made: None) -> None:
    recs = flat_records(100, ["x"] * 100)
    with pytest.raises(rb.InputError, match="about 5e\\+03 candidate pairs"):
        FieldHash(FieldHash.Params(fields=["j", "k", ["k", "j"]], max_pairs=4000)).candidates(Batch(records=recs))


def test_field_hash_purged_bucket_makes_no_pairs() -> None:
    recs = flat_records(100, ["x"] * 100)
    assert len(FieldHash(FieldHash.Params(fields=["k"], max_block_size=50, max_pairs=1)).candidates(Batch(records=recs))) == 0


def test_field_hash_lookup_check_is_the_same_limit() -> None:
    blocker = FieldHash(FieldHash.Params(fields=["k"], max_pairs=10))
    blocker.check_lookup_pairs(10, 5)
    with pytest.raises(rb.InputError, match="(?s)would create about 11 candidate pairs.*largest kept bucket holds 6"):
        blocker.check_lookup_pairs(11, 6)


def test_the_pairs_must_fit_in_memory_whatever_max_pairs(monkeypatch: pytest.MonkeyPatch, no_pairs_made: None) -> None:
    monkeypatch.setattr(rb, "available_memory", lambda: 100 * rb.BYTES_PER_PAIR * 2)  # room for 100 pairs
    recs = flat_records(50, [f"v{i}" for i in range(50)])
    with pytest.raises(rb.InputError, match=r"(?s)more than this process can hold .*lower window to 3 or less"):
        SortedNeighbourhood(SortedNeighbourhood.Params(key=["k"], window=5, max_pairs=None)).candidates(Batch(records=recs))


def test_available_memory_follows_an_address_space_limit() -> None:
    import subprocess
    import sys

    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
        "from er_plugins.records_blocking import available_memory; print(available_memory())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert 0 < int(out) < 3 << 30
