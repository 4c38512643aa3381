"""er_framework/io/database_parts.py: a database source read into pieces, against the local reader (naive: every
row at once), and the pieces grouped into partitions."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

from er_framework.io.database_parts import DatabasePiece, group_pieces, read_database_piece_group, write_database_pieces

DATA = Path(__file__).resolve().parents[2] / "configs" / "data" / "febrl"


def _table(db: Path, name: str, csv_path: Path) -> None:
    with csv_path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        head = next(reader)
        rows = list(reader)
    with sqlite3.connect(db) as con:
        con.execute(f"CREATE TABLE {name} ({', '.join(f'{c} TEXT' for c in head)})")
        con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in head)})", [[v or None for v in r] for r in rows])


def test_pieces_hold_every_row_in_order_and_group_by_size(tmp_path: Path) -> None:
    """The pieces against the local reader (naive: every row at once), for several piece sizes."""
    from er_framework.io.database_read import read_database

    db = tmp_path / "b.db"
    _table(db, "b", DATA / "febrl4_b.csv")
    args = {"id_column": "rec_id", "fields": ["given_name", "surname", "postcode"], "name": "B", "table": "b", "batch_rows": 333}
    whole, stats = read_database(f"sqlite:///{db}", tmp_path, **args)
    for piece_bytes in (1, 5_000, 40_000, 10**9):
        folder = tmp_path / f"p{piece_bytes}"
        folder.mkdir()
        read, pieces = write_database_pieces(folder, url=f"sqlite:///{db}", base_dir=tmp_path, **args, piece_bytes=piece_bytes)
        assert read.stats == stats
        assert [p.first_row for p in pieces] == [1] + [p.first_row + p.rows for p in pieces[:-1]]
        assert sum(p.rows for p in pieces) == len(whole)
        for size in (1, 30_000, 10**9):
            groups = group_pieces(pieces, size)
            assert [p for g in groups for p in g] == pieces
            assert all(len(g) == 1 or sum(p.bytes for p in g[:-1]) < size for g in groups)
            got = [read_database_piece_group(read, g, id_column="rec_id", name="B", layout="wide") for g in groups]
            assert [i for r in got for i in r.ids] == list(whole.ids)
            assert [v for r in got for v in r.fields["surname"]] == list(whole.fields["surname"])
    assert group_pieces([DatabasePiece("x", 1, 2, 3), DatabasePiece("y", 3, 2, 3)], 1, whole=True) == [
        [DatabasePiece("x", 1, 2, 3), DatabasePiece("y", 3, 2, 3)]
    ]
