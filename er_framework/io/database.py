"""Databases: sources read from a SQL query or table, and the run's tables written to a database (issue 33).

The one module that knows databases. A database is named by a URL:

* ``sqlite:///rel/path.db`` and ``duckdb:///rel/path.duckdb``: a file relative to the job file's folder;
  ``sqlite:////abs/path.db`` (four slashes) an absolute one, as SQLAlchemy writes them. Read with the
  standard library's :mod:`sqlite3` (``mode=ro``) and :mod:`duckdb` (``read_only=True``): reading never
  creates a file; writing creates it (its folder must exist).
* ``postgresql://user@host:port/dbname`` or ``postgresql:///dbname?host=/socket/dir``: given to psycopg 3
  as a libpq connection string, so libpq's environment (``PGPASSWORD``, ``PGUSER`` …) and ``~/.pgpass``
  apply.

``${VAR}`` in a URL is replaced by the environment variable ``VAR`` (a missing one is an error naming it). A
URL is shown in messages as written, its password masked (:func:`mask_url`).

Reading (:func:`~er_framework.io.database_read.read_database`): the rows are fetched ``batch_rows`` at a time (a psycopg server-side cursor
for PostgreSQL, Arrow record batches for DuckDB, ``fetchmany`` for SQLite) into the column lists the file
readers produce, then made :class:`~er_framework.data.Records` by
:func:`~er_framework.io.source_files.records_from_columns` (the ids checked as for files). Values become text
as a CSV file gives them: NULL and ``''`` are missing (``None``), numbers, dates and decimals their ``str``
(``7``, ``0.8``, ``2024-01-31``), booleans ``true``/``false``; binary values are refused, naming the row.

Writing (:func:`write_tables`): every table in ONE transaction (an existing table of the same name is
dropped and created again inside it), so the database holds either the tables of the earlier run or all of
this run's.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.errors import InputError, Problem, did_you_mean

__all__ = [
    "DATABASE_MAGIC",
    "check_database_file",
    "SCHEMES",
    "DatabaseUrl",
    "connect",
    "driver_errors",
    "driver_message",
    "from_clause",
    "kind_of",
    "mask_url",
    "parse_url",
    "query_columns",
    "quote_identifier",
    "quote_identifier_part",
    "reset_after_error",
    "source_text",
    "table_names",
    "write_table_parts",
    "write_tables",
]

#: the URL schemes understood, and the database each names
SCHEMES = {
    "sqlite": "sqlite",
    "duckdb": "duckdb",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "postgresql+psycopg": "postgresql",
}
_SCHEME_FIX = "write sqlite:///FILE.db, duckdb:///FILE.duckdb or postgresql://USER@HOST:PORT/DBNAME"
_VAR = re.compile(r"\$\{([^}]*)\}")
_USERINFO_PASSWORD = re.compile(r"^([A-Za-z0-9+.-]+://[^:/@?#]*):([^/?#]*)@")  # up to the last @ of the host part
_PARAM_PASSWORD = re.compile(r"(?i)\b(password=)([^&\s]*)")
#: seconds a PostgreSQL connection may take to open (libpq's connect_timeout), unless the URL says otherwise
CONNECT_TIMEOUT = 10


# ------------------------------------------------------------------ URLs


def mask_url(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@`` or ``password=PASSWORD``) shown as ``***``."""
    url = _USERINFO_PASSWORD.sub(lambda m: f"{m.group(1)}:***@", url)
    return _PARAM_PASSWORD.sub(lambda m: m.group(1) + "***", url)


@dataclass(frozen=True)
class DatabaseUrl:
    """A database URL understood: which database, where, and how it is shown."""

    #: ``"sqlite"``, ``"duckdb"`` or ``"postgresql"``
    kind: str
    #: the URL as written, its password masked: the only form of it a message shows
    shown: str
    #: sqlite/duckdb: the database file
    file: Path | None = None
    #: postgresql: the libpq connection string (``${VAR}`` replaced)
    conninfo: str | None = None
    #: texts never shown in a message (the password)
    secrets: tuple[str, ...] = ()

    def scrub(self, text: str) -> str:
        """``text`` (a driver's message) without the URL's password."""
        for s in self.secrets:
            if s:
                text = text.replace(s, "***")
        return text


