"""io.source_files.check_ids (whole-list passes for all non-blank string ids) gives what check_ids_reference (value by
value) gives: ids, ok flags and problems, on clean, blank, missing, non-string and duplicated ids."""

from __future__ import annotations

import random

import numpy as np
import pytest

from er_framework.io.data_file import Locator
from er_framework.io.source_files import check_ids, check_ids_reference


def cases() -> list[list[object]]:
    rng = random.Random(4)
    clean = [f"id{i}" for i in range(500)]
    out: list[list[object]] = [clean, [], ["only"], [f"é{i}" for i in range(50)]]
    for bad in ("", " ", "\t", None, 7, np.int64(3), 2.5, True, "id3"):
        col = list(clean)
        col[rng.randrange(len(col))] = bad
        out.append(col)
    out.append(clean + clean[:3])  # duplicates
    out.append([1, 2, 3])
    return out


@pytest.mark.parametrize("unique", [True, False])
def test_check_ids_equals_reference(unique: bool) -> None:
    for raw in cases():
        loc = Locator("f.csv", list(range(2, len(raw) + 2)), "row")
        got = check_ids(list(raw), loc, "f.csv", "id", unique=unique)
        want = check_ids_reference(list(raw), loc, "f.csv", "id", unique=unique)
        assert got[0] == want[0] and got[1] == want[1]
        assert [str(p) for p in got[2]] == [str(p) for p in want[2]]
