"""er_framework/data.py: Records.with_fields against Records.concat, which gives a source's records the fields it lacks."""

from __future__ import annotations

import numpy as np

from er_framework.data import Records


def _records(name: str, fields: dict[str, list[str | None]]) -> Records:
    n = len(next(iter(fields.values())))
    return Records(ids=[f"{name}{i}" for i in range(n)], source=np.zeros(n, dtype=np.int32), source_names=[name], fields=fields)


def test_with_fields_gives_each_source_what_concat_gives_it() -> None:
    a = _records("a", {"name": ["x", "y"], "email": ["e", None]})
    b = _records("b", {"phone": ["1"], "name": ["z"]})
    both = Records.concat([a, b])
    order = list(both.fields)
    assert order == ["name", "email", "phone"]
    for part, rows in ((a, slice(0, 2)), (b, slice(2, 3))):
        got = part.with_fields(order)
        assert list(got.fields) == order
        assert got.fields == {k: v[rows] for k, v in both.fields.items()}
        assert got.ids == both.ids[rows]
    assert list(a.with_fields(["email"]).fields) == ["email"]  # exactly the fields named
