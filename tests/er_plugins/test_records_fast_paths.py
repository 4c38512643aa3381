"""The fast paths of the customer-record plugins against their plain references.

* ``field_codes`` (Arrow factorization, distinct values sorted) equals
  ``field_codes_numpy`` and a naive ``sorted(set(...))`` rank, prefixes and
  the characters numpy sorts badly (NUL, U+0001) included.

(FieldColumn's fast paths, of the scorers: test_record_columns.py.)
"""

from __future__ import annotations

import random
import string

import numpy as np
import pytest

from er_plugins.records_blocking import field_codes, field_codes_arrow, field_codes_numpy

# ---------------------------------------------------------------------------
# field_codes


def _naive_codes(values: list, prefix: int | None) -> tuple[np.ndarray, int]:
    cut = [None if not v else v[:prefix] if prefix is not None else v for v in values]
    distinct = sorted({v for v in cut if v})
    rank = {v: i for i, v in enumerate(distinct)}
    return np.array([rank[v] if v else -1 for v in cut], dtype=np.int64), len(distinct)


def _column(seed: int, n: int) -> list:
    rng = random.Random(seed)
    alphabet = string.ascii_letters[:6] + "\x00\x01 éü日"
    pool = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 6))) for _ in range(n // 3 + 1)]
    return [rng.choice(pool + [None, ""]) for _ in range(n)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("prefix", [None, 1, 3])
def test_field_codes_equal_the_numpy_and_naive_ranks(seed: int, prefix: int | None) -> None:
    values = _column(seed, 500)
    want = _naive_codes(values, prefix)
    arrow = field_codes_arrow(values, prefix)  # what columns of ARROW_MIN_VALUES values or more take
    assert arrow is not None
    assert np.array_equal(arrow[0], want[0]) and arrow[1] == want[1]
    old = field_codes_numpy(values, prefix)
    assert np.array_equal(old[0], want[0]) and old[1] == want[1]
    got = field_codes(values, prefix)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def test_field_codes_take_arrow_from_arrow_min_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short columns are coded by numpy (no pyarrow import); long ones by Arrow."""
    import er_plugins.records_blocking as rb

    calls: list[int] = []

    def spy(values, prefix=None):
        calls.append(len(values))
        return field_codes_arrow(values, prefix)

    monkeypatch.setattr(rb, "field_codes_arrow", spy)
    values = _column(3, 40)
    monkeypatch.setattr(rb, "ARROW_MIN_VALUES", 41)
    assert np.array_equal(rb.field_codes(values)[0], _naive_codes(values, None)[0]) and calls == []
    monkeypatch.setattr(rb, "ARROW_MIN_VALUES", 40)
    assert np.array_equal(rb.field_codes(values)[0], _naive_codes(values, None)[0]) and calls == [40]


def test_field_codes_of_odd_columns() -> None:
    for codes_of in (field_codes, field_codes_arrow, field_codes_numpy):
        got = codes_of([], None)
        assert got is None or got[1] == 0
        codes, k = codes_of([None, "", None], None)
        assert k == 0 and codes.tolist() == [-1, -1, -1]
        codes, k = codes_of(["", "b", "a", "", "b"], None)
        assert (codes.tolist(), k) == ([-1, 1, 0, -1, 1], 2)
