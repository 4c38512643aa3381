"""A database source read once into pieces a distributed run's workers read as partitions.

A SQL result has one order and one cursor: a Dask run cannot split it the way it splits a file by byte
ranges. One worker reads it (:func:`write_database_pieces`), with the local reader's batches, checks and
digest (:func:`~er_framework.io.database_read.read_database_rows`), and writes its rows as text, in the
result's order, into Parquet pieces of about ``piece_bytes`` in a scratch folder the workers share (beside
the run's outputs). The client groups consecutive pieces into partitions of the run's size
(:func:`group_pieces`); each partition's records are :func:`read_database_piece_group`: the pieces' rows
made records as the local reader makes them (:func:`~er_framework.io.database_read.records_of_rows`), so that
the records, their order and the reading statistics are the local run's. The scratch folder is removed when
the run ends (:func:`scratch_folder`).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from er_framework.data import Records
from er_framework.errors import InputError, os_problem
from er_framework.io.database_read import DatabaseRows, read_database_rows, records_of_rows
from er_framework.io.part_tables import write_part_file

__all__ = ["PIECE_BYTES", "DatabasePiece", "group_pieces", "read_database_piece_group", "scratch_folder", "write_database_pieces"]

#: bytes of text per piece when the run names no smaller partition
PIECE_BYTES = 2 * 2**20


@dataclass(frozen=True)
class DatabasePiece:
    """One piece of a database source's rows: its file, its first row (from 1, in the result's order), rows, bytes."""

    path: str
    first_row: int
    rows: int
    bytes: int


@contextlib.contextmanager
def scratch_folder(near: Path) -> Iterator[Path]:
    """A new folder inside ``near`` (created if needed; a run's output folder, which its workers share) for
    the pieces of a run, removed with everything in it when the run ends, however it ends."""
    near.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".er-tmp-database-", dir=near))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _text_bytes(texts: list[list[str | None]]) -> int:
    return sum(sum(map(len, filter(None, col))) for col in texts)


class _PieceWriter:
    """Batches of rows collected into pieces of about ``piece_bytes``, each written as it fills."""

    def __init__(self, folder: Path, piece_bytes: int) -> None:
        self.folder, self.piece_bytes = folder, piece_bytes
        self.pieces: list[DatabasePiece] = []
        self.wanted: list[str] = []
        self.buffer: list[list[str | None]] = []
        self.first, self.size = 1, 0

    def add(self, first_row: int, wanted: list[str], texts: list[list[str | None]]) -> None:
        if not self.buffer:
            self.wanted, self.buffer, self.first = wanted, [[] for _ in wanted], first_row
        for col, values in zip(self.buffer, texts):
            col.extend(values)
        self.size += _text_bytes(texts)
        if self.size >= self.piece_bytes:
            self.flush()

    def flush(self) -> None:
        if not self.buffer or not self.buffer[0]:
            return
        import pyarrow as pa

        target = self.folder / f"piece-{len(self.pieces):06d}.parquet"
        table = pa.table({c: pa.array(col, type=pa.string()) for c, col in zip(self.wanted, self.buffer)})
        try:  # the one writer of a run's part files: temporary file, fsync, rename
            write_part_file(self.folder, target, {}, table)
        except OSError as exc:
            raise InputError(os_problem(exc, str(target), "write a piece of a database source")) from None
        self.pieces.append(DatabasePiece(str(target), self.first, len(self.buffer[0]), self.size))
        self.buffer, self.size = [], 0


def write_database_pieces(
    folder: str | Path, *, piece_bytes: int = PIECE_BYTES, **read_args: Any
) -> tuple[DatabaseRows, list[DatabasePiece]]:
    """Read a database source (``read_args``: :func:`~er_framework.io.database_read.read_database_rows`'s, but
    ``on_batch``) into Parquet pieces of about ``piece_bytes`` of text in ``folder``: what was read, with its
    statistics, and the pieces in row order. Holds one piece's rows at a time. Raises the reader's
    :class:`InputError`."""
    writer = _PieceWriter(Path(folder), max(1, int(piece_bytes)))
    read = read_database_rows(**read_args, on_batch=writer.add)
    writer.flush()
    return read, writer.pieces


def group_pieces(pieces: Sequence[DatabasePiece], partition_bytes: float, whole: bool = False) -> list[list[DatabasePiece]]:
    """Consecutive pieces grouped into partitions of about ``partition_bytes`` (each at least one piece);
    ``whole``: one partition of every piece (a source whose records span rows: ``layout: long``)."""
    if whole:
        return [list(pieces)] if pieces else []
    groups: list[list[DatabasePiece]] = []
    size = 0.0
    for piece in pieces:
        if not groups or size + piece.bytes > partition_bytes and size > 0:
            groups.append([])
            size = 0.0
        groups[-1].append(piece)
        size += piece.bytes
    return groups


def read_database_piece_group(read: DatabaseRows, pieces: Sequence[DatabasePiece], *, id_column: str, name: str, layout: str) -> Records:
    """The records of a group of consecutive pieces, made as the local reader makes them (ids checked within
    the group; across groups the run checks them)."""
    import pyarrow.parquet as pq

    raw: dict[str, list[Any]] = {c: [] for c in read.wanted}
    for piece in pieces:
        table = pq.read_table(piece.path, columns=read.wanted)
        for c in read.wanted:
            raw[c].extend(table.column(c).to_pylist())
    rows = f"rows {pieces[0].first_row:,}-{pieces[-1].first_row + pieces[-1].rows - 1:,}" if pieces else ""
    return records_of_rows(read, raw, id_column=id_column, name=name, layout=layout, rows=rows)
