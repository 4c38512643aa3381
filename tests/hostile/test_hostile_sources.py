"""Issue 33, sources as users have them, hostile cases as whole ``er`` processes: a file of another separator
or encoding than the job says, a mapped column the file lacks, a mapping onto a column another field reads.
Every case: exit 2 (or a clean run), no traceback, the message naming the file, the column and the setting to write."""

from __future__ import annotations

import csv
import textwrap
from pathlib import Path
from typing import Any

Er = Any  # the fixture ``er`` of tests/hostile/conftest.py

ROWS = [["id", "given", "family"]] + [[f"p{i}", "Zoë" if i < 3 else f"name{i}", "Ölz" if i < 3 else f"fam{i}"] for i in range(6)]


def write(path: Path, rows: list[list[str]], delimiter: str = ",", encoding: str = "utf-8") -> Path:
    with open(path, "w", encoding=encoding, newline="") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


def job(tmp: Path, source: str) -> Path:
    cfg = tmp / "job.yaml"
    cfg.write_text(
        textwrap.dedent("""
        mode: dedup
        seed: 1
        threshold: 0.5
        sources:
          - name: people
            path: people.csv
            id: id
        """)
        + textwrap.indent(textwrap.dedent(source), "    ")
        + textwrap.dedent("""
        shingler: {type: char, k: 2}
        signature: {type: minhash, num_perm: 32}
        blockers: [{type: lsh_bands}]
        verifier: {type: jaccard}
        cluster: {type: connected_components}
        """),
        encoding="utf-8",
    )
    return cfg


def both(er: Er, cfg: Path, *needles: str) -> None:
    """``er validate`` and ``er run`` fail alike, with the needles."""
    er(["validate", cfg]).assert_clean_error(2, *needles)
    out = cfg.parent / "out"
    er(["run", cfg, "--out", out, "--quiet"]).assert_clean_error(2, *needles)
    assert not out.exists() or not any(out.iterdir())


def test_a_semicolon_file_read_as_comma_separated(er: Er, tmp_path: Path) -> None:
    write(tmp_path / "people.csv", ROWS, ";")
    both(er, job(tmp_path, "fields: [given, family]\n"), "people.csv", "looks ';'-separated", 'csv: {delimiter: ";"}')


def test_a_latin1_file_read_as_utf8_and_a_utf8_file_read_as_utf16(er: Er, tmp_path: Path) -> None:
    write(tmp_path / "people.csv", ROWS, encoding="latin-1")
    both(er, job(tmp_path, "fields: [given, family]\n"), "people.csv:2", "not valid utf-8", "csv: {encoding: cp1252}")
    write(tmp_path / "people.csv", ROWS)
    both(er, job(tmp_path, "fields: [given, family]\ncsv: {encoding: utf-16}\n"), "people.csv", "cannot be read as utf-16", "utf-16-le")


def test_a_bad_byte_far_after_the_header_is_the_runs_to_report(er: Er, tmp_path: Path) -> None:
    rows = ROWS + [[f"q{i}", "x" * 50, "y"] for i in range(3000)] + [["bad", "B\x81b", "z"]]
    path = tmp_path / "people.csv"
    write(path, rows[:-1], encoding="cp1252")
    with open(path, "ab") as f:
        f.write(b"bad,B\x81b,z\r\n")  # 0x81 is no cp1252 character
    cfg = job(tmp_path, "fields: [given, family]\ncsv: {encoding: cp1252}\n")
    er(["validate", cfg]).assert_clean_error(0)  # the header is fine; validate reads no further
    ran = er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    ran.assert_clean_error(2, f"people.csv:{len(rows)}", "not valid cp1252", "b'\\x81'", "csv: {encoding: utf-8}")


def test_a_mapped_column_the_file_lacks(er: Er, tmp_path: Path) -> None:
    write(tmp_path / "people.csv", ROWS)
    both(
        er,
        job(tmp_path, "fields: [first_name, last_name]\ncolumns: {first_name: givn, last_name: surname}\n"),
        "sources[0].columns.first_name: column 'givn' (field first_name, via columns:) is not in the file people.csv",
        "did you mean 'given'?",
        "sources[0].columns.last_name: column 'surname' (field last_name, via columns:)",
        "columns present: family, given, id",
    )


def test_a_mapping_onto_a_column_another_field_reads(er: Er, tmp_path: Path) -> None:
    # last_name reads 'given', which the field 'given' reads too: allowed, each field gets the column's values
    write(tmp_path / "people.csv", ROWS)
    cfg = job(tmp_path, "fields: [given, last_name]\ncolumns: {last_name: given}\n")
    er(["validate", cfg]).assert_clean_error(0)
    ran = er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    ran.assert_clean_error(0)
    clusters = (tmp_path / "out" / "clusters.csv").read_text()
    assert clusters.count("\n") == 7  # every record, the three copies of "Zoë" in one cluster
    # a mapping onto the id column, and a swap of two columns, are read as written too
    cfg = job(tmp_path, "fields: [given, family]\ncolumns: {given: family, family: given}\n")
    er(["run", cfg, "--out", tmp_path / "out2", "--quiet"]).assert_clean_error(0)