def _expand_vars(url: str, where: str, path: str) -> str:
    """``url`` with every ``${VAR}`` replaced by the environment variable's value."""

    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise InputError(
                Problem(
                    where, f"${{{name}}} in the database URL is not an environment variable name", path, "write ${NAME}, e.g. ${PGPASSWORD}"
                )
            )
        if name not in os.environ:
            raise InputError(
                Problem(
                    where,
                    f"the database URL {mask_url(url)!r} names the environment variable {name}, which is not set",
                    path,
                    f"set it before running (export {name}=…), or write the value into the URL",
                )
            )
        return os.environ[name]

    return _VAR.sub(value, url)


def parse_url(url: str, base_dir: str | Path, *, where: str = "", path: str = "database") -> DatabaseUrl:
    """``url`` understood (``${VAR}`` replaced; sqlite/duckdb paths relative to ``base_dir``).

    Raises :class:`InputError` at ``where``/``path`` for an unknown scheme (with did-you-mean), a URL without
    a scheme, a missing environment variable or a file URL without a file."""
    shown = mask_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise InputError(
            Problem(where, f"{shown!r} is not a database URL: it has no scheme (sqlite://, duckdb://, postgresql://)", path, _SCHEME_FIX)
        )
    key = scheme.lower()
    if key not in SCHEMES:
        hint = did_you_mean(key, SCHEMES)
        raise InputError(
            Problem(
                where,
                f"unknown database scheme {scheme!r} in {shown!r}: the databases read and written are SQLite, DuckDB and PostgreSQL",
                path,
                f"{hint}{_SCHEME_FIX}",
            )
        )
    kind = SCHEMES[key]
    text = _expand_vars(url, where, path)
    if kind == "postgresql":
        secrets: list[str] = []
        m = _USERINFO_PASSWORD.match(text)
        if m:
            secrets.append(m.group(2))
            secrets.append(urllib.parse.unquote(m.group(2)))
        secrets += [p.group(2) for p in _PARAM_PASSWORD.finditer(text)]
        conninfo = "postgresql://" + text.partition("://")[2]
        return DatabaseUrl(kind, shown, conninfo=conninfo, secrets=tuple(sorted({s for s in secrets if s}, key=len, reverse=True)))
    rest = text.partition("://")[2]
    if not rest.startswith("/") or rest in ("/", "//"):
        raise InputError(
            Problem(
                where,
                f"{shown!r} names no database file: a {kind} URL is {kind}:///RELATIVE/PATH or {kind}:////ABSOLUTE/PATH",
                path,
                f"e.g. {kind}:///data/customers.{'db' if kind == 'sqlite' else 'duckdb'} (relative to the YAML file's folder)",
            )
        )
    file_text = urllib.parse.unquote(rest[1:].partition("?")[0])
    file = Path(file_text) if file_text.startswith("/") else Path(base_dir) / file_text
    return DatabaseUrl(kind, shown, file=file.resolve())


# ------------------------------------------------------------------ connections


def driver_errors(kind: str) -> tuple[type[BaseException], ...]:
    if kind == "duckdb":
        import duckdb

        return (duckdb.Error,)
    if kind == "postgresql":
        import psycopg

        return (psycopg.Error,)
    return (sqlite3.Error,)


def kind_of(conn: Any) -> str:
    if isinstance(conn, sqlite3.Connection):
        return "sqlite"
    module = type(conn).__module__
    if module.startswith(("duckdb", "_duckdb")):
        return "duckdb"
    if module.startswith("psycopg"):
        return "postgresql"
    raise TypeError(f"not a connection of sqlite3, duckdb or psycopg: {type(conn).__name__}")


def driver_message(exc: BaseException, url: DatabaseUrl | None = None, limit: int = 600) -> str:
    """A driver's message on one line or a few, shortened, the password removed."""
    text = str(exc).strip() or type(exc).__name__
    if url is not None:
        text = url.scrub(text)
    text = re.sub(r"\n\s*\n", "\n", text)
    return text if len(text) <= limit else text[:limit] + " …"


