"""The columns of a run as read, held compactly from the end of the read on.

A CSV read gives a Python string per cell: at 2 x 1,000,000 customers of 8
fields, ~18 M strings and ~1.4 GB, which the run needs only until the fields
are normalized (and report.html for a few example records at the end). Freed
strings give their memory back to the system only when every string of the
same allocator arena is freed, and the cells of a row are allocated together
with its id, which the run keeps: freeing the columns after normalizing gave
back ~0.4 GB of the 1.4 (the arenas' other slots were filled again meanwhile).

:func:`compact_read` therefore turns each column that the job normalizes into
an Arrow string array right after the read (:class:`ArrowValues`, ~its UTF-8
bytes), and the ids into fresh strings once every cell is gone, so that the
read's arenas are empty and given back. Normalizing factorizes the Arrow
arrays directly (it made the same arrays from the lists before), and the run
keeps the arrays' dictionary form as the values as read.
"""

from __future__ import annotations

from collections.abc import Iterable

from er_framework.data import Records
from er_framework.kernels.arrow import ArrowValues, string_array
from er_framework.normalize import FACTORIZE_MIN

__all__ = ["compact_read"]


def compact_read(records: Records, fields: Iterable[str]) -> Records:
    """``records`` (as read) with each of ``fields`` held as :class:`ArrowValues` of an Arrow string array
    and its ids made again, *in place* (the lists are let go one by one): the same values, in order.

    A column stays a list when it is short (fewer than :data:`FACTORIZE_MIN` values: normalizing it uses no
    Arrow array either) or holds anything but ``str`` and ``None`` (or a string Arrow cannot hold). The ids
    are made again (the same strings) only when every field named was converted and the ids convert: then
    no string of the read is left in its allocator arenas. Returns ``records``.
    """
    import pyarrow as pa

    if len(records) < FACTORIZE_MIN:
        return records
    every = True
    for name in fields:
        col = records.fields.get(name)
        if col is None or isinstance(col, ArrowValues):
            continue
        try:
            arr = string_array(col, large=None)
        except (pa.ArrowException, TypeError, ValueError, UnicodeError, OverflowError):
            every = False
            continue
        del col
        records.fields[name] = ArrowValues(arr)  # type: ignore[assignment]  # read-only: normalizing reads it
    if every and all(isinstance(c, ArrowValues) for c in records.fields.values()):
        try:
            ids = string_array(records.ids, large=None)
        except (pa.ArrowException, TypeError, ValueError, UnicodeError, OverflowError):
            return records
        records.ids = []
        records.ids = ids.to_pylist()
    return records
