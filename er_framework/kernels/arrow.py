"""Arrow arrays made from and read into Python lists and numpy arrays without pyarrow's conversion layer.

``pyarrow.array(...)``, ``pa.scalar(...)``, a Python number given to a compute
function (``pc.fill_null(a, -1)``) and ``Array.to_numpy()`` all go through
pyarrow's pandas shim, which imports pandas (~0.15 s of every process start
where pandas is installed) although nothing of pandas is used. The functions
here build the same arrays from their buffers (``pa.Array.from_buffers``:
numpy-made offsets and validity bitmaps, the UTF-8 bytes of the joined
strings) and read fixed-width arrays back through their buffers, so a run of
``er`` never imports pandas unless it hands out a pandas DataFrame.

* :func:`string_array` - a list of ``str`` / ``None`` as a ``string`` (or
  ``large_string``) array: the result of ``pa.array(values, type=pa.string())``.
* :func:`numeric_array` - a 1-D numpy array of numbers or booleans as an Arrow
  array of that type (no copy for numbers).
* :func:`scalar` - an Arrow scalar of a ``str``, ``int``, ``float``, ``bool``
  or ``None`` (of a given type), for compute functions' arguments.
* :func:`array_of` - ``pa.array(values)`` (the type inferred) by the two above for a numeric numpy
  array or a sequence of strings and ``None``, by ``pa.array`` for anything else.
* :func:`to_numpy` - a fixed-width Arrow array (or chunked array) as numpy,
  nulls replaced by a given value.
* :class:`ArrowValues` - an Arrow array of strings read as a Python sequence of
  ``str`` / ``None`` (a column kept compact: ~the UTF-8 bytes, not a Python object per value).

``tests/kernels/test_arrow.py`` compares each with pyarrow's own conversion.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, repeat
from operator import is_not
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ARROW_MIN_VALUES",
    "ArrowValues",
    "CodedStrings",
    "array_of",
    "coded_parts",
    "coded_strings",
    "numeric_array",
    "scalar",
    "string_array",
    "to_numpy",
]

#: columns of fewer values than this are prepared in Python or numpy (blocking codes, compared fields): the same
#: results without importing pyarrow and pyarrow.compute, ~40 ms of a small job's whole process
ARROW_MIN_VALUES = 50_000

#: largest byte count a ``string`` array's int32 offsets can address
_INT32_BYTES = (1 << 31) - 1


class CodedStrings(list):  # type: ignore[type-arg]
    """A list of ``str`` / ``None`` that remembers how it was made: ``self[i] == distinct[codes[i]]``.

    :func:`er_framework.normalize.normalize_column_with_stats` returns its
    columns so (it has the distinct results and each value's code anyway);
    :func:`string_array` of such a list then converts only the distinct
    values and gathers them by the codes in Arrow (no pass over millions of
    Python strings), and :func:`coded_parts` hands the two parts to kernels
    that factorize a column (their work is then per distinct value).

    It is an ordinary list in every other way. Any change to it (item
    assignment, ``append``, ``sort``, ...) forgets the parts; a copy
    (``list(x)``, a slice, ``copy.copy``, pickling) is a plain list.
    """

    __slots__ = ("coded",)

    def __init__(
        self, values: Iterable[Any] = (), distinct: list[Any] | None = None, codes: npt.NDArray[np.integer[Any]] | None = None
    ) -> None:
        super().__init__(values)
        self.coded: tuple[list[Any], npt.NDArray[np.integer[Any]]] | None = (
            (distinct, codes) if distinct is not None and codes is not None else None
        )

    def __reduce__(self) -> tuple[Any, ...]:  # pickled as its parts when it has them (a worker's result)
        if self.coded is not None:
            return (coded_strings, self.coded)
        return (list, (list(self),))

    def _forget(self) -> None:
        self.coded = None

    def __setitem__(self, *args: Any) -> None:
        self._forget()
        super().__setitem__(*args)

    def __delitem__(self, *args: Any) -> None:
        self._forget()
        super().__delitem__(*args)

    def __iadd__(self, other: Iterable[Any]) -> CodedStrings:  # type: ignore[misc]
        self._forget()
        return super().__iadd__(other)

    def __imul__(self, k: Any) -> CodedStrings:  # type: ignore[misc]
        self._forget()
        return super().__imul__(k)

    def append(self, x: Any) -> None:
        self._forget()
        super().append(x)

    def extend(self, xs: Iterable[Any]) -> None:
        self._forget()
        super().extend(xs)

    def insert(self, i: Any, x: Any) -> None:
        self._forget()
        super().insert(i, x)

    def pop(self, *args: Any) -> Any:
        self._forget()
        return super().pop(*args)

    def remove(self, x: Any) -> None:
        self._forget()
        super().remove(x)

    def clear(self) -> None:
        self._forget()
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._forget()
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._forget()
        super().reverse()


class ArrowValues(Sequence[Any]):
    """A read-only sequence of the values of an Arrow array (a ``string`` array or a dictionary array of
    strings): ``values[i]`` is ``arr[i].as_py()`` (``str``, or ``None`` for a null), a slice a list.

    What a run keeps of its columns as read once they are normalized (report.html's example records):
    the Arrow form that normalizing made anyway holds a column in about its UTF-8 bytes, where a list
    holds a Python string per value (~60 bytes each and more).
    """

    __slots__ = ("array",)

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.array[i].to_pylist()
        n = len(self.array)
        k = operator.index(i)  # TypeError for anything but an integer, as a list says
        if not -n <= k < n:
            raise IndexError("ArrowValues index out of range")
        return self.array[k].as_py()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.array.to_pylist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ArrowValues):
            return list(self) == list(other)
        return isinstance(other, (list, tuple)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable-like equality by value: unhashable as a list is

    def __repr__(self) -> str:
        return f"ArrowValues({len(self)} values)"


def coded_strings(distinct: list[Any], codes: npt.NDArray[np.integer[Any]]) -> CodedStrings:
    """The :class:`CodedStrings` list ``[distinct[c] for c in codes]`` (one numpy gather)."""
    table = np.empty(len(distinct), dtype=object)
    table[:] = distinct
    return CodedStrings(table[codes].tolist(), distinct, codes)


def coded_parts(values: Sequence[Any]) -> tuple[list[Any], npt.NDArray[np.integer[Any]]] | None:
    """``(distinct, codes)`` of a :class:`CodedStrings` list that still has them (``values[i] ==
    distinct[codes[i]]``; ``distinct`` holds ``str`` and ``None``, possibly repeated), else ``None``."""
    return values.coded if isinstance(values, CodedStrings) and values.__class__ is CodedStrings else None


def string_array(values: Sequence[str | None], large: bool | None = False) -> pa.Array:
    """``values`` (``str`` and ``None``) as an Arrow string array: ``pa.array(values, type=pa.string())``.

    ``None`` is null; ``""`` is an empty string. ``large``: ``False`` a
    ``string`` array (int32 offsets: at most 2 GiB of UTF-8, else
    ``OverflowError``), ``True`` a ``large_string`` one, ``None`` the first
    when the bytes fit, else the second. A value that is neither ``str``
    (subclasses included) nor ``None`` raises ``TypeError``; a string that
    has no UTF-8 form (a lone surrogate) ``UnicodeEncodeError``, as
    ``pa.array`` fails for both.

    How: the present strings are joined with NUL between them and encoded
    once; the separators' byte positions are the values' offsets (when no
    value holds a NUL itself: else the values' lengths are counted one by
    one), and nulls are a packed validity bitmap. Every pass over millions
    of Python strings costs a cache miss per string, so there are as few as
    possible: one (the join) without ``None``, three with. A
    :class:`CodedStrings` list is converted by its distinct values, gathered
    by its codes.
    """
    import pyarrow as pa

    parts = coded_parts(values)
    if parts is not None:
        distinct, codes = parts
        try:
            return string_array(distinct, large).take(numeric_array(codes))
        except pa.ArrowException:  # the gathered values pass 2 GiB: large offsets
            if large is not None:
                raise
            return string_array(distinct, True).take(numeric_array(codes))
    if not isinstance(values, list):
        values = list(values)
    n = len(values)
    present: npt.NDArray[np.bool_] | None = None
    strings: list[Any] = values
    try:
        text = "\x00".join(strings)  # one pass when there is no None
    except TypeError:
        present = np.fromiter(map(is_not, values, repeat(None)), dtype=bool, count=n)
        strings = list(compress(values, present))
        text = "\x00".join(strings)  # TypeError for anything but str
    m = len(strings)
    raw = text.encode("utf-8")  # UnicodeEncodeError for a lone surrogate
    del text
    lengths: npt.NDArray[np.int64]
    seps = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0) if m > 1 else np.zeros(0, dtype=np.int64)
    if len(seps) == max(m - 1, 0):  # the separators are the only NULs: their positions give the lengths
        edges = np.empty(m + 1, dtype=np.int64)
        edges[0] = -1
        edges[1:m] = seps
        edges[m] = len(raw)
        lengths = np.diff(edges) - 1 if m else np.zeros(0, dtype=np.int64)
        data = raw.replace(b"\x00", b"") if m > 1 else raw
        del raw
    else:  # some value holds a NUL: lengths counted per value (in bytes where not ASCII)
        del raw
        plain = "".join(strings)
        data = plain.encode("utf-8")
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=m)
        if len(data) != len(plain):
            wide = np.flatnonzero(~np.fromiter(map(str.isascii, strings), dtype=bool, count=m))
            lengths[wide] = np.fromiter((len(strings[i].encode("utf-8")) for i in wide.tolist()), dtype=np.int64, count=len(wide))
    if large is None:
        large = len(data) > _INT32_BYTES
    elif not large and len(data) > _INT32_BYTES:
        raise OverflowError(f"{len(data):,} bytes of strings do not fit a string array (2 GiB): use large=True")
    offsets = np.zeros(n + 1, dtype=np.int64 if large else np.int32)
    if present is None:
        np.cumsum(lengths, out=offsets[1:])
    else:
        full = np.zeros(n, dtype=np.int64)
        full[present] = lengths
        np.cumsum(full, out=offsets[1:])
    validity = None if present is None else pa.py_buffer(np.packbits(present, bitorder="little"))
    kind = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=n - m)


def numeric_array(values: npt.ArrayLike) -> pa.Array:
    """A 1-D numpy array of integers, floats or booleans as an Arrow array of that type, no nulls
    (``pa.array(values)``; the numbers' memory is shared, not copied)."""
    import pyarrow as pa

    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"numeric_array: a 1-D array is needed, got shape {arr.shape}")
    if arr.dtype == np.bool_:
        bits = pa.py_buffer(np.packbits(arr, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(arr), [None, bits], null_count=0)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"numeric_array: numbers or booleans are needed, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), len(arr), [None, pa.py_buffer(arr)], null_count=0)


def scalar(value: str | int | float | bool | None, type: pa.DataType | None = None) -> pa.Scalar:
    """An Arrow scalar of ``value`` (``pa.scalar(value, type)``): a ``str`` is a ``string`` scalar, an
    ``int`` an ``int64`` one, a ``float`` a ``double``, a ``bool`` a ``bool``; with ``type`` given it is
    cast to that type (``None`` is then that type's null)."""
    import pyarrow as pa

    if value is None:
        return pa.nulls(1, type if type is not None else pa.null())[0]
    if isinstance(value, str):
        s = string_array([value])[0]
    elif isinstance(value, bool):
        s = numeric_array(np.array([value], dtype=np.bool_))[0]
    elif isinstance(value, int):
        s = numeric_array(np.array([value], dtype=np.int64))[0]
    elif isinstance(value, float):
        s = numeric_array(np.array([value], dtype=np.float64))[0]
    else:
        raise TypeError(f"scalar: a str, int, float, bool or None is needed, got {value.__class__.__name__}")
    return s if type is None or s.type == type else s.cast(type)


_NUMPY_OF = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float": np.float32, "double": np.float64, "halffloat": np.float16,
}  # fmt: skip


def to_numpy(arr: pa.Array | pa.ChunkedArray, null: Any = None) -> npt.NDArray[Any]:
    """A fixed-width Arrow array (integers, floats, booleans) as a numpy array of the same type.

    Nulls become ``null`` (required when the array has any: ``ValueError``
    otherwise). Without nulls, integers and floats share the array's memory
    (read-only); a chunked array is concatenated.
    """
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        parts = [to_numpy(c, null) for c in arr.chunks]
        if parts:
            return np.concatenate(parts)
        return np.zeros(0, dtype=np.bool_ if arr.type == pa.bool_() else _NUMPY_OF[str(arr.type)])
    n, off = len(arr), arr.offset
    buffers = arr.buffers()
    if arr.type == pa.bool_():
        bits = np.frombuffer(buffers[1], dtype=np.uint8) if n else np.zeros(0, dtype=np.uint8)
        out: npt.NDArray[Any] = np.unpackbits(bits, count=off + n, bitorder="little")[off:].astype(bool)
    else:
        dtype = _NUMPY_OF.get(str(arr.type))
        if dtype is None:
            raise TypeError(f"to_numpy: integers, floats or booleans are needed, got {arr.type}")
        out = np.frombuffer(buffers[1], dtype=dtype, count=n, offset=off * np.dtype(dtype).itemsize) if n else np.zeros(0, dtype=dtype)
    if arr.null_count:
        if null is None:
            raise ValueError("to_numpy: the array has nulls: say what they become (null=...)")
        valid = np.unpackbits(np.frombuffer(buffers[0], dtype=np.uint8), count=off + n, bitorder="little")[off:]
        out = out.copy()
        out[valid == 0] = null
    return out


def array_of(values: Sequence[Any] | npt.NDArray[Any]) -> pa.Array | pa.ChunkedArray:
    """``pa.array(values)``, the type inferred: a numpy array of numbers or booleans by :func:`numeric_array`,
    a sequence (or object array) of ``str`` and ``None`` holding at least one ``str`` by :func:`string_array`
    (a ``string`` array; ``large_string`` past 2 GiB), anything else (an all-``None`` column: the ``null``
    type; Python numbers, mixed values) by ``pa.array`` itself."""
    import pyarrow as pa

    if isinstance(values, np.ndarray):
        if values.ndim == 1 and values.dtype.kind in "biuf":
            return numeric_array(values)
        if values.dtype != object:
            return pa.array(values)
        values = values.tolist()
    if not isinstance(values, list):
        values = list(values)
    kinds = set(map(type, values))
    if str in kinds and kinds <= {str, type(None)}:
        return string_array(values, large=None)
    return pa.array(values)