def _postgres_fix(message: str) -> str:
    low = message.lower()
    if "password authentication failed" in low or "no password supplied" in low or "authentication failed" in low:
        return (
            "check the user and password: set PGPASSWORD (or ~/.pgpass), or write ${VAR} in the URL for a password kept in the environment"
        )
    if "connection refused" in low or "no such file or directory" in low or "could not connect" in low or "timeout" in low:
        return (
            "start the server, or check the host and port of the URL (postgresql://USER@HOST:PORT/DBNAME; a unix socket: ?host=/socket/dir)"
        )
    if "does not exist" in low and "database" in low:
        return "check the database name at the end of the URL (postgresql://USER@HOST:PORT/DBNAME), or create it"
    if "role" in low and "does not exist" in low:
        return "check the user name of the URL (postgresql://USER@HOST/DBNAME, or PGUSER)"
    return "check the URL: postgresql://USER@HOST:PORT/DBNAME (libpq's connection string)"


def connect(
    url: str | DatabaseUrl,
    base_dir: str | Path = ".",
    *,
    write: bool = False,
    where: str = "",
    path: str = "database",
) -> Any:
    """A DB-API connection to the database of ``url``: read-only where the driver allows it (sqlite
    ``mode=ro``, duckdb ``read_only=True``, a PostgreSQL session of read-only transactions) unless ``write``.

    Reading never creates a file: a missing sqlite/duckdb file is an error. Writing creates it (its folder
    must exist). Every failure (no such file, connection refused, authentication failed, unknown scheme) is
    an :class:`InputError` at ``where``/``path``, the URL shown with its password masked."""
    db = url if isinstance(url, DatabaseUrl) else parse_url(url, base_dir, where=where, path=path)
    if db.kind == "postgresql":
        return _connect_postgres(db, write, where, path)
    file = check_database_file(db, write, where, path)
    try:
        if db.kind == "duckdb":
            import duckdb

            return duckdb.connect(str(file), read_only=not write)
        if write:
            return sqlite3.connect(str(file), isolation_level=None)
        return sqlite3.connect(f"file:{urllib.parse.quote(str(file))}?mode=ro", uri=True, isolation_level=None)
    except driver_errors(db.kind) as exc:
        raise InputError(
            Problem(
                where,
                f"cannot open the database {db.shown!r}: {driver_message(exc, db)}",
                path,
                f"check that it is a {db.kind} database file",
            )
        ) from None


