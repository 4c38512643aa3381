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

Normalizers are Python that holds the GIL. On 2 cores the fields are
normalized on two processes (:func:`normalize_fields_shared`; the worker:
:mod:`er_framework.engine.shared`): a worker forked before the read (so that
it shares none of the data's pages) gets whole fields as Arrow arrays, one at
a time, largest first, as this process does; every field's result is the
same function's, wherever it ran.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from er_framework.data import Records
from er_framework.kernels.arrow import ArrowValues, coded_parts, coded_strings, string_array
from er_framework.kernels.parallel import POLL_SECONDS, ForkedWorker
from er_framework.normalize import FACTORIZE_MIN, normalize_column_keeping_input

__all__ = ["COST_SAMPLE", "compact_read", "concat_compact", "normalize_cost", "normalize_fields_shared", "normalize_packed", "unpacked"]


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
        records.fields[name] = ArrowValues(arr)  # read-only: normalizing reads it
    if every and all(isinstance(c, ArrowValues) for c in records.fields.values()):
        try:
            ids = string_array(records.ids, large=None)
        except (pa.ArrowException, TypeError, ValueError, UnicodeError, OverflowError):
            return records
        records.ids = []
        records.ids = ids.to_pylist()
    return records


def normalize_fields_shared(
    records: Records, spec: dict[str, Any], worker: ForkedWorker
) -> dict[str, tuple[list[str | None], dict[str, Any], Sequence[Any]]]:
    """:func:`~er_framework.normalize.normalize_column_keeping_input` of every field of ``spec`` that
    ``records`` has, ``{field: (values, stats, given)}`` in the order of ``spec``.

    The fields are taken largest first (:func:`normalize_cost`) by this process and by the worker, each
    taking the next as soon as it is free (a thread of this process hands the worker its fields and
    waits for them).
    """
    fields = [f for f in spec if f in records.fields]
    todo = deque(sorted(fields, key=lambda f: -normalize_cost(records.fields[f])))
    lock = threading.Lock()
    done: dict[str, tuple[list[str | None], dict[str, Any], Sequence[Any]]] = {}
    failed: list[BaseException] = []

    def take() -> str | None:
        with lock:
            return todo.popleft() if todo and not failed else None

    def feed() -> None:
        try:
            while (name := take()) is not None:
                values = records.fields[name]
                done[name] = unpacked(ForkedWorker.result(worker.submit(normalize_packed, values, spec[name])), values)
        except BaseException as exc:  # noqa: BLE001 - raised again by the main thread
            failed.append(exc)

    feeder = threading.Thread(target=feed, name="er-normalize-feeder", daemon=True)
    feeder.start()
    try:
        while (name := take()) is not None:
            done[name] = normalize_column_keeping_input(records.fields[name], spec[name])
    except BaseException:
        with lock:
            todo.clear()
        raise
    while feeder.is_alive():
        feeder.join(POLL_SECONDS)
    if failed:
        raise failed[0]
    return {f: done[f] for f in fields}


def normalize_packed(values: Sequence[Any], steps: Any) -> tuple[Any, dict[str, Any], Sequence[Any] | None]:
    """:func:`~er_framework.normalize.normalize_column_keeping_input` with the normalized column as
    ``(distinct results as an Arrow string array, codes)`` where it has those parts: what a worker returns
    (pickled as a few buffers, where a list of strings is a Python object per value to pickle and to load
    again, with the GIL of the process that loads it), and ``given`` as ``None`` when ``values`` are an
    :class:`ArrowValues` (the sender has them). :func:`unpacked` makes the result again."""
    import pyarrow as pa

    out, stats, given = normalize_column_keeping_input(values, steps)
    kept = None if isinstance(values, ArrowValues) else given
    parts = coded_parts(out)
    if parts is not None:
        try:
            return (string_array(parts[0], large=None), parts[1]), stats, kept
        except (pa.ArrowException, TypeError, ValueError, UnicodeError, OverflowError):
            pass
    return out, stats, kept


def unpacked(
    result: tuple[Any, dict[str, Any], Sequence[Any] | None], values: Sequence[Any]
) -> tuple[list[str | None], dict[str, Any], Sequence[Any]]:
    """The result of :func:`normalize_packed` of ``values`` as
    :func:`~er_framework.normalize.normalize_column_keeping_input`'s (the same values and stats; ``given``
    the values sent where the worker did not send them back)."""
    out, stats, given = result
    if isinstance(out, tuple):
        distinct, codes = out
        out = coded_strings(distinct.to_pylist(), codes)
    return out, stats, given if given is not None else values


#: values sampled per column by :func:`normalize_cost`
COST_SAMPLE = 4096


def normalize_cost(values: Sequence[Any]) -> float:
    """A column's normalizing time, roughly (relative units): its values (hashed once) plus its distinct
    values (each through the normalizers) as estimated from :data:`COST_SAMPLE` values spread over it."""
    n = len(values)
    if n == 0:
        return 0.0
    step = max(1, n // COST_SAMPLE)
    sample = values[::step]
    share = len(set(sample)) / max(1, len(sample))
    return n * (1.0 + 6.0 * share)


def concat_compact(parts: Sequence[Records]) -> Records:
    """:meth:`Records.concat` of records whose fields may be :class:`ArrowValues`: a field that is one in
    every part stays one (the arrays concatenated), any other becomes a list (missing in a part: ``None``)."""
    import pyarrow as pa

    names: list[str] = []
    ids: list[str] = []
    sources = []
    keys: list[str] = []
    for p in parts:
        keys += [k for k in p.fields if k not in keys]
    for p in parts:
        sources.append(p.source + len(names))
        names.extend(p.source_names)
        ids.extend(p.ids)
    fields: dict[str, Any] = {}
    for k in keys:
        cols = [p.fields.get(k) for p in parts]
        if all(isinstance(c, ArrowValues) for c in cols):
            arrays = [c.array for c in cols]  # type: ignore[union-attr]
            if len({a.type for a in arrays}) > 1:
                arrays = [a.cast(pa.large_string()) for a in arrays]
            fields[k] = ArrowValues(pa.concat_arrays(arrays))
        else:
            merged: list[Any] = []
            for p, c in zip(parts, cols):
                merged.extend(c if c is not None else [None] * len(p))
            fields[k] = merged
    source = np.concatenate(sources) if sources else np.zeros(0, dtype=np.int32)
    return Records(ids=ids, source=source, source_names=names, fields=fields)
