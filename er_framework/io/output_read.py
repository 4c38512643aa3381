"""Reading er's own outputs back: the tables :mod:`er_framework.io.output_write` wrote (CSV or Parquet) or
:mod:`er_framework.io.part_tables` assembled (a Parquet dataset folder ``pairs/`` with its manifest) for
``er report``, ``er evaluate``, ``er review`` and the training labels.

:func:`find_table` finds a run's table in its output folder (``NAME.csv``, ``NAME.parquet`` or the dataset
folder ``NAME/``), the one place that knows where a table may be; every reader below accepts each kind.

:func:`read_output_table` yields the rows with where each is (``file:LINE``, ``file row N``);
:func:`read_pairs_csv` and :func:`read_clusters_csv` read the pairs and clusters tables;
:func:`read_output_columns` reads whole columns as Arrow arrays, fast (pyarrow's CSV reader; a file it
cannot read is read again by :func:`read_output_table`, whose messages name the line).
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.errors import InputError, Problem
from er_framework.io.data_file import Capped, decode_utf8, missing_columns, read_bytes, value_text
from er_framework.io.output_names import DATASET_MANIFEST, is_dataset_dir
from er_framework.kernels.arrow import string_array

__all__ = [
    "DatasetManifest",
    "find_table",
    "large_strings",
    "read_clusters_csv",
    "read_manifest",
    "read_output_columns",
    "read_output_table",
    "read_pairs_csv",
    "read_written_table",
    "TEXT_COLUMNS",
]


def find_table(out: str | Path, name: str) -> Path | None:
    """Table ``name`` of the run in the output folder ``out``: ``NAME.csv``, ``NAME.parquet`` or the dataset
    folder ``NAME/`` (only with its manifest: :func:`~er_framework.io.output_names.is_dataset_dir`); the newest
    when there are several (a dataset: its manifest's time); None when there is none."""
    folder = Path(out)
    found = [p for p in (folder / f"{name}.csv", folder / f"{name}.parquet") if p.is_file()]
    if is_dataset_dir(folder / name):
        found.append(folder / name / DATASET_MANIFEST)
    if not found:
        return None
    newest = max(found, key=lambda p: p.stat().st_mtime_ns)
    return newest.parent if newest.name == DATASET_MANIFEST else newest


@dataclass(frozen=True)
class DatasetManifest:
    """A dataset folder's manifest, checked: its ``parts`` (paths, in order), their ``rows``, the Arrow ``schema``."""

    folder: Path
    parts: list[Path]
    rows: list[int]
    schema: Any


def _manifest_problem(folder: Path, what: str) -> InputError:
    return InputError(
        Problem(
            where=str(folder),
            message=f"not a complete dataset folder er wrote: {what}",
            fix="run the job again to rewrite its outputs (a dataset is trusted only with its whole manifest)",
        )
    )


def read_manifest(folder: str | Path) -> DatasetManifest:
    """The manifest ``_manifest.json`` of the dataset folder ``folder``, checked (every part it lists is there
    with its rows); an :class:`InputError` naming what is missing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = Path(folder)
    try:
        doc = json.loads((where / DATASET_MANIFEST).read_text(encoding="utf-8"))
        files = [str(e["file"]) for e in doc["parts"]]
        rows = [int(e["rows"]) for e in doc["parts"]]
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(doc["arrow_schema"])))
    except FileNotFoundError:
        raise _manifest_problem(where, f"no {DATASET_MANIFEST}") from None
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        raise _manifest_problem(where, f"{DATASET_MANIFEST} cannot be read ({type(exc).__name__})") from None
    parts = []
    for file, n in zip(files, rows):
        path = where / file
        if "/" in file or not path.is_file():
            raise _manifest_problem(where, f"the part {file} its manifest lists is missing")
        try:
            found = pq.read_metadata(path).num_rows
        except (OSError, pa.ArrowException):
            raise _manifest_problem(where, f"the part {file} is not a Parquet file") from None
        if found != n:
            raise _manifest_problem(where, f"the part {file} holds {found} rows, its manifest says {n}")
        parts.append(path)
    return DatasetManifest(where, parts, rows, schema)


def read_output_table(path: str | Path, required: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
    """Yield ``(where, [values of required columns])`` per row of a CSV or Parquet output."""
    p = Path(path)
    file = str(path)
    if p.is_dir():
        yield from _dataset_rows(p, required)
        return
    if not p.is_file():
        raise InputError(
            Problem(
                where=file,
                message=f"no such file: {str(p.absolute())!r}",
                fix="check the path (run the job first to create its outputs)",
            )
        )
    if p.name.lower().endswith(".parquet"):
        yield from _parquet_rows(p, file, required)
        return
    text = decode_utf8(read_bytes(p, p.name.lower().endswith(".gz"), file, ""), file, False, "")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(
                Problem(where=file, message="the file is empty: no header row", fix=f"expected the header {','.join(required)}")
            )
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(missing_columns(missing, header, f"{file}:1", "", ""))
        index = [header.index(c) for c in required]
        prev = reader.line_num
        for row in reader:
            start, prev = prev + 1, reader.line_num
            if not row:
                continue
            if len(row) < len(header):
                row = row + [""] * (len(header) - len(row))
            yield f"{file}:{start}", [row[k] for k in index]
    except csv.Error as e:
        raise InputError(Problem(where=f"{file}:{reader.line_num}", message=f"cannot parse the CSV file: {e}")) from None


def _parquet_rows(p: Path, file: str, required: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
    """The rows of a Parquet output file (``file row N``: ``file`` is the path as given)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        present = list(pq.read_schema(p).names)
        missing = [c for c in required if c not in present]
        if missing:
            raise InputError(missing_columns(missing, present, file, "", ""))
        table = pq.read_table(p, columns=list(required))
    except (pa.ArrowException, OSError) as e:
        raise InputError(Problem(where=file, message=f"cannot read the Parquet file: {e}")) from None
    cols = [table.column(c).to_pylist() for c in required]
    for i, values in enumerate(zip(*cols)):
        yield f"{file} row {i + 1}", list(values)


def _dataset_rows(folder: Path, required: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
    """The rows of a dataset folder, a batch of one part at a time (``part-00003.parquet row N``)."""
    import pyarrow.parquet as pq

    manifest = read_manifest(folder)
    missing = [c for c in required if c not in manifest.schema.names]
    if missing:
        raise InputError(missing_columns(missing, list(manifest.schema.names), str(folder), "", ""))
    for part in manifest.parts:
        row = 0
        for batch in pq.ParquetFile(part).iter_batches(columns=list(required)):
            cols = [batch.column(c).to_pylist() for c in required]
            for values in zip(*cols):
                row += 1
                yield f"{part} row {row}", list(values)


def read_pairs_csv(path: str | Path) -> list[tuple[str, str, str, str, float]]:
    """Read a pairs output (``left_source,left_id,right_source,right_id,score``).

    Accepts the CSV written by :func:`~er_framework.io.output_write.write_outputs` (or a ``.parquet``
    table with the same columns). Returns one tuple per row, in file order;
    raises :class:`InputError` on a missing file, missing columns or a score
    that is not a number (every bad score is reported).
    """
    cols = ("left_source", "left_id", "right_source", "right_id", "score")
    out: list[tuple[str, str, str, str, float]] = []
    bad = Capped(str(path), "rows with a bad score", "scores must be numbers such as 0.85")
    for where, (ls, li, rs, ri, score) in read_output_table(path, cols):
        try:
            value = float(score)
        except (TypeError, ValueError):
            bad.add(where, f"score {score!r} is not a number", "column 'score'")
            continue
        out.append((str(ls), str(li), str(rs), str(ri), value))
    problems = bad.problems()
    if problems:
        raise InputError(problems)
    return out


def read_clusters_csv(path: str | Path) -> list[tuple[str, str, str]]:
    """Read a clusters output (``source,id,cluster_id``) as ``(source, id, cluster_id)`` strings.

    Accepts the CSV written by :func:`~er_framework.io.output_write.write_outputs` (or a ``.parquet``
    table with the same columns); raises :class:`InputError` on a missing
    file or missing columns.
    """
    cols = ("source", "id", "cluster_id")
    return [(value_text(s) or "", value_text(i) or "", value_text(c) or "") for _, (s, i, c) in read_output_table(path, cols)]


def large_strings(values: Any) -> Any:
    """Values (list, numpy array, arrow array/chunked array) as one large_string array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else string_array([], large=True)
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if not isinstance(values, pa.Array):
        try:  # built from buffers: pa.array's conversion would import pandas
            values = string_array(values, large=True)
        except (TypeError, UnicodeEncodeError):  # not strings: pa.array's own error (or conversion)
            values = pa.array(values, type=pa.large_string(), from_pandas=False)
    if values.type != pa.large_string():
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        values = pc.cast(values, pa.large_string())
    return values


def _dataset_table(folder: Path, required: Sequence[str]) -> Any:
    """The columns ``required`` of a dataset folder as one Arrow table (its manifest's types)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    manifest = read_manifest(folder)
    schema = pa.schema([manifest.schema.field(c) for c in required])
    return pa.concat_tables([pq.read_table(p, columns=list(required)).cast(schema) for p in manifest.parts] or [schema.empty_table()])


#: the columns of er's tables that hold text (ids and source names), read as strings whatever they look like
TEXT_COLUMNS = ("left_source", "left_id", "right_source", "right_id", "source", "id")


def read_written_table(path: Path) -> Any:
    """A whole written table (CSV file, Parquet file or dataset folder) as a pyarrow Table, its id and source
    columns as strings (as the run's tables hold them), the others as pyarrow reads them."""
    import pyarrow as pa

    if path.is_dir() or path.name.lower().endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.read_table(path)
    import pyarrow.csv as pacsv

    return pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in TEXT_COLUMNS}, strings_can_be_null=False, quoted_strings_can_be_null=False
        ),
    )


def read_output_columns(path: Path, required: Sequence[str]) -> dict[str, Any]:
    """String columns of an output table (fast: pyarrow; errors: the io reader's messages), as
    :func:`large_strings` arrays."""
    import pyarrow as pa

    try:
        if path.is_dir():
            table = _dataset_table(path, required)
        elif path.name.lower().endswith(".parquet"):
            import pyarrow.parquet as pq

            table = pq.read_table(path, columns=list(required))
        else:
            import pyarrow.csv as pacsv

            table = pacsv.read_csv(
                path,
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    include_columns=list(required),
                    column_types={c: pa.large_string() for c in required},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
        return {c: large_strings(table.column(c)) for c in required}
    except (pa.ArrowException, OSError, KeyError, ValueError):
        # the csv-module reader names the file, line and column of the problem
        rows = [values for _, values in read_output_table(path, list(required))]
        return {c: large_strings([None if r[k] is None else str(r[k]) for r in rows]) for k, c in enumerate(required)}
