"""The checks of a job's sources that read the world (issue 33): databases connected to and their headers read,
files' headers read for every named column (``columns:``, ``csv:``), all before any record is read.

:func:`database_problems` and :func:`source_column_problems` are pass 3 of :func:`~er_framework.config.resolve.resolve_job`
for the sources; each problem names the YAML path, the file or database, and a fix.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from er_framework.config.spec import (
    JobSpec,
    SourceSpec,
)
from er_framework.config.yaml_load import YamlPath, problem_at, render_path, where_of
from er_framework.errors import ErError, Problem, closest_column, columns_text
from er_framework.io.column_map import ColumnMap
from er_framework.io.csv_dialect import CsvDialect
from er_framework.io.database import check_database_file, connect, parse_url, query_columns
from er_framework.io.parquet_dataset import dataset_header, is_parquet_dataset
from er_framework.io.remote import expand_url, is_url, local_path, url_filesystem, url_info
from er_framework.io.source_header import Header, file_format, other_separator_fix, read_header

__all__ = ["database_problems", "expand_source_path", "is_glob", "source_column_problems", "source_inputs", "url_problems"]


def is_glob(path: str) -> bool:
    """A source path with ``*``, ``?`` or ``[``: a pattern naming several files of one source."""
    return any(c in path for c in "*?[")


def expand_source_path(base_dir: Path, path: str) -> list[Path]:
    """``[base_dir / path]``, or for a glob pattern the matching files sorted by name (their records
    are read in that order, so a source's record order does not depend on the filesystem).

    Where a path is relative to the job file: a path that is not a URL is relative to ``base_dir`` (the job
    file's folder) unless absolute; a URL never is (:func:`~er_framework.io.remote.is_url`): a ``file://``
    URL is the local path it names, any other URL (``s3://``, ``memory://``) has no local path (``[]``:
    :func:`source_inputs` names it)."""
    if is_url(path):
        local = local_path(path)
        if local is None:
            return []
        path = str(local)
    if not is_glob(path):
        return [(base_dir / path).resolve()]
    import glob

    pattern = str(base_dir / path)
    return sorted(Path(p).resolve() for p in glob.glob(pattern, recursive=True) if Path(p).is_file())


def source_inputs(base_dir: Path, path: str, where: str = "") -> list[str]:
    """Every input a source path names: local files (or a folder: pages, a Parquet dataset) as absolute paths,
    and URLs read through fsspec as they are (a glob on a URL expanded by its file system, sorted by name).
    Raises :class:`~er_framework.errors.InputError` for a URL whose protocol's package is missing."""
    if is_url(path) and local_path(path) is None:
        return expand_url(path, where)
    return [str(p) for p in expand_source_path(base_dir, path)]


def url_problems(path: str, at: YamlPath, lines: dict[YamlPath, int], filename: str) -> list[Problem]:
    """The problems of a source path that is a URL read through fsspec: its protocol's package installed, the
    file there (a glob: at least one file matching)."""
    where = where_of(filename, lines, at)
    try:
        url_filesystem(path, where)  # the protocol's package installed
        found = expand_url(path, where)
    except ErError as exc:
        return exc.problems
    if not found:
        return [problem_at(filename, lines, at, message=f"the pattern {path!r} matches no file", fix="check the URL pattern")]
    if not is_glob(path):
        info = url_info(path)
        if "error" in info:
            fix = "check the URL and your access to it"
            return [problem_at(filename, lines, at, message=f"cannot read {path!r}: {info['error']}", fix=fix)]
    return []


def database_problems(
    spec: JobSpec,
    lines: dict[YamlPath, int],
    filename: str,
    base_dir: Path,
    check_files: bool,
    frames: Collection[str] = (),
) -> list[Problem]:
    """The databases of the job (issue 33): every ``database:`` URL understood (scheme, ``${VAR}``), and with
    ``check_files`` each database source connected to and its query or table's header read
    (:func:`~er_framework.io.database.query_columns`, no row fetched): the id column and every field's column
    must be there (each missing one reported, with did-you-mean); ``output.database`` connected to
    (PostgreSQL) or its folder present (SQLite, DuckDB). The Dask executor reads and writes databases too (one worker
    reads each source into pieces; the tables' parts are streamed into ``output.database``)."""
    problems: list[Problem] = []
    for i, s in enumerate(spec.sources):
        if s.database is not None and s.name not in frames:
            problems += _database_source_problems(i, spec, lines, filename, base_dir, check_files)
    if spec.output.database is not None:
        problems += _output_database_problems(spec.output.database, lines, filename, base_dir, check_files)
    return problems


def _database_source_problems(
    i: int, spec: JobSpec, lines: dict[YamlPath, int], filename: str, base_dir: Path, check_files: bool
) -> list[Problem]:
    """Source ``i``'s URL understood; with ``check_files`` its query or table and every column it reads present."""
    s = spec.sources[i]
    assert s.database is not None
    at: YamlPath = ("sources", i, "database")
    part: YamlPath = ("sources", i, "table" if s.table is not None else "query")
    try:
        url = parse_url(s.database, base_dir, where=where_of(filename, lines, at), path=render_path(at))
        if not check_files:
            return []
        conn = connect(url, base_dir, where=where_of(filename, lines, at), path=render_path(at))
        try:
            present = query_columns(conn, query=s.query, table=s.table, where=where_of(filename, lines, part), path=render_path(part))
        finally:
            conn.close()
    except ErError as exc:
        return exc.problems
    problems: list[Problem] = []
    what = f"the {'table ' + repr(s.table) if s.table is not None else 'query'} of source {s.name!r}"
    if s.id not in present:
        problems.append(
            problem_at(
                filename,
                lines,
                ("sources", i, "id"),
                message=f"{what} has no id column {s.id!r}; its columns are {present}",
                fix=f"{closest_column(s.id, present)}name the id column with id:, or select it in the query",
            )
        )
    for j, f in enumerate(s.fields):
        column = s.column_of(f)
        if column in present:
            continue
        mapped = f" (read for field {f!r})" if column != f else ""
        problems.append(
            problem_at(
                filename,
                lines,
                ("sources", i, "columns", f) if f in s.columns else ("sources", i, "fields", j),
                message=f"{what} has no column {column!r}{mapped}; its columns are {present}",
                fix=f"{closest_column(column, present)}map the field to a column of the source with columns: "
                f"{{{f}: COLUMN}}, or select it in the query",
            )
        )
    return problems


def _output_database_problems(out: str, lines: dict[YamlPath, int], filename: str, base_dir: Path, check_files: bool) -> list[Problem]:
    """``output.database`` understood; with ``check_files`` its folder present (SQLite, DuckDB) or the server
    connected to (PostgreSQL)."""
    at: YamlPath = ("output", "database")
    try:
        url = parse_url(out, base_dir, where=where_of(filename, lines, at), path=render_path(at))
        if check_files and url.file is not None and not url.file.parent.is_dir():
            return [
                problem_at(
                    filename,
                    lines,
                    at,
                    message=f"the folder {str(url.file.parent)!r} of the output database does not exist",
                    fix="create the folder, or name a database file in an existing one (relative to the YAML file's folder)",
                )
            ]
        if check_files and url.file is not None:
            check_database_file(url, True, where_of(filename, lines, at), render_path(at))
        if check_files and url.kind == "postgresql":
            connect(url, base_dir, where=where_of(filename, lines, at), path=render_path(at)).close()
    except ErError as exc:
        return exc.problems
    return []


def source_column_problems(
    spec: JobSpec,
    lines: dict[YamlPath, int],
    filename: str,
    base_dir: Path,
    check_files: bool,
    frames: Collection[str] = (),
) -> list[Problem]:
    """Every column a file source names is in its file: the id column (at ``sources[i].id``) and each field's
    column (``sources[i].fields[j]``, or ``sources[i].columns.FIELD`` for a mapped one), all reported at
    once, with a "did you mean"; and ``csv:`` only on a CSV/TSV file, with a dialect Python can read.

    Reads the header only (:func:`~er_framework.io.source_header.read_header`: a CSV/TSV file's header row in
    its dialect, a Parquet file's schema, the keys of a JSON Lines file's first objects, ``id`` and ``html``
    for a folder of pages), so it stays fast. A glob is checked on its first file (the message says so). A
    JSON Lines key absent from the first objects is reported only when those were the whole file: a key may
    be left out of the lines where it is null, and appear later on. Sources given in memory (``frames``),
    read from a database or without a file (reported by :func:`_source_problems`) are not checked here.
    """
    problems: list[Problem] = []
    for i, s in enumerate(spec.sources):
        dialect, csv_problems = _csv_setting_problems(s, i, frames, lines, filename)
        problems += csv_problems
        if csv_problems or not check_files or s.path is None or s.name in frames:
            continue
        paths = expand_source_path(base_dir, s.path)
        if not paths or not paths[0].exists():
            continue  # reported by _source_problems
        first = paths[0]
        shown = s.path if not is_glob(s.path) else f"{first.name} (the first of {len(paths)} files matching {s.path!r})"
        try:
            header = _header(first, s.id, dialect, f" (source {s.name!r})")
        except ErError as exc:
            problems.extend(exc.problems)
            continue
        except ValueError:
            continue  # not a data file: the reader says what it expected
        if header.complete and header.columns:  # else not known from the header; an empty file: the reader says so
            problems += _missing_column_problems(s, i, header.columns, header.fmt, shown, dialect, lines, filename)
    return problems


def _header(path: Path, id_column: str, dialect: CsvDialect | None, hint: str) -> Header:
    """:func:`~er_framework.io.source_header.read_header`, or a Parquet dataset's columns (its first file's)."""
    if is_parquet_dataset(path):
        return Header(dataset_header(path, hint), "parquet")
    return read_header(path, id_column, dialect, hint)


def _csv_setting_problems(
    s: SourceSpec, i: int, frames: Collection[str], lines: dict[YamlPath, int], filename: str
) -> tuple[CsvDialect | None, list[Problem]]:
    """Source ``i``'s dialect (``csv:``), and the problems of a dialect Python cannot read or of ``csv:`` on a
    source that is not a CSV/TSV file."""
    if s.csv is None:
        return None, []
    try:
        dialect = CsvDialect(s.csv.delimiter, s.csv.quote, s.csv.encoding)
    except ValueError as exc:
        path: YamlPath = ("sources", i, "csv")
        if str(exc).startswith("unknown encoding"):
            path += ("encoding",)
        return None, [problem_at(filename, lines, path, message=str(exc))]
    what = ""
    if s.name in frames:
        what = f"source {s.name!r} is given in memory (a DataFrame)"
    elif s.path is not None:
        detected = file_format(Path(s.path))
        if detected is None or detected[0] not in ("csv", "tsv"):
            kind = f"a {detected[0]} file" if detected is not None else "not a .csv or .tsv file"
            what = f"the path {s.path!r} of source {s.name!r} is {kind}"
    if what:
        fix = "remove csv: from the source (it applies to .csv and .tsv files only)"
        return None, [problem_at(filename, lines, ("sources", i, "csv"), message=f"csv: describes a CSV or TSV file, and {what}", fix=fix)]
    return dialect, []


def _missing_column_problems(
    s: SourceSpec, i: int, present: list[str], fmt: str, shown: str, dialect: CsvDialect | None, lines: dict[YamlPath, int], filename: str
) -> list[Problem]:
    """The columns of source ``i`` that its file's header ``present`` lacks, or names twice."""
    problems: list[Problem] = []
    mapping = ColumnMap(s.fields, s.columns)
    extra_fix = ""
    if fmt in ("csv", "tsv"):
        delimiter = (dialect or CsvDialect()).delimiter_for(fmt)
        extra_fix = other_separator_fix(present, delimiter, True)
    where = "page folder" if fmt == "pages" else "file"
    columns = f"columns present: {columns_text(present)}"
    wanted: list[tuple[YamlPath, str, str]] = [(("sources", i, "id"), s.id, f"id column {s.id!r}")]
    for j, f in enumerate(s.fields):
        column = mapping.of.get(f, f)
        path: YamlPath = ("sources", i, "columns", f) if f in s.columns else ("sources", i, "fields", j)
        wanted.append((path, column, "column " + mapping.label(column)))
    counts = {c: present.count(c) for c in {c for _, c, _ in wanted}}
    reported: set[str] = set()
    for path, column, label in wanted:
        if counts[column] == 0:
            problems.append(
                problem_at(
                    filename,
                    lines,
                    path,
                    message=f"{label} is not in the {where} {shown} (source {s.name!r}); {columns}",
                    fix=f"{closest_column(column, present)}name a column of the {where}, or map the field to one with "
                    f"columns: {{FIELD: COLUMN}}{extra_fix}",
                )
            )
        elif counts[column] > 1 and column not in reported:
            reported.add(column)
            problems.append(
                problem_at(
                    filename,
                    lines,
                    path,
                    message=f"{label} appears {counts[column]} times in the header of {shown} (source {s.name!r})",
                    fix="rename the columns of the file so that every name is unique",
                )
            )
    return problems
