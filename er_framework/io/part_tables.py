"""Output tables written in parts by the workers of a distributed run, assembled in the run's stage and
committed with the report as one set.

A Dask run's big tables (pairs, clusters, candidates, comparisons, verified_pairs, golden) are not gathered on
the client: each worker writes the rows of its partitions straight into the run's stage (an
:class:`~er_framework.io.outputs.OutputStage` folder ``OUT/.er-tmp-*`` on a file system the workers share
with the client), and the client assembles the parts and commits the set:

1. :func:`write_table_part` (on a worker) writes part ``k`` of table ``NAME`` as
   ``STAGE/NAME.parts/part-0000k.csv`` (its rows, no header: exactly the rows
   :func:`~er_framework.io.output_write.write_files` writes for them) or ``part-0000k.parquet``: into a
   temporary file ``.part-0000k.*.tmp-*``, fsynced, renamed into place, so that a retried task overwrites
   its part whole and a killed one leaves no part. It returns a :class:`PartInfo` (rows, bytes, file).
2. :func:`assemble_tables` (on the client) checks that the parts of each table are exactly
   ``0 .. n_parts - 1`` (a missing part - a lost worker write - or an extra one is an error naming it, never
   a short table), then, streaming one part at a time (never a whole table in memory):

   * CSV: ``STAGE/NAME.csv`` = the header + the parts in part order (byte for byte what ``write_files``
     writes for the concatenated rows); ``NAME.parts/`` is removed.
   * Parquet: the parts become the dataset folder ``STAGE/NAME/`` (``part-00000.parquet`` …; a part whose
     column types differ from the others' - an empty part's ``null`` columns - is rewritten with the
     table's types), and its manifest ``NAME/_manifest.json`` (the parts, their rows and bytes, the
     columns and the Arrow schema) is written last. Readers trust a dataset folder only with its manifest
     (:func:`~er_framework.io.output_read.find_table`).
3. :meth:`OutputStage.commit <er_framework.io.outputs.OutputStage.commit>` commits ``NAME.csv`` or the
   folder ``NAME`` with report.json and the rest, as one transaction (journal, rollback, recovery).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.errors import ErError, InputError, Problem, naming_file, os_problem
from er_framework.io.output_names import DATASET_MANIFEST, OUTPUT_TABLES, part_file_name
from er_framework.io.output_write import csv_header_text, table_arrow, write_csv_rows
from er_framework.io.outputs import OutputStage, fsync_dir

__all__ = [
    "MANIFEST_FORMAT",
    "PARTS_SUFFIX",
    "AssembledTable",
    "PartInfo",
    "assemble_tables",
    "parts_dir",
    "write_part_file",
    "write_table_part",
]

#: the folder of a table's parts in the stage: ``NAME.parts``
PARTS_SUFFIX = ".parts"
#: the ``format`` of a dataset manifest
MANIFEST_FORMAT = "er-dataset"
_FORMATS = ("csv", "parquet")
_COPY_BYTES = 1 << 20


@dataclass(frozen=True)
class PartInfo:
    """What :func:`write_table_part` wrote: part ``part_no`` of ``table``, ``rows`` rows in ``bytes`` bytes,
    the file ``file`` (its name in ``NAME.parts``), with ``columns`` in this order."""

    table: str
    part_no: int
    rows: int
    bytes: int
    file: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class AssembledTable:
    """A table :func:`assemble_tables` put together: ``entry`` is its name in the stage, to commit
    (``pairs.csv``, or the dataset folder ``pairs``); ``rows`` its rows (``None`` for CSV assembled without
    the :class:`PartInfo` of its parts), ``bytes`` the bytes of its file or parts, ``parts`` their number."""

    name: str
    entry: str
    rows: int | None
    bytes: int
    parts: int


def parts_dir(stage_dir: str | Path, name: str) -> Path:
    """The folder of table ``name``'s parts in the stage: ``STAGE/NAME.parts``."""
    return Path(stage_dir) / f"{name}{PARTS_SUFFIX}"


def _check_table(name: str, fmt: str) -> None:
    if name not in OUTPUT_TABLES:
        raise ValueError(f"unknown output table {name!r}: expected one of {', '.join(OUTPUT_TABLES)}")
    if fmt not in _FORMATS:
        raise ValueError(f"unknown output format {fmt!r}: expected 'csv' or 'parquet'")


