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

``tests/kernels/test_arrow.py`` compares each with pyarrow's own conversion.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_not
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["array_of", "numeric_array", "scalar", "string_array", "to_numpy"]

#: largest byte count a ``string`` array's int32 offsets can address
_INT32_BYTES = (1 << 31) - 1


def string_array(values: Sequence[str | None], large: bool | None = False) -> pa.Array:
    """``values`` (``str`` and ``None``) as an Arrow string array: ``pa.array(values, type=pa.string())``.

    ``None`` is null; ``""`` is an empty string. ``large``: ``False`` a
    ``string`` array (int32 offsets: at most 2 GiB of UTF-8, else
    ``OverflowError``), ``True`` a ``large_string`` one, ``None`` the first
    when the bytes fit, else the second. A value that is neither ``str``
    (subclasses included) nor ``None`` raises ``TypeError``; a string that
    has no UTF-8 form (a lone surrogate) ``UnicodeEncodeError``, as
    ``pa.array`` fails for both.

    How: the present strings are joined and encoded once; their byte lengths
    are their lengths in characters when the text is ASCII (else the
    non-ASCII ones are encoded one by one); the offsets are the lengths'
    running sum and nulls are a packed validity bitmap.
    """
    import pyarrow as pa

    if not isinstance(values, list):
        values = list(values)
    n = len(values)
    present = np.fromiter(map(is_not, values, repeat(None)), dtype=bool, count=n)
    n_present = int(np.count_nonzero(present))
    strings: list[Any] = values if n_present == n else list(compress(values, present))
    text = "".join(strings)  # TypeError for anything but str
    data = text.encode("utf-8")  # UnicodeEncodeError for a lone surrogate
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=n_present)
    if len(data) != len(text):  # some strings are not ASCII: their byte lengths differ from their lengths
        wide = np.flatnonzero(~np.fromiter(map(str.isascii, strings), dtype=bool, count=n_present))
        lengths[wide] = np.fromiter((len(strings[i].encode("utf-8")) for i in wide.tolist()), dtype=np.int64,
                                    count=len(wide))
    if large is None:
        large = len(data) > _INT32_BYTES
    elif not large and len(data) > _INT32_BYTES:
        raise OverflowError(f"{len(data):,} bytes of strings do not fit a string array (2 GiB): use large=True")
    offsets = np.zeros(n + 1, dtype=np.int64 if large else np.int32)
    if n_present == n:
        np.cumsum(lengths, out=offsets[1:])
    else:
        full = np.zeros(n, dtype=np.int64)
        full[present] = lengths
        np.cumsum(full, out=offsets[1:])
    validity = None if n_present == n else pa.py_buffer(np.packbits(present, bitorder="little"))
    kind = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=n - n_present)


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
        out = np.frombuffer(buffers[1], dtype=dtype, count=n, offset=off * np.dtype(dtype).itemsize) if n else \
            np.zeros(0, dtype=dtype)
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
