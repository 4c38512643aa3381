"""Tests of er_framework.kernels.arrow: Arrow arrays built from buffers equal pyarrow's own conversion.

* :func:`string_array` equals ``pa.array(values, type=pa.string() / pa.large_string())`` on random
  lists of ASCII, non-ASCII (2-, 3- and 4-byte UTF-8), empty strings and ``None`` (hypothesis and
  fixed cases), refuses what ``pa.array`` refuses (non-strings, lone surrogates) with ``TypeError`` /
  ``UnicodeEncodeError``, and picks ``large_string`` only when asked or needed;
* :func:`numeric_array` equals ``pa.array`` on every integer and float dtype and booleans, sliced and
  non-contiguous inputs;
* :func:`to_numpy` reads back what ``Array.to_numpy(zero_copy_only=False)`` gives, nulls replaced,
  offsets (slices) and chunked arrays included;
* :func:`scalar` equals ``pa.scalar``;
* none of them imports pandas (a fresh interpreter checks ``sys.modules``).
"""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.kernels.arrow import numeric_array, scalar, string_array, to_numpy

SURROGATE_FREE = st.characters(blacklist_categories=["Cs"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.text(alphabet=SURROGATE_FREE, max_size=12), st.sampled_from(["", " ", "é", "日本", "😀x", "a,b", "\x00"])),
        max_size=60,
    )
)
def test_string_array_equals_pa_array(values: list[str | None]) -> None:
    got = string_array(values)
    want = pa.array(values, type=pa.string())
    assert got.type == pa.string()
    assert got.equals(want)
    assert got.null_count == want.null_count
    assert got.to_pylist() == values
    large = string_array(values, large=True)
    assert large.type == pa.large_string() and large.equals(pa.array(values, type=pa.large_string()))
    assert string_array(values, large=None).type == pa.string()


def test_string_array_fixed_cases() -> None:
    rng = random.Random(5)
    alphabet = ["a", "Z", "0", " ", ",", "é", "ß", "中", "😀", "\t"]
    values: list[str | None] = [None if rng.random() < 0.2 else "".join(rng.choices(alphabet, k=rng.randint(0, 9))) for _ in range(5000)]
    for vals in (values, [], [None], [None, None], [""], ["", None, ""], ["ascii only", "x"], ["é"]):
        got = string_array(vals)
        assert got.equals(pa.array(vals, type=pa.string())), vals[:5]
        assert got.to_pylist() == vals
        assert pc.dictionary_encode(got).equals(pc.dictionary_encode(pa.array(vals, type=pa.string())))
    assert string_array(tuple(["a", None])).to_pylist() == ["a", None]  # any sequence


