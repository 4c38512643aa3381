"""Fingerprints domain (SEEDS §6): the seed's numbers, the simulation models, the components, a job end to end."""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from er_framework.components import Context
from er_framework.config.resolve import parse_job
from er_framework.data import Batch, Pairs, Records
from er_framework.errors import ConfigError, InputError
from er_framework.executors import run_job
from er_framework.kernels.bits import row_popcount, unpack_bits
from er_framework.kernels.bits_candidates import cell_overlap, cell_sets, grid_bit_candidates, shares_bucket
from er_framework.kernels.bits_probabilities import candidate_probabilities, candidate_probabilities_exact
from er_framework.registry import build_registry
from er_framework.synth.fingerprints import (
    simulate_cells,
    simulate_minutiae,
    write_prints_jsonl,
)
from er_framework.testing import (
    check_blocker,
    check_shingler,
    check_signature_builder,
    check_verifier,
)
from er_plugins.fingerprints import (
    BitVector,
    CellOverlap,
    GridBits,
    GridCells,
    parse_minutiae,
)

P, Q, N_CELLS, M = 0.2, 0.8, 400, 1024
N_FINGERS = 20_000  # 20,000 same-finger pairs
N_DIFF = 200_000


def _pairs(model: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bits of N_FINGERS x 2 impressions; the same-finger pairs; N_DIFF distinct different-finger pairs."""
    bits, finger = simulate_cells(N_FINGERS, 2, N_CELLS, P, Q, seed=seed, model=model)  # type: ignore[arg-type]
    same_l = np.arange(0, 2 * N_FINGERS, 2, dtype=np.int64)
    rng = np.random.default_rng(seed + 1)
    a = rng.integers(0, N_FINGERS, 2 * N_DIFF)
    b = rng.integers(0, N_FINGERS, 2 * N_DIFF)
    keep = a != b
    key = np.unique(np.minimum(a, b)[keep] * N_FINGERS + np.maximum(a, b)[keep])
    key = rng.permutation(key)[:N_DIFF]
    assert len(key) == N_DIFF
    imp = rng.integers(0, 2, (2, N_DIFF))  # either impression of each finger
    diff_l = 2 * (key // N_FINGERS) + imp[0]
    diff_r = 2 * (key % N_FINGERS) + imp[1]
    assert np.all(finger[diff_l] != finger[diff_r])
    return bits, same_l, same_l + 1, diff_l, diff_r


@pytest.fixture(scope="module")
def latent() -> tuple[np.ndarray, ...]:
    return _pairs("latent", seed=2024)


@pytest.fixture(scope="module")
def fixed() -> tuple[np.ndarray, ...]:
    return _pairs("fixed", seed=7)


def _rates(data: tuple[np.ndarray, ...], c: int) -> tuple[float, float, np.ndarray, np.ndarray]:
    bits, sl, sr, dl, dr = data
    sets = cell_sets(M, c, N_CELLS, seed=11)
    hs = shares_bucket(bits, sl, sr, sets, return_counts=True)
    hd = shares_bucket(bits, dl, dr, sets, return_counts=True)
    return float((hs > 0).mean()), float((hd > 0).mean()), hs, hd


# ---------------------------------------------------------------- the seed's numbers


def test_seed_numbers_exactly() -> None:
    same, diff = candidate_probabilities(P, Q, 3, M)
    assert round(same, 3) == 0.985 and round(diff, 3) == 0.063


def test_simulated_models_have_the_seed_occupancy_and_agreement(latent: tuple, fixed: tuple) -> None:
    for data in (latent, fixed):
        bits, sl, sr, dl, dr = data
        assert row_popcount(bits).mean() / N_CELLS == pytest.approx(P, abs=0.002)
        # P(B has a cell | A has it) = q, and the agreement (Dice) of same-finger pairs is about q
        inter = row_popcount(bits[sl] & bits[sr]).sum()
        assert inter / row_popcount(bits[sl]).sum() == pytest.approx(Q, abs=0.004)
        assert cell_overlap(bits, sl, sr, "agreement").mean() == pytest.approx(Q, abs=0.005)
        assert cell_overlap(bits, dl, dr, "agreement").mean() == pytest.approx(P, abs=0.005)
    bits, sl, sr, *_ = fixed
    assert np.all(row_popcount(bits) == 80) and np.all(row_popcount(bits[sl] & bits[sr]) == 64)


def test_acceptance_latent_model_per_set_probabilities_are_the_seeds(latent: tuple) -> None:
    """Every cell independent: one set hits both prints with probability (pq)^3 resp. p^6 exactly."""
    _, _, hs, hd = _rates(latent, 3)
    for hits, expect in ((hs, (P * Q) ** 3), (hd, P**6)):
        est = hits.mean() / M
        se = hits.std() / np.sqrt(len(hits)) / M
        assert abs(est - expect) < 5 * se + 1e-12, (est, expect, se)
    assert hs.mean() / M == pytest.approx(0.004096, rel=0.03)
    assert hd.mean() / M == pytest.approx(0.000064, rel=0.06)


def test_acceptance_latent_model_candidate_rates(latent: tuple) -> None:
    """Measured rates follow the finite-grid value; the seed's independence formula overstates recall.

    The M set hits of one pair are not independent (a pair with more common
    cells than average hits many sets at once), so on a 400-cell grid
    P(candidate | same) = E_k[1 - (1 - C(k,3)/C(400,3))^1024] = 0.967, not 0.985.
    """
    same, diff, _, _ = _rates(latent, 3)
    exact_same, exact_diff = candidate_probabilities_exact(P, Q, 3, M, N_CELLS)
    assert same == pytest.approx(exact_same, abs=0.01)  # measured 0.9657 vs 0.9671
    assert diff == pytest.approx(exact_diff, abs=0.01)  # measured ~0.062 vs 0.0623
    assert diff == pytest.approx(0.063, abs=0.01)
    seed_same, _ = candidate_probabilities(P, Q, 3, M)
    assert same < seed_same - 0.01  # the documented gap of the independence approximation


def test_acceptance_fixed_model_reproduces_0985_and_0063(fixed: tuple) -> None:
    """Exactly 20% of cells per print and exactly 80% agreement: the seed's 0.985 and 0.063 within 0.01."""
    same, diff, _, _ = _rates(fixed, 3)
    assert same == pytest.approx(0.985, abs=0.01)  # measured 0.9825
    assert diff == pytest.approx(0.063, abs=0.01)  # measured ~0.060
    exact_same, exact_diff = candidate_probabilities_exact(P, Q, 3, M, N_CELLS, model="fixed")
    assert same == pytest.approx(exact_same, abs=0.01) and diff == pytest.approx(exact_diff, abs=0.01)


@pytest.mark.parametrize("model", ["latent", "fixed"])
def test_more_cells_per_set_lower_the_false_positives(model: str, latent: tuple, fixed: tuple) -> None:
    data = latent if model == "latent" else fixed
    rates = {c: _rates(data, c)[:2] for c in (3, 4, 5)}
    assert rates[3][1] > rates[4][1] > rates[5][1]  # as predicted: 0.063 > 0.0026 > 0.0001
    assert rates[3][0] > rates[4][0] > rates[5][0]  # and the recall drops at the same M
    for c in (4, 5):
        _, pred_diff = candidate_probabilities_exact(P, Q, c, M, N_CELLS, model=model)  # type: ignore[arg-type]
        assert rates[c][1] == pytest.approx(pred_diff, abs=0.002)


def test_rates_from_grid_bit_candidates_on_a_whole_population() -> None:
    """All pairs of 3,000 fingers x 2 impressions, blocked with grid_bit_candidates itself."""
    bits, finger = simulate_cells(3000, 2, N_CELLS, P, Q, seed=99)
    n = len(bits)
    sets = cell_sets(M, 3, N_CELLS, seed=5)
    left, right, stats = grid_bit_candidates(bits, np.arange(n), sets)
    assert stats["raw_pairs"] >= len(left) and stats["oversized_buckets"] == 0
    same = finger[left] == finger[right]
    same_rate = same.sum() / 3000
    diff_rate = (~same).sum() / (n * (n - 1) // 2 - 3000)
    exact_same, exact_diff = candidate_probabilities_exact(P, Q, 3, M, N_CELLS)
    assert same_rate == pytest.approx(exact_same, abs=0.015)
    assert diff_rate == pytest.approx(exact_diff, abs=0.01)
    # the sampled-pair kernel agrees with the blocker pair by pair
    sl = np.arange(0, n, 2)
    found = set(zip(left[same].tolist(), right[same].tolist()))
    assert shares_bucket(bits, sl, sl + 1, sets).tolist() == [(int(a), int(a) + 1) in found for a in sl]
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, n, 5000), rng.integers(0, n, 5000)
    a, b = np.minimum(a, b)[a != b], np.maximum(a, b)[a != b]
    keys = set((left * n + right).tolist())
    assert shares_bucket(bits, a, b, sets).tolist() == [int(x) * n + int(y) in keys for x, y in zip(a, b)]
    # count_only gives the same stats without pairs
    _, _, cstats = grid_bit_candidates(bits, np.arange(n), sets, count_only=True)
    assert cstats == stats


# ---------------------------------------------------------------- simulation


def test_simulate_cells_is_deterministic_and_shaped() -> None:
    a, fa = simulate_cells(50, 3, 130, 0.3, 0.9, seed=1)
    b, fb = simulate_cells(50, 3, 130, 0.3, 0.9, seed=1)
    assert a.dtype == np.uint64 and a.shape == (150, 3) and np.array_equal(a, b) and np.array_equal(fa, fb)
    assert fa.tolist() == [f for f in range(50) for _ in range(3)]
    assert unpack_bits(a, 130).tokens.max() < 130
    with pytest.raises(ValueError, match="occupancy <= agreement"):
        simulate_cells(2, 2, 10, 0.9, 0.5)
    with pytest.raises(ValueError, match="fixed model"):
        simulate_cells(2, 5, 10, 0.5, 0.5, model="fixed")


def test_simulate_minutiae_and_jsonl(tmp_path: Path) -> None:
    prints, finger = simulate_minutiae(5, 3, 500.0, 400.0, (20, 30), sigma=2.0, seed=3)
    again, _ = simulate_minutiae(5, 3, 500.0, 400.0, (20, 30), sigma=2.0, seed=3)
    assert len(prints) == 15 and finger.tolist() == [f for f in range(5) for _ in range(3)]
    assert all(np.array_equal(x, y) for x, y in zip(prints, again))
    for p in prints:
        assert p.shape[1] == 2 and np.all((p >= 0) & (p < [500.0, 400.0]))
    ids = [f"f{f}_{i}" for f, i in zip(finger, [0, 1, 2] * 5)]
    write_prints_jsonl(tmp_path / "p.jsonl", ids, prints, tmp_path / "truth.csv", finger=finger.tolist())
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ids
    assert np.allclose(np.array(rows[0]["minutiae"]), prints[0], atol=1e-3)
    with open(tmp_path / "truth.csv", newline="") as f:
        truth = list(csv.DictReader(f))
    assert truth[4] == {"id": ids[4], "finger": "1"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl", "truth.csv"]  # no temp files left


# ---------------------------------------------------------------- components

FRAME = {"width": 100.0, "height": 100.0}


def minutiae_records(n_sources: int = 1) -> Records:
    values: list[str | None] = [
        "[[10, 10], [55.5, 20], [99.9, 99.9]]",
        "[[10.2, 10.1], [55, 21], [99, 99]]",
        "[]",  # a print without minutiae
        None,  # missing value
        '[[5, 5, 1.57, "ending"], [50, 50, 0.3, "bifurcation"]]',
        "[[5.1, 5.2, 1.5, 1], [50, 49, 0.2, 2]]",
        "[[0, 0]]",
        "  [[10, 10], [55.5, 20], [99.9, 99.9]] ",
        "[[30, 70], [31, 71], [32, 72], [80, 15]]",
    ]
    n = len(values)
    return Records(
        ids=[f"p{i}" for i in range(n)],
        source=np.arange(n, dtype=np.int32) % n_sources,
        source_names=[f"s{i}" for i in range(n_sources)],
        fields={"minutiae": values},
    )


def _grid(**kw: object) -> GridCells:
    return GridCells(GridCells.Params(**{**FRAME, "grid_x": 10, "grid_y": 10, **kw}))


def test_grid_cells_shingler_contract_and_values() -> None:
    recs = minutiae_records()
    ts = check_shingler(_grid(), recs)
    assert ts.row(0).tolist() == [11, 25, 99]
    assert ts.row(2).tolist() == [] and ts.row(3).tolist() == []  # empty, never dropped
    assert ts.row(4).tolist() == [0, 55] and ts.row(5).tolist() == [0, 45]
    check_shingler(_grid(margin=1.0), recs)
    spill = _grid(margin=1.0).shingle(recs)
    assert spill.row(0).tolist() == [0, 1, 10, 11, 15, 25, 99]  # (10, 10) on a corner, (55.5, 20) on a row line
    norm = GridCells(GridCells.Params(normalized=True, grid_x=4, grid_y=4))
    r = Records.from_columns(["a", "b"], {"minutiae": ["[[0.1, 0.9], [0.99, 0.0]]", None]})
    assert norm.shingle(r).row(0).tolist() == [3, 12]
    # a list already parsed is accepted too
    r2 = Records.from_columns(["a"], {"minutiae": [[[10, 10], (55.5, 20.0)]]})  # type: ignore[list-item]
    assert _grid().shingle(r2).row(0).tolist() == [11, 25]
    d = _grid().describe()
    assert d["type"] == "grid_cells"


def test_grid_cells_shingler_describes_the_prints() -> None:
    g = _grid()
    d = g.merge_reports([g.shingle_reported(minutiae_records()).report])
    assert d["records"] == 9 and d["prints_without_minutiae"] == 2 and d["missing_values"] == 1
    assert d["n_cells"] == 100 and 0 < d["occupancy"] < 1


def test_parse_minutiae() -> None:
    ok = parse_minutiae('[[1, 2], [3.5, 4, 0.1, "ending"]]')
    assert ok is not None and ok.tolist() == [[1.0, 2.0], [3.5, 4.0]]
    for bad in ("not json", '{"x": 1}', "[1, 2]", "[[1]]", '[["1", "2"]]', "[[true, 2]]", "[[1, 2], 3]", "[[[1, 2]]]", 5):
        assert parse_minutiae(bad) is None, bad
    assert parse_minutiae([[True, 2]]) is None
    assert parse_minutiae(None).shape == (0, 2) and parse_minutiae("[]").shape == (0, 2)  # type: ignore[union-attr]
    nan = parse_minutiae("[[NaN, 1]]")
    assert nan is not None and np.isnan(nan[0, 0])  # reported later as outside the frame


def test_grid_cells_shingler_reports_bad_values_with_ids() -> None:
    values = ["[[1, 1]]"] + ["oops"] * 12 + ["[[150, 1]]", "[[NaN, 2]]", '[["a", 1]]']
    recs = Records.from_columns([f"r{i}" for i in range(len(values))], {"minutiae": values})
    with pytest.raises(InputError) as exc:
        _grid().shingle(recs)
    text = str(exc.value)
    assert "13 record(s) hold no valid list of minutiae" in text
    assert "'r1', 'r2'" in text and "(and 3 more)" in text and "'r13'" not in text.split("outside")[0]
    assert "2 record(s) have minutiae outside the frame [0, 100) x [0, 100)" in text
    assert "'r13', 'r14'" in text and "first: (150, 1)" in text
    assert "declare width/height of the frame, or normalized: true" in text
    assert "x in [1, 150]" in text
    with pytest.raises(InputError, match="no column 'minutiae'"):
        _grid().shingle(Records.from_columns(["a"], {"text": ["[]"]}))


def test_grid_params_need_a_frame() -> None:
    with pytest.raises(ValueError, match="declare width/height of the frame, or normalized: true"):
        GridCells.Params(grid_x=4)
    with pytest.raises(ValueError, match="not both"):
        GridCells.Params(normalized=True, width=3.0, height=3.0)


def _batch(recs: Records, link: bool = False) -> Batch:
    ts = _grid(margin=2.0).shingle(recs)
    sig = BitVector(BitVector.Params(n_bits=100)).build(ts)
    return Batch(records=recs, tokens=ts, signatures=sig, cross_source_only=link)


def test_bitvector_contract_and_n_bits_from_the_grid() -> None:
    ts = _grid().shingle(minutiae_records())
    sig = check_signature_builder(BitVector(BitVector.Params(n_bits=100)), ts)
    assert sig.kind == "bits" and sig.values.shape == (9, 2) and sig.meta["n_bits"] == 100
    assert sig.empty is not None and sig.empty.tolist() == [False, False, True, True, False, False, False, False, False]
    ctx = Context(peers={"shingler": GridCells.Params(**FRAME, grid_x=10, grid_y=10)})
    assert BitVector(BitVector.Params(), ctx).n_bits == 100
    assert BitVector.check(BitVector.Params(), Context()) != []
    with pytest.raises(ConfigError, match="does not fit"):
        BitVector(BitVector.Params(n_bits=50)).build(ts)


def test_grid_bits_blocker_contract_and_report() -> None:
    recs = minutiae_records()
    batch = _batch(recs)
    blocker = GridBits(GridBits.Params(sets=4000, cells=1, seed=3))
    pairs = check_blocker(blocker, batch)
    assert (0, 1) in set(zip(pairs.left.tolist(), pairs.right.tolist()))
    assert not set(pairs.left.tolist() + pairs.right.tolist()) & {2, 3}  # empty prints never pair
    rep = {**blocker.describe(), **blocker.block(batch).report}
    for key in (
        "sets",
        "cells",
        "seed",
        "occupancy",
        "p_candidate_same",
        "p_candidate_different",
        "p_candidate_same_finite_grid",
        "buckets",
        "largest_bucket",
        "oversized_buckets",
        "raw_pairs",
    ):
        assert key in rep, key
    assert rep["seed"] == 3 and rep["agreement_assumed"] == 0.8 and rep["records_skipped_empty"] == 2
    # the job seed is the default seed; link mode gives cross-source pairs only
    assert GridBits(GridBits.Params(), Context(seed=9)).seed == 9
    link = check_blocker(GridBits(GridBits.Params(sets=4000, cells=1)), _batch(minutiae_records(2), link=True))
    assert len(link) > 0
    # too many pairs: a clear error, not an out-of-memory
    with pytest.raises(InputError, match="more than max_pairs"):
        GridBits(GridBits.Params(sets=4000, cells=1, max_pairs=2)).candidates(batch)
    assert GridBits.check(GridBits.Params(cells=5), Context(peers={"signature": BitVector.Params(n_bits=4)}))
    with pytest.raises(ConfigError, match="needs bit-vector signatures"):
        GridBits().candidates(Batch(records=recs))


def test_cell_overlap_verifier_contract() -> None:
    batch = _batch(minutiae_records())
    pairs = Pairs(np.array([0, 0, 2, 4]), np.array([1, 7, 3, 5]))
    for kind in ("jaccard", "agreement", "overlap"):
        scores = check_verifier(CellOverlap(CellOverlap.Params(kind=kind, threshold=0.5)), batch, pairs)
        assert scores[1] == 1.0 and scores[2] == 0.0  # identical prints; two empty prints
    assert CellOverlap.check(CellOverlap.Params(), Context()) != []
    assert CellOverlap.check(CellOverlap.Params(), Context(threshold=0.5)) == []


# ---------------------------------------------------------------- end to end


def test_job_end_to_end(tmp_path: Path) -> None:
    n_fingers, imp = 40, 3
    prints, finger = simulate_minutiae(n_fingers, imp, 500.0, 500.0, (60, 100), sigma=3.0, seed=5)
    ids = [f"f{f:03d}_{i}" for f, i in zip(finger, np.tile(np.arange(imp), n_fingers))]
    write_prints_jsonl(tmp_path / "prints.jsonl", ids, prints, tmp_path / "truth.csv", finger=finger.tolist())
    job_file = tmp_path / "job.yaml"
    job_file.write_text(
        textwrap.dedent("""
        name: fingerprints
        mode: dedup
        seed: 42
        threshold: 0.5
        sources:
          - {name: prints, path: prints.jsonl, id: id, fields: [minutiae]}
        shingler: {type: grid_cells, field: minutiae, width: 500, height: 500, grid_x: 20, grid_y: 20, margin: 2}
        signature: {type: bitvector}
        blockers: [{type: grid_bits, sets: 1024, cells: 3}]
        verifier: {type: cell_overlap, kind: agreement}
        cluster: {type: connected_components}
    """)
    )
    reg = build_registry(extra_modules=["er_plugins.fingerprints"])
    job = parse_job(job_file, registry=reg)
    res = run_job(job, tmp_path / "out")
    with open(tmp_path / "out" / "clusters.csv", newline="") as f:
        clusters = list(csv.DictReader(f))
    assert sorted(r["id"] for r in clusters) == sorted(ids)  # every record exactly once
    label = {r["id"]: r["cluster_id"] for r in clusters}
    by_finger: dict[int, set[str]] = {}
    for i, f in zip(ids, finger):
        by_finger.setdefault(int(f), set()).add(label[i])
    whole = sum(len(v) == 1 for v in by_finger.values())
    assert whole >= 0.9 * n_fingers, whole
    # clusters do not mix fingers
    fingers_of: dict[str, set[int]] = {}
    for i, f in zip(ids, finger):
        fingers_of.setdefault(label[i], set()).add(int(f))
    assert sum(len(v) > 1 for v in fingers_of.values()) <= 1
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    blk = report["blockers"][0]
    assert blk["type"] == "grid_bits" and blk["seed"] == 42 and blk["sets"] == 1024
    assert 0.1 < blk["occupancy"] < 0.4 and report["signature"]["n_bits_effective"] == 400
    assert report["shingler"]["records"] == len(ids)
    assert len(res.labels) == len(ids)


def test_job_reports_a_missing_frame(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"id": "a", "minutiae": [[1, 2]]}\n')
    job_file = tmp_path / "job.yaml"
    job_file.write_text(
        textwrap.dedent("""
        threshold: 0.5
        sources: [{name: p, path: p.jsonl, fields: [minutiae]}]
        shingler: {type: grid_cells}
        signature: {type: bitvector}
        blockers: [{type: grid_bits}]
        verifier: {type: cell_overlap}
    """)
    )
    reg = build_registry(extra_modules=["er_plugins.fingerprints"])
    with pytest.raises(ConfigError, match="width/height"):
        parse_job(job_file, registry=reg)


def test_job_reports_minutiae_outside_the_frame(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text(
        '{"id": "a", "minutiae": [[1, 2]]}\n{"id": "b", "minutiae": [[640, 2]]}\n{"id": "c", "minutiae": []}\n'
    )
    job_file = tmp_path / "job.yaml"
    job_file.write_text(
        textwrap.dedent("""
        threshold: 0.5
        sources: [{name: p, path: p.jsonl, fields: [minutiae]}]
        shingler: {type: grid_cells, width: 500, height: 500}
        signature: {type: bitvector}
        blockers: [{type: grid_bits}]
        verifier: {type: cell_overlap}
    """)
    )
    job = parse_job(job_file, registry=build_registry(extra_modules=["er_plugins.fingerprints"]))
    with pytest.raises(InputError, match=r"outside the frame .*'b'"):
        run_job(job, tmp_path / "out")
    assert not (tmp_path / "out").exists()