def _rows_of(name: str, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> int:
    lengths = {c: (int(v.shape[0]) if isinstance(v, np.ndarray) else len(v)) for c, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"table {name!r}: columns have different lengths: {lengths}")
    return next(iter(lengths.values()), 0)


# ------------------------------------------------------------------ on a worker


def write_table_part(
    stage_dir: str | Path, name: str, part_no: int, columns: Mapping[str, Sequence[Any] | np.ndarray], fmt: str
) -> PartInfo:
    """Write the rows ``columns`` (``{column: values}``, every column of the table in its order, also for a
    part of zero rows) as part ``part_no`` of table ``name`` into the stage ``stage_dir``: fsynced, atomically
    (a retried task overwrites the part whole). Runs on a worker; see the module docstring."""
    _check_table(name, fmt)
    if isinstance(part_no, bool) or not isinstance(part_no, int) or part_no < 0:
        raise ValueError(f"part_no must be an integer >= 0, got {part_no!r}")
    if not columns:
        raise ValueError(f"table {name!r}: a part needs the table's columns (none given)")
    rows = _rows_of(name, columns)
    arrow = table_arrow(name, columns) if fmt == "parquet" else None
    stage = Path(stage_dir)
    if not stage.is_dir():
        raise InputError(
            Problem(
                where=str(stage),
                message=f"cannot write part {part_no} of table {name!r}: the run's stage folder is not there "
                "(the run ended, or the workers do not share the output folder's file system with the client)",
                fix="give an output folder on a file system every worker and the client can reach (a shared mount)",
            )
        )
    folder = parts_dir(stage, name)
    target = folder / part_file_name(part_no, fmt)
    try:
        folder.mkdir(exist_ok=True)
        size = write_part_file(folder, target, columns, arrow)
    except OSError as exc:
        raise InputError(os_problem(exc, str(target), f"write part {part_no} of table {name!r}")) from None
    return PartInfo(name, part_no, rows, size, target.name, tuple(columns))


def write_part_file(folder: Path, target: Path, columns: Mapping[str, Sequence[Any] | np.ndarray], arrow: Any) -> int:
    """Write one part into a temporary file in ``folder``, fsync it, rename it to ``target``; its bytes.
    ``arrow``: a ``pyarrow.Table`` written as Parquet; None: ``columns`` as CSV rows (no header)."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=folder)
    tmp = Path(tmp_name)
    try:
        with naming_file(target):
            if arrow is None:
                with open(fd, "w", encoding="utf-8", newline="") as f:
                    write_csv_rows(f, columns)
                    f.flush()
                    os.fsync(f.fileno())
            else:
                import pyarrow.parquet as pq

                os.close(fd)
                pq.write_table(arrow, tmp)
                _fsync_file(tmp)
            size = tmp.stat().st_size
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(folder)
    return size


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ on the client


def assemble_tables(
    stage: OutputStage | str | Path,
    tables: Mapping[str, Sequence[str]],
    n_parts: int | Mapping[str, int],
    fmt: str,
    *,
    parts: Mapping[str, Sequence[PartInfo]] | None = None,
) -> dict[str, AssembledTable]:
    """Put together the tables ``tables`` (``name -> its column names, in order``) written in parts by
    :func:`write_table_part` into the stage ``stage``: ``n_parts`` parts each (one number, or one per table).
    With ``parts`` (the :class:`PartInfo` the workers returned, by table) every part is also checked against
    what its worker reported (columns, bytes). Returns ``name -> AssembledTable``; commit each ``entry``.

    A missing or extra part, or a part of other columns, is an :class:`ErError` naming it (nothing is
    assembled then). See the module docstring for the files."""
    folder = stage.path if isinstance(stage, OutputStage) else Path(stage)
    plan: list[tuple[str, list[str], int]] = []
    for name, cols in tables.items():
        _check_table(name, fmt)
        n = n_parts if isinstance(n_parts, int) else n_parts.get(name, -1)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n_parts of table {name!r} must be an integer >= 0, got {n!r}")
        plan.append((name, list(cols), n))
    problems: list[Problem] = []
    for name, cols, n in plan:
        found = _part_problems(folder, name, n, fmt)
        if parts is not None and not found:
            found = _info_problems(folder, name, cols, n, fmt, parts.get(name, ()))
        problems += found
    if problems:
        raise ErError(problems)
    assembled: dict[str, AssembledTable] = {}
    for name, cols, n in plan:
        try:
            if fmt == "csv":
                assembled[name] = _assemble_csv(folder, name, cols, n, parts)
            else:
                assembled[name] = _assemble_dataset(folder, name, cols, n)
        except OSError as exc:
            raise InputError(os_problem(exc, str(exc.filename or parts_dir(folder, name)), f"assemble table {name!r}")) from None
    return assembled


def _lost(folder: Path, name: str, what: str) -> Problem:
    return Problem(
        where=str(parts_dir(folder, name)),
        message=f"table {name!r}: {what}",
        fix="a worker's write was lost or a stray file is there: run the job again (the previous outputs are kept)",
    )


def _part_problems(folder: Path, name: str, n: int, fmt: str) -> list[Problem]:
    """The missing and extra parts of table ``name`` (temporary files of killed or retried attempts are removed)."""
    where = parts_dir(folder, name)
    try:
        entries = os.listdir(where)
    except FileNotFoundError:
        entries = []
    except OSError as exc:
        return [os_problem(exc, str(where), f"list the parts of table {name!r}")]
    for entry in [e for e in entries if e.startswith(".part-") and ".tmp-" in e]:
        with contextlib.suppress(OSError):
            os.unlink(where / entry)
    present = {e for e in entries if not (e.startswith(".part-") and ".tmp-" in e)}
    expected = [part_file_name(k, fmt) for k in range(n)]
    problems = [_lost(folder, name, f"part {k} ({expected[k]}) is missing") for k in range(n) if expected[k] not in present]
    extra = sorted(present - set(expected))
    problems += [_lost(folder, name, f"{e} is not one of its {n} part(s) part-00000 .. (an extra part)") for e in extra]
    return problems


def _info_problems(folder: Path, name: str, cols: list[str], n: int, fmt: str, infos: Sequence[PartInfo]) -> list[Problem]:
    """Each part's file against what its worker reported (one :class:`PartInfo` per part)."""
    by_no = {info.part_no: info for info in infos}
    problems: list[Problem] = []
    for k in range(n):
        info = by_no.get(k)
        path = parts_dir(folder, name) / part_file_name(k, fmt)
        if info is None:
            problems.append(_lost(folder, name, f"no worker reported part {k} ({path.name})"))
        elif list(info.columns) != cols:
            problems.append(_lost(folder, name, f"part {k} ({path.name}) has the columns {list(info.columns)}, not {cols}"))
        elif path.stat().st_size != info.bytes:
            problems.append(_lost(folder, name, f"part {k} ({path.name}) holds {path.stat().st_size} bytes, its worker wrote {info.bytes}"))
    problems += [_lost(folder, name, f"a worker reported part {k}, past its {n} part(s)") for k in sorted(by_no) if k >= n]
    return problems


def _assemble_csv(folder: Path, name: str, cols: list[str], n: int, parts: Mapping[str, Sequence[PartInfo]] | None) -> AssembledTable:
    """``NAME.csv``: the header and the parts in part order, copied a block at a time; ``NAME.parts`` removed."""
    source = parts_dir(folder, name)
    target = folder / f"{name}.csv"
    with open(target, "wb") as out:
        out.write(csv_header_text(cols).encode("utf-8"))
        for k in range(n):
            with open(source / part_file_name(k, "csv"), "rb") as part:
                shutil.copyfileobj(part, out, _COPY_BYTES)
        size = out.tell()
    shutil.rmtree(source, ignore_errors=True)
    rows = sum(info.rows for info in parts[name]) if parts is not None and name in parts else None
    return AssembledTable(name, target.name, rows, size, n)


def _assemble_dataset(folder: Path, name: str, cols: list[str], n: int) -> AssembledTable:
    """The dataset folder ``NAME/``: the parts checked (their columns) and given one schema, the manifest last."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = parts_dir(folder, name)
    files = [source / part_file_name(k, "parquet") for k in range(n)]
    schemas = []
    for k, path in enumerate(files):
        try:
            schema = pq.read_schema(path)
        except pa.ArrowException as exc:
            raise ErError(_lost(folder, name, f"part {k} ({path.name}) is not a Parquet file: {exc}")) from None
        if list(schema.names) != cols:
            raise ErError(_lost(folder, name, f"part {k} ({path.name}) has the columns {list(schema.names)}, not {cols}"))
        schemas.append(schema.remove_metadata())
    try:
        unified = pa.unify_schemas(schemas, promote_options="permissive") if schemas else pa.schema([(c, pa.null()) for c in cols])
    except (pa.ArrowException, TypeError) as exc:
        raise ErError(_lost(folder, name, f"its parts hold values of different kinds in one column: {exc}")) from None
    entries = []
    for path, schema in zip(files, schemas):
        if not schema.equals(unified):
            _rewrite_part(path, unified)
        entries.append({"file": path.name, "rows": pq.read_metadata(path).num_rows, "bytes": path.stat().st_size})
    source.mkdir(exist_ok=True)  # a table of no parts
    _write_manifest(source, name, unified, entries)
    target = folder / name
    os.replace(source, target)
    return AssembledTable(name, name, sum(e["rows"] for e in entries), sum(e["bytes"] for e in entries), n)


def _rewrite_part(path: Path, schema: Any) -> None:
    """Rewrite one part with the table's ``schema`` (a batch at a time), replacing it atomically."""
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp-cast")
    source = pq.ParquetFile(path)
    with pq.ParquetWriter(tmp, schema) as writer:
        for batch in source.iter_batches():
            writer.write_batch(batch.cast(schema))
    os.replace(tmp, path)


def _write_manifest(folder: Path, name: str, schema: Any, entries: list[dict[str, Any]]) -> None:
    """``folder/_manifest.json``: the dataset's parts, rows, columns and serialized Arrow schema (renamed into place)."""
    doc = {
        "format": MANIFEST_FORMAT,
        "version": 1,
        "table": name,
        "rows": sum(e["rows"] for e in entries),
        "parts": entries,
        "columns": [{"name": f.name, "type": str(f.type)} for f in schema],
        "arrow_schema": base64.b64encode(schema.serialize().to_pybytes()).decode("ascii"),
    }
    tmp = folder / f".{DATASET_MANIFEST}.tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, folder / DATASET_MANIFEST)
