"""Writing outputs: the job's tables (CSV or Parquet) and JSON reports put into an output directory,
all or nothing (:func:`write_outputs`), or into a folder committed as one unit (:func:`write_files`).

CSV outputs are UTF-8 with a header row and CRLF line ends (RFC 4180), floats at round-trip
precision; they are read back by :mod:`er_framework.io.output_read`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from er_framework.errors import InputError, Problem, naming_file
from er_framework.io.data_file import json_default
from er_framework.io.outputs import fsync_dir, sync_files
from er_framework.io.safe_write import pid_alive
from er_framework.kernels.arrow import array_of

__all__ = ["CSV_ROWS_PER_WRITE", "csv_header_text", "csv_texts", "table_arrow", "write_csv_rows", "write_files", "write_outputs"]


_TMP_PREFIX = ".er-tmp-"
#: :func:`write_outputs`'s temporary folder: ``OUT/.er-tmp-wPID-RANDOM`` (removed by the next call once PID is dead)
_WRITER_PREFIX = _TMP_PREFIX + "w"


def _clear_dead_writers(out: Path) -> None:
    """Remove the temporary folders of :func:`write_outputs` calls whose process died (``kill -9``)."""
    try:
        names = [n for n in os.listdir(out) if n.startswith(_WRITER_PREFIX)]
    except OSError:
        return
    for name in names:
        digits = name[len(_WRITER_PREFIX) :].split("-", 1)[0]
        path = out / name
        if digits.isdigit() and not pid_alive(int(digits)) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def _check_name(name: str, kind: str) -> None:
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or name.startswith(_TMP_PREFIX)
    ):
        raise ValueError(f"invalid {kind} name {name!r}: use a plain file name without extension")


def _column_length(col: Any) -> int:
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            raise ValueError(f"columns must be 1-D, got shape {col.shape}")
        return int(col.shape[0])
    return len(col)


def _csv_column(col: Sequence[Any] | np.ndarray) -> list[Any]:
    """A column as Python values whose ``str`` is the text to write.

    float64 values go through Python's shortest round-trip ``repr``; other
    float dtypes (float32, float16) are formatted with numpy's shortest
    representation *for that dtype* (``0.8``, not ``0.800000011920929``).
    """
    if isinstance(col, np.ndarray):
        if col.dtype.kind == "f" and col.dtype != np.float64:
            return list(col.astype(str).tolist())
        return list(col.tolist())
    return list(col)


def _write_csv(target: Path, columns: Mapping[str, Sequence[Any] | np.ndarray], sync: bool = True) -> None:
    with open(target, "w", encoding="utf-8", newline="") as f:
        if columns:
            f.write(csv_header_text(list(columns)))
            write_csv_rows(f, columns)
        f.flush()
        if sync:
            os.fsync(f.fileno())


def csv_header_text(names: Sequence[str]) -> str:
    """The header row of a CSV output with columns ``names`` (what ``csv.writer`` writes: CRLF ended)."""
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\r\n").writerow(list(names))
    return buf.getvalue()


def write_csv_rows(f: TextIO, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> None:
    """Write the rows of ``columns`` (no header) to ``f`` (opened with ``newline=""``): the rows of a CSV output.

    The text of a row depends on that row alone, so the rows of a table written in parts and concatenated
    are the rows written at once (:mod:`er_framework.io.part_tables`)."""
    cells = [_csv_column(columns[c]) for c in columns]
    if not cells:
        return
    texts = csv_texts(cells)
    if texts is None:
        csv.writer(f, lineterminator="\r\n").writerows(zip(*cells))
        return
    del cells  # no cell needs quoting: the rows are the cells joined (what csv.writer writes)
    for lo in range(0, len(texts[0]), CSV_ROWS_PER_WRITE):
        part = [t[lo : lo + CSV_ROWS_PER_WRITE] for t in texts]
        f.write("\r\n".join(map(",".join, zip(*part))))
        f.write("\r\n")


#: rows joined and written per step by :func:`_write_csv` (the text of one step is held in memory)
CSV_ROWS_PER_WRITE = 1 << 18


#: characters that make ``csv.writer`` (QUOTE_MINIMAL, ``,`` and ``"``, CRLF) quote a cell
_CSV_SPECIAL = (",", '"', "\r", "\n", "\x00")


def csv_texts(cells: list[list[Any]]) -> list[list[str]] | None:
    """The text ``csv.writer`` (comma, QUOTE_MINIMAL, CRLF) writes for every cell of these columns, when no
    cell of them needs quoting; ``None`` when one does (or holds another type than str, int, float, bool
    or None), and the caller lets ``csv.writer`` write the rows.

    ``str`` cells are themselves, ``None`` is empty, ``float`` its ``repr``, ``int`` and ``bool`` their
    ``str``. A cell needs quoting when it holds a comma, a quote, CR or LF, and a row of one column whose
    cell is empty is written ``""``: such columns take ``None`` (and so does a NUL character). One pass over each column converts it
    and one search of its joined text finds the special characters."""
    out: list[list[str]] = []
    for col in cells:
        kinds = set(map(type, col))
        if kinds <= {str, type(None)}:
            texts: list[str] = col if type(None) not in kinds else [c or "" for c in col]
        elif kinds <= {int, bool}:
            texts = list(map(str, col))
        elif kinds == {float}:
            texts = list(map(float.__repr__, col))
        else:
            return None
        joined = "".join(texts)
        if any(c in joined for c in _CSV_SPECIAL):
            return None
        out.append(texts)
    if len(out) == 1 and any(not t for t in out[0]):
        return None  # csv.writer writes a row of one empty cell as "" (else it would be an empty line)
    return out


def write_outputs(
    out_dir: str | Path,
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    json_files: dict[str, dict[str, Any]],
    fmt: str = "csv",
) -> dict[str, Path]:
    """Write tables and JSON reports into ``out_dir``, all or nothing.

    Every table ``name -> {column: values}`` becomes ``<name>.csv`` (UTF-8,
    header row, CRLF line ends as in RFC 4180, floats at round-trip precision)
    or ``<name>.parquet``; every JSON document becomes ``<name>.json``
    (``indent=2``, keys in the given order, NaN/Infinity refused; numpy
    scalars and arrays are converted).

    Atomicity: everything is first validated and serialized in memory (bad
    names, columns of different lengths, unserializable JSON raise
    ``ValueError`` before anything is written), then written and fsynced into
    a temporary directory ``out_dir/.er-tmp-wPID-*`` (one left by a killed
    process is removed by the next call), then moved into place with
    ``os.replace``. Existing outputs are hard-linked (or copied) aside first,
    so if a move fails every output already moved is rolled back: a failed
    call leaves ``out_dir`` as it was (an ``out_dir`` created by this call is
    removed again). The temporary directory is always removed.

    Returns ``name -> final path``. Raises :class:`InputError` when the
    directory cannot be written (a file in the way, no permission, disk
    full, …).
    """
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown output format {fmt!r}: expected 'csv' or 'parquet'")
    out = Path(out_dir)
    plan, arrow_tables, json_text = _serialize_outputs(tables, json_files, fmt)
    created = not out.exists()
    tmp: Path | None = None
    moved: list[Path] = []
    backups: list[tuple[Path, Path]] = []
    try:
        try:
            out.mkdir(parents=True, exist_ok=True)
            if not out.is_dir():
                raise NotADirectoryError(20, "Not a directory", str(out))
            _clear_dead_writers(out)
            tmp = Path(tempfile.mkdtemp(prefix=f"{_WRITER_PREFIX}{os.getpid()}-", dir=out))
            _write_files(tmp, tables, arrow_tables, json_text, fmt)
            _move_into_place(out, tmp, plan, moved, backups)
        except BaseException:
            _rollback(moved, backups)
            raise
    except OSError as e:
        problem = _write_problem(out, e)
        if created:
            _remove_created(out, tmp)
        raise InputError(problem) from None
    except BaseException:
        if created:
            _remove_created(out, tmp)
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return {name: out / filename for name, filename in plan}


def _serialize_outputs(
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    json_files: dict[str, dict[str, Any]],
    fmt: str,
) -> tuple[list[tuple[str, str]], dict[str, Any], dict[str, str]]:
    """Step 1 of :func:`write_outputs`: validate and serialize in memory (``ValueError`` before
    anything is written). Returns the plan ``[(name, file name)]``, the Arrow tables (Parquet)
    and the JSON texts."""
    plan: list[tuple[str, str]] = []  # (name, file name)
    for name, columns in tables.items():
        _check_name(name, "table")
        lengths = {c: _column_length(v) for c, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"table {name!r}: columns have different lengths: {lengths}")
        plan.append((name, f"{name}.{fmt}"))
    arrow_tables: dict[str, Any] = {}
    if fmt == "parquet":
        for name, columns in tables.items():
            arrow_tables[name] = table_arrow(name, columns)
    json_text: dict[str, str] = {}
    for name, doc in json_files.items():
        _check_name(name, "json file")
        if name in tables:
            raise ValueError(f"{name!r} is both a table and a json file")
        try:
            json_text[name] = (
                json.dumps(
                    doc,
                    indent=2,
                    sort_keys=False,
                    allow_nan=False,
                    ensure_ascii=False,
                    default=json_default,
                )
                + "\n"
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name}.json cannot be written as JSON: {e}") from e
        plan.append((name, f"{name}.json"))
    return plan, arrow_tables, json_text


def table_arrow(name: str, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> Any:
    """The Arrow table a Parquet output of table ``name`` holds for ``columns`` (types inferred by
    :func:`~er_framework.kernels.arrow.array_of`); ``ValueError`` naming the table when it cannot be built."""
    import pyarrow as pa

    try:
        return pa.Table.from_arrays([array_of(v) for v in columns.values()], names=list(columns))
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise ValueError(f"table {name!r} cannot be converted to Parquet: {e}") from e


def write_files(
    directory: str | Path,
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    json_files: dict[str, dict[str, Any]],
    fmt: str = "csv",
) -> dict[str, Path]:
    """The files of :func:`write_outputs` written straight into ``directory``, not fsynced: for a folder
    that is itself committed as one unit, which makes them durable then (an
    :class:`~er_framework.io.outputs.OutputStage`). Validated and serialized in memory first, as there
    (``ValueError`` before anything is written). Returns ``name -> path``."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown output format {fmt!r}: expected 'csv' or 'parquet'")
    folder = Path(directory)
    plan, arrow_tables, json_text = _serialize_outputs(tables, json_files, fmt)
    _write_files(folder, tables, arrow_tables, json_text, fmt, sync=False)
    return {name: folder / filename for name, filename in plan}


