"""Candidate probabilities of random-cell-set blocking (SEEDS §6) and the choice of (c, M)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from er_framework.kernels.bits_probabilities import candidate_probabilities, candidate_probabilities_exact, suggest_sets

# ---------------------------------------------------------------- probabilities


def test_candidate_probabilities_reproduce_the_seed() -> None:
    same, diff = candidate_probabilities(0.2, 0.8, 3, 1024)
    assert pytest.approx(0.004096) == (0.2 * 0.8) ** 3 and pytest.approx(0.000064) == 0.2**6
    assert same == pytest.approx(1 - (1 - 0.004096) ** 1024, rel=1e-12)
    assert diff == pytest.approx(1 - (1 - 0.000064) ** 1024, rel=1e-12)
    assert round(same, 3) == 0.985 and round(diff, 3) == 0.063
    assert same == pytest.approx(0.985048, abs=1e-6) and diff == pytest.approx(0.063437, abs=1e-6)
    # 4 or 5 cells per set lower the false positives (and the recall, at the same M)
    s4, d4 = candidate_probabilities(0.2, 0.8, 4, 1024)
    s5, d5 = candidate_probabilities(0.2, 0.8, 5, 1024)
    assert d5 < d4 < diff and s5 < s4 < same


def test_candidate_probabilities_exact_against_direct_sums() -> None:
    from scipy.stats import binom, hypergeom

    n, m = 400, 1024
    k = np.arange(n + 1)
    for c in (3, 4, 5):
        x = np.array([math.comb(int(v), c) for v in k], dtype=float) / math.comb(n, c)
        f = 1 - (1 - x) ** m
        same, diff = candidate_probabilities_exact(0.2, 0.8, c, m, n)
        assert same == pytest.approx(float((binom.pmf(k, n, 0.16) * f).sum()), rel=1e-9)
        assert diff == pytest.approx(float((binom.pmf(k, n, 0.04) * f).sum()), rel=1e-9)
        fs, fd = candidate_probabilities_exact(0.2, 0.8, c, m, n, model="fixed")
        assert fs == pytest.approx(float(f[64]), rel=1e-12)
        assert fd == pytest.approx(float((hypergeom.pmf(k, n, 80, 80) * f).sum()), rel=1e-9)
    # the independence approximation overstates the same-finger rate on a 400-cell grid
    same, diff = candidate_probabilities_exact(0.2, 0.8, 3, 1024, 400)
    assert round(same, 3) == 0.967 and round(diff, 4) == 0.0623


def test_suggest_sets() -> None:
    s = suggest_sets(0.2, 0.8, target_recall=0.985, max_fp_rate=0.07)
    assert s.meets_targets and s.recommended is not None
    assert (s.recommended.cells, s.recommended.sets) == (3, 1024)  # the seed's choice is the cheapest
    by_c = {o.cells: o for o in s.options}
    assert by_c[4].sets == 6407 and by_c[5].sets == 40050
    for o in s.options:
        if o.sets is not None:
            assert o.p_same >= 0.985 and candidate_probabilities(0.2, 0.8, o.cells, o.sets - 1)[0] < 0.985
    assert by_c[3].p_diff > by_c[4].p_diff > by_c[5].p_diff
    strict = suggest_sets(0.2, 0.8, 0.985, 0.01)
    assert strict.meets_targets and strict.recommended.cells == 5
    none = suggest_sets(0.2, 0.8, 0.985, 1e-6)
    assert not none.meets_targets and "best compromise" in none.note
    assert none.recommended is not None and none.recommended.meets_recall
    hopeless = suggest_sets(0.2, 0.8, 0.999, 0.5, c_range=range(8, 10), max_sets=100)
    assert not hopeless.meets_targets and "no cells-per-set value reaches recall" in hopeless.note