def test_string_array_refuses_what_pa_array_refuses() -> None:
    with pytest.raises(TypeError):
        string_array(["a", 1])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        string_array([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(UnicodeEncodeError):
        string_array(["ok", "\ud800"])
    with pytest.raises((pa.ArrowException, TypeError)):
        pa.array(["a", 1], type=pa.string())
    with pytest.raises((pa.ArrowException, UnicodeError)):
        pa.array(["ok", "\ud800"], type=pa.string())


def test_string_array_str_subclass_is_its_text() -> None:
    class S(str):
        pass

    assert string_array([S("ab"), None]).to_pylist() == ["ab", None]


@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64", "bool"]
)
def test_numeric_array_equals_pa_array(dtype: str) -> None:
    rng = np.random.default_rng(3)
    base = rng.integers(0, 100, size=50)
    arr = (base % 2 == 0) if dtype == "bool" else base.astype(dtype)
    for a in (arr, arr[3:17], arr[::3], arr[:0]):
        got = numeric_array(a)
        want = pa.array(a)
        assert got.type == want.type and got.equals(want)
        np.testing.assert_array_equal(to_numpy(got), a)
    swapped = np.arange(5, dtype=">i4")
    assert numeric_array(swapped).to_pylist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        numeric_array(np.zeros((2, 2)))
    with pytest.raises(TypeError):
        numeric_array(np.array(["a"]))


def test_to_numpy_with_nulls_slices_and_chunks() -> None:
    values = [1, None, 3, None, 5, 6, 7, 8, 9, None, 11]
    a = pa.array(values, type=pa.int64())
    np.testing.assert_array_equal(to_numpy(a, null=-1), [v if v is not None else -1 for v in values])
    s = a.slice(3, 6)
    np.testing.assert_array_equal(to_numpy(s, null=-1), [v if v is not None else -1 for v in values[3:9]])
    with pytest.raises(ValueError):
        to_numpy(a)
    f = pa.array([0.5, None, 2.0], type=pa.float64())
    out = to_numpy(f, null=np.nan)
    assert out[0] == 0.5 and np.isnan(out[1]) and out[2] == 2.0
    b = pa.array([True, None, False, True, True, False, True, False, True, True], type=pa.bool_())
    np.testing.assert_array_equal(to_numpy(b.slice(1), null=False), [False, False, True, True, False, True, False, True, True])
    chunked = pa.chunked_array([pa.array([1, 2], pa.int32()), pa.array([3], pa.int32())])
    got = to_numpy(chunked)
    assert got.dtype == np.int32 and got.tolist() == [1, 2, 3]
    assert to_numpy(pa.chunked_array([], type=pa.int64())).dtype == np.int64
    enc = pc.dictionary_encode(pa.array(["b", "a", None, "b"]))
    np.testing.assert_array_equal(to_numpy(enc.indices, null=-1), enc.indices.fill_null(-1).to_numpy())
    with pytest.raises(TypeError):
        to_numpy(pa.array(["x"]))


def test_scalar_equals_pa_scalar() -> None:
    for v in ("x", "", "é", 0, -1, 2**40, 1.5, True, False):
        assert scalar(v).equals(pa.scalar(v)), v
    assert scalar(0, pa.int32()).equals(pa.scalar(0, pa.int32()))
    assert scalar(" ", pa.large_string()).equals(pa.scalar(" ", pa.large_string()))
    assert scalar(None, pa.string()).equals(pa.scalar(None, pa.string()))
    assert not scalar(None, pa.string()).is_valid
    with pytest.raises(TypeError):
        scalar([1])  # type: ignore[arg-type]


def test_no_pandas_import() -> None:
    code = (
        "import sys, numpy as np, pyarrow.compute as pc\n"
        "from er_framework.kernels.arrow import numeric_array, scalar, string_array, to_numpy\n"
        "a = string_array(['x', None, 'é', ''])\n"
        "e = pc.dictionary_encode(a)\n"
        "to_numpy(e.indices, null=-1); to_numpy(pc.array_sort_indices(e.dictionary))\n"
        "pc.if_else(pc.equal(pc.binary_length(a), scalar(0)), scalar(None, a.type), a)\n"
        "e.dictionary.take(numeric_array(np.array([0, 1])))\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_array_of_equals_pa_array() -> None:
    from er_framework.kernels.arrow import array_of

    cases: list[object] = [
        np.arange(5, dtype=np.int64),
        np.array([0.5, 1.5]),
        np.array([True, False]),
        np.array(["x", None], dtype=object),
        ["a", None, "é"],
        [None, None],
        [],
        [1, 2, 3],
        [1.5, None],
        ("t", "u"),
        np.array(["fixed", "width"]),
    ]
    for values in cases:
        got = array_of(values)  # type: ignore[arg-type]
        want = pa.array(values)
        assert got.type == want.type and got.equals(want), values
    with pytest.raises(pa.ArrowTypeError):
        array_of(["a", 1])  # pa.array's own error for mixed values


def test_coded_strings_is_its_list_and_converts_by_its_parts() -> None:
    import copy
    import pickle

    from er_framework.kernels.arrow import CodedStrings, coded_parts, coded_strings

    rng = np.random.default_rng(8)
    distinct = ["b", None, "é", "a", "b", "", "日本"]  # repeated and empty values, None
    codes = rng.integers(0, len(distinct), 500).astype(np.int32)
    plain = [distinct[c] for c in codes.tolist()]
    col = coded_strings(distinct, codes)
    assert isinstance(col, CodedStrings) and col == plain and len(col) == len(plain)
    assert coded_parts(col) is not None and coded_parts(plain) is None
    for large in (False, True, None):
        want = pa.array(plain, type=pa.large_string() if large else pa.string())
        assert string_array(col, large).equals(want)
    assert col[10:20] == plain[10:20] and type(col[10:20]) is list
    back = pickle.loads(pickle.dumps(col))
    assert isinstance(back, CodedStrings) and back == plain and coded_parts(back) is not None
    assert copy.copy(col) == plain and copy.deepcopy(col) == plain
    mutations = [
        lambda c: c.__setitem__(0, "zz"),
        lambda c: c.__delitem__(0),
        lambda c: c.append("zz"),
        lambda c: c.extend(["zz"]),
        lambda c: c.insert(0, "zz"),
        lambda c: c.pop(),
        lambda c: c.remove(c[0]),
        lambda c: c.clear(),
        lambda c: c.sort(key=str),
        lambda c: c.reverse(),
        lambda c: c.__iadd__(["zz"]),
        lambda c: c.__imul__(2),
    ]
    for change in mutations:
        c = coded_strings(distinct, codes)
        expect = list(c)
        change(c)
        change(expect)
        assert coded_parts(c) is None and c == expect  # the parts are forgotten: converted as the list it is now
        assert string_array(c).equals(pa.array(expect, type=pa.string()))
        assert type(pickle.loads(pickle.dumps(c))) is list
    assert CodedStrings(["x"]).coded is None and string_array(CodedStrings(["x", None])).to_pylist() == ["x", None]


def test_string_array_with_nul_characters() -> None:
    """A value holding NUL (the separator of the joined text) takes the per-value path, same result."""
    for values in (["a\x00b", "c"], ["\x00", None, ""], ["x", "\x00\x00é", None, "y"], ["\x00"]):
        assert string_array(values).equals(pa.array(values, type=pa.string())), values