def _connect_postgres(db: DatabaseUrl, write: bool, where: str, path: str) -> Any:
    import psycopg

    assert db.conninfo is not None
    try:
        if "connect_timeout" in db.conninfo:
            conn = psycopg.connect(db.conninfo)
        else:
            conn = psycopg.connect(db.conninfo, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        msg = driver_message(exc, db)
        raise InputError(Problem(where, f"cannot connect to {db.shown!r}: {msg}", path, _postgres_fix(msg))) from None
    if not write:
        conn.read_only = True
    return conn


#: how each kind's files begin: SQLite's 16-byte header string; DuckDB's "DUCK" after an 8-byte checksum
DATABASE_MAGIC = {"sqlite": (0, b"SQLite format 3\x00"), "duckdb": (8, b"DUCK")}


def check_database_file(db: DatabaseUrl, write: bool, where: str, path: str) -> Path:
    """The file of a sqlite/duckdb URL, checked: to read, a regular file that exists; to write, a file or
    nothing (it is created) in a folder that exists. A non-empty file must be a database of the URL's kind
    (:data:`DATABASE_MAGIC`): DuckDB 2 opens any other file (a CSV, a source of the job) without an error and
    the tables "written" to it are lost, and SQLite fails only after the run; neither is ever written to."""
    assert db.file is not None
    file = db.file
    if write and not file.parent.is_dir():
        raise InputError(
            Problem(
                where,
                f"cannot write the database {db.shown!r}: the folder {str(file.parent)!r} does not exist",
                path,
                "create the folder first, or name a file in an existing folder (relative to the YAML file's folder)",
            )
        )
    if not write and not file.exists():
        raise InputError(
            Problem(
                where,
                f"database file {str(file)!r} of {db.shown!r} does not exist",
                path,
                f"{db.kind} URLs are relative to the YAML file's folder ({db.kind}:///data/x.db); "
                f"an absolute path has four slashes ({db.kind}:////abs/x.db)",
            )
        )
    if file.is_dir():
        raise InputError(Problem(where, f"the database file of {db.shown!r} is a folder ({file})", path, "name a file, not a folder"))
    if file.exists() and not file.is_file():
        raise InputError(
            Problem(where, f"the database file of {db.shown!r} is not a regular file ({file})", path, "name the database file")
        )
    if file.is_file() and not _is_database_of_kind(file, db.kind):
        raise InputError(
            Problem(
                where,
                f"the file {str(file)!r} of {db.shown!r} is not a {db.kind} database (it does not begin as one); "
                "it is neither read as one nor written to",
                path,
                f"name a {db.kind} database file, or a new file name ({db.kind} creates it)",
            )
        )
    return file


def _is_database_of_kind(file: Path, kind: str) -> bool:
    """Whether ``file`` is empty or begins as a database of ``kind`` (:data:`DATABASE_MAGIC`)."""
    offset, magic = DATABASE_MAGIC[kind]
    try:
        with open(file, "rb") as f:
            head = f.read(offset + len(magic))
    except OSError:
        return True  # the driver reports what is wrong with it
    return not head or head[offset:] == magic


# ------------------------------------------------------------------ names and columns


def quote_identifier(name: str) -> str:
    """``name`` as a SQL identifier (double quotes, a quote inside doubled); ``schema.table`` as two."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def from_clause(query: str | None, table: str | None) -> str:
    if table is not None:
        return quote_identifier(table)
    assert query is not None
    body = query.strip().rstrip(";").strip()
    return f"({body}) AS er_q"


def table_names(conn: Any) -> list[str]:
    """The tables and views of the database (``schema.table`` outside the default schema), for did-you-mean."""
    kind = kind_of(conn)
    if kind == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
    else:
        default = "'public'" if kind == "postgresql" else "'main'"
        sql = (
            "SELECT CASE WHEN table_schema = " + default + " THEN table_name ELSE table_schema || '.' || table_name END "
            "FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        )
    try:
        cur = conn.cursor()
        cur.execute(sql)
        names = [str(r[0]) for r in cur.fetchall()]
        cur.close()
    except driver_errors(kind):
        reset_after_error(conn, kind)
        return []
    return names


def reset_after_error(conn: Any, kind: str) -> None:
    """After a failed statement: PostgreSQL's transaction must be rolled back before the next one."""
    if kind == "postgresql":
        with contextlib.suppress(Exception):  # a broken connection: the next statement says so
            conn.rollback()


def source_text(query: str | None, table: str | None) -> str:
    """``table 'NAME'`` or ``query 'SELECT …'`` (its whitespace folded, shortened): a source in a message."""
    if table is not None:
        return f"table {table!r}"
    text = " ".join((query or "").split())
    return f"query {text!r}" if len(text) <= 70 else f"query {text[:70]!r}…"


def query_columns(conn: Any, *, query: str | None = None, table: str | None = None, where: str = "", path: str = "") -> list[str]:
    """The column names of ``query`` (SQL) or ``table`` (a name, ``schema.table`` allowed), without fetching
    a row (``SELECT * FROM (…) LIMIT 0``). A SQL error (no such table: did-you-mean among the tables)
    is an :class:`InputError` at ``where``/``path`` showing the driver's message."""
    if (query is None) == (table is None):
        raise ValueError("give exactly one of query and table")
    kind = kind_of(conn)
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT * FROM {from_clause(query, table)} LIMIT 0")
        names = [str(d[0]) for d in cur.description or []]
        cur.close()
    except driver_errors(kind) as exc:
        reset_after_error(conn, kind)
        msg = driver_message(exc)
        if table is not None:
            hint = did_you_mean(table, table_names(conn))
            fix = f"{hint}name a table or view of the database (schema.table for another schema), or write query: SELECT …"
        else:
            fix = "correct the SQL of query: (it runs on the database as written)"
        raise InputError(Problem(where, f"{source_text(query, table)} cannot be read: {msg}", path, fix)) from None
    return names


def quote_identifier_part(name: str) -> str:
    """One identifier quoted (a column name: dots are part of it)."""
    return '"' + name.replace('"', '""') + '"'


# ------------------------------------------------------------------ writing


def _column_type(values: Any) -> tuple[str, list[Any]]:
    """A table column's SQL type (``bigint``, ``double precision``, ``boolean`` or ``text``) and its values
    as Python objects (text: ``str`` or ``None``; a float NaN is NULL)."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(values) if len(values) else np.asarray(values, dtype=object)
    kind = arr.dtype.kind
    if kind in "iu":
        return "bigint", arr.astype(np.int64).tolist()
    if kind == "f":
        return "double precision", [None if v != v else v for v in arr.astype(np.float64).tolist()]
    if kind == "b":
        return "boolean", arr.tolist()
    items = arr.tolist() if kind != "O" else list(values)
    return "text", [v if v is None or v.__class__ is str else _text_value(v) for v in items]


def _text_value(v: Any) -> str | None:
    if isinstance(v, (float, np.floating)) and v != v:
        return None
    if isinstance(v, (bytes, bytearray, memoryview)):
        raise TypeError(f"a binary value ({len(bytes(v))} bytes) in a text column")
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, np.generic):
        return str(v.item())
    if isinstance(v, (int, float, str)):
        return str(v)
    shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:40] + "…"
    raise TypeError(f"a value of type {type(v).__name__} ({shown}) in a text column")


def _as_type(sql_type: str, values: Any) -> list[Any]:
    """A part's values as Python objects of a column whose type was set by the table's first rows."""
    kind, items = _column_type(values)
    if kind == sql_type or not items:
        return items
    if sql_type == "text":
        return [None if v is None else _text_value(v) for v in items]
    return items  # a mismatch the database reports (rolled back, naming the table)


def _insert(conn: Any, cur: Any, kind: str, ident: str, cols: list[tuple[str, str, list[Any]]]) -> int:
    """Insert the rows of the columns ``(name, type, values)`` into the table ``ident`` (in the transaction under way)."""
    names = ", ".join(quote_identifier_part(c) for c, _, _ in cols)
    n = len(cols[0][2]) if cols else 0
    if n == 0:
        return 0
    if kind == "postgresql":
        with cur.copy(f"COPY {ident} ({names}) FROM STDIN") as copy:
            for row in zip(*(v for _, _, v in cols)):
                copy.write_row(row)
    elif kind == "duckdb":
        import pyarrow as pa

        types = {"bigint": pa.int64(), "double precision": pa.float64(), "boolean": pa.bool_(), "text": pa.string()}
        arrow = pa.table({f"c{j}": pa.array(v, type=types[t]) for j, (_, t, v) in enumerate(cols)})
        conn.register("er_rows", arrow)
        try:
            conn.execute(f"INSERT INTO {ident} SELECT * FROM er_rows")
        finally:
            conn.unregister("er_rows")
    else:
        marks = ", ".join("?" for _ in cols)
        cur.executemany(f"INSERT INTO {ident} ({names}) VALUES ({marks})", zip(*(v for _, _, v in cols)))
    return n


def _write_one(conn: Any, kind: str, table: str, parts: Iterable[Mapping[str, Any]]) -> int:
    """Drop ``table`` if it exists, create it with the columns of its first part that has rows (or of its first
    part) and insert every part's rows (in the transaction under way); the rows written."""
    ident = quote_identifier_part(table)
    # (a DuckDB cursor is a connection of its own, outside this one's transaction)
    cur = conn if kind == "duckdb" else conn.cursor()
    types: list[tuple[str, str]] | None = None
    first: list[tuple[str, str, list[Any]]] | None = None
    rows = 0
    try:
        cur.execute(f"DROP TABLE IF EXISTS {ident}")
        for part in parts:
            if types is None:
                cols = [(str(c), *_column_type(v)) for c, v in part.items()]
                first = first if first is not None else cols
                if not cols or not cols[0][2]:
                    continue  # no rows: the types come from a part that has some
                types = [(c, t) for c, t, _ in cols]
                _create(cur, ident, types)
            else:
                cols = [(c, t, _as_type(t, part[c])) for c, t in types]
            rows += _insert(conn, cur, kind, ident, cols)
        if types is None:  # no part has rows: the table with its first part's columns
            _create(cur, ident, [(c, t) for c, t, _ in first or []])
    finally:
        if cur is not conn:
            cur.close()
    return rows


def _create(cur: Any, ident: str, types: list[tuple[str, str]]) -> None:
    cur.execute(f"CREATE TABLE {ident} ({', '.join(f'{quote_identifier_part(c)} {t}' for c, t in types)})")


@contextmanager
def _transaction(conn: Any, kind: str) -> Iterator[None]:
    """One transaction around the block: committed at its end, rolled back on any exception (the commit's too)."""
    if kind == "postgresql":
        conn.autocommit = True  # conn.transaction() is then the one transaction
        with conn.transaction():
            yield
        return
    if kind == "duckdb":
        conn.begin()
    else:
        conn.execute("BEGIN")
    try:
        yield
        if kind == "duckdb":
            conn.commit()
        else:
            conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):
            if kind == "duckdb":
                conn.rollback()
            else:
                conn.execute("ROLLBACK")
        raise