def _write_files(
    tmp: Path,
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    arrow_tables: dict[str, Any],
    json_text: dict[str, str],
    fmt: str,
    sync: bool = True,
) -> None:
    """Step 2 of :func:`write_outputs`: write (and with ``sync`` fsync) every file into the temporary directory."""
    for name, columns in tables.items():
        target = tmp / f"{name}.{fmt}"
        with naming_file(target):
            if fmt == "csv":
                _write_csv(target, columns, sync)
            else:
                import pyarrow.parquet as pq

                pq.write_table(arrow_tables[name], target)
                if sync:
                    sync_files([target])
    for name, text in json_text.items():
        target = tmp / f"{name}.json"
        with naming_file(target), open(target, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            if sync:
                os.fsync(f.fileno())
    if sync:
        fsync_dir(tmp)


def _move_into_place(out: Path, tmp: Path, plan: list[tuple[str, str]], moved: list[Path], backups: list[tuple[Path, Path]]) -> None:
    """Step 3 of :func:`write_outputs`: move the files into ``out``, keeping the old files aside
    in ``tmp`` for a rollback; ``moved`` and ``backups`` record what was done so far."""
    for _, filename in plan:
        if (out / filename).is_dir():
            raise IsADirectoryError(21, "Is a directory", str(out / filename))
    for i, (_, filename) in enumerate(plan):
        final = out / filename
        if final.exists() or final.is_symlink():
            backup = tmp / f".old-{i}-{filename}"
            try:
                os.link(final, backup, follow_symlinks=False)
            except OSError:
                shutil.copy2(final, backup, follow_symlinks=False)
            backups.append((final, backup))
        os.replace(tmp / filename, final)
        moved.append(final)
    fsync_dir(out)


def _rollback(moved: list[Path], backups: list[tuple[Path, Path]]) -> None:
    """Undo the moves of a failed :func:`write_outputs` (best effort)."""
    restored = {final for final, _ in backups}
    for final in moved:
        if final not in restored:
            with contextlib.suppress(OSError):
                os.unlink(final)
    for final, backup in backups:
        with contextlib.suppress(OSError):
            os.replace(backup, final)


def _remove_created(out: Path, tmp: Path | None) -> None:
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    with contextlib.suppress(OSError):
        out.rmdir()  # only if empty


def _write_problem(out: Path, e: OSError) -> Problem:
    target = e.filename or str(out)
    reason = e.strerror or str(e)
    if isinstance(e, (FileExistsError, NotADirectoryError)) or (out.exists() and not out.is_dir()):
        return Problem(
            where=str(out),
            message=f"cannot write outputs: {str(target)!r} is not a directory ({reason})",
            fix="choose an output directory that is not an existing file, or move the file away",
        )
    if isinstance(e, PermissionError):
        return Problem(
            where=str(out),
            message=f"cannot write outputs: permission denied for {str(target)!r}",
            fix="choose an output directory you can write to, or fix its permissions",
        )
    return Problem(
        where=str(out),
        message=f"cannot write outputs: {reason} ({str(target)!r})",
        fix="check the output directory (free space, permissions, no directory in the way "
        "of an output file); existing outputs were left as they were",
    )