def write_tables(
    url: str,
    base_dir: str | Path,
    prefix: str,
    tables: Mapping[str, Mapping[str, Any]],
    *,
    where: str = "",
    path: str = "output.database",
) -> list[dict[str, Any]]:
    """Write every table of ``tables`` (``{name: {column: values}}``, as the output files are written from)
    to the database of ``url`` as ``prefix + name``, in ONE transaction; returns ``[{name, rows}]``
    (:func:`write_table_parts` with one part per table)."""
    return write_table_parts(url, base_dir, prefix, {name: [t] for name, t in tables.items()}, where=where, path=path)


def write_table_parts(
    url: str,
    base_dir: str | Path,
    prefix: str,
    tables: Mapping[str, Iterable[Mapping[str, Any]]],
    *,
    where: str = "",
    path: str = "output.database",
) -> list[dict[str, Any]]:
    """Write every table of ``tables`` (``{name: its parts}``, each part ``{column: values}``, taken one at a
    time: a distributed run's tables never whole in memory) to the database of ``url`` as ``prefix + name``,
    in ONE transaction; returns ``[{name, rows}]``.

    A table of the same name (an earlier run's) is dropped and created again inside the transaction; on any
    error the transaction is rolled back, so the database holds the earlier tables or all of these, never a
    mix. Columns are ``bigint`` (integers), ``double precision`` (floats; NaN as NULL), ``boolean`` or
    ``text``, as the table's first rows have them. A sqlite/duckdb file that does not exist is created (its
    folder must exist). Raises :class:`InputError` naming the table and the driver's message."""
    db = parse_url(url, base_dir, where=where, path=path)
    conn = connect(db, base_dir, write=True, where=where, path=path)
    kind = kind_of(conn)
    written: list[dict[str, Any]] = []
    current = ""
    try:
        with _transaction(conn, kind):
            for name, parts in tables.items():
                current = prefix + name
                try:
                    written.append({"name": current, "rows": _write_one(conn, kind, current, parts)})
                except TypeError as exc:
                    raise InputError(Problem(where, f"table {current!r} cannot be written to {db.shown!r}: {exc}", path)) from None
    except driver_errors(kind) as exc:
        raise InputError(
            Problem(
                where,
                f"writing table {current!r} to {db.shown!r} failed, nothing was written (the transaction was rolled back): "
                + driver_message(exc, db),
                path,
                "check that the database can be written by this user and that the table name is free (a view of that name is not replaced)",
            )
        ) from None
    finally:
        conn.close()
    return written
