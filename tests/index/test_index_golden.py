"""Golden records in an index: built with the index, updated for the clusters an add or a remove touches,
equal to the golden records made from scratch of the index's clusters, exposed by Index.golden() and
``er index golden``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from er_framework.cli.main import main
from er_framework.config.resolve import parse_job
from er_framework.data import Records
from er_framework.engine.stages.golden import golden_plan, golden_table
from er_framework.errors import ErError
from er_framework.index.build import build_index, open_index
from er_framework.index.store import Index

JOB = """\
name: people
mode: dedup
seed: 1
sources:
  - {{name: crm, path: {data}, id: id, fields: [name, email, city, updated]}}
normalize: {{email: email, name: name}}
exact_duplicates: false
blockers:
  - {{type: field_hash, fields: [email]}}
verifier:
  type: field_score
  threshold: 90
  fields:
    - {{field: email, scorer: ratio}}
cluster: {{type: connected_components}}
{golden}
"""
GOLDEN = "output: {golden: {rule: most_frequent, fields: {city: {rule: most_recent, by: updated}, name: longest}}}"

ROWS = [
    {"id": "1", "name": "Ann Lee", "email": "ann@x.org", "city": "Leeds", "updated": "2020-01-01"},
    {"id": "2", "name": "Ann", "email": "ANN@x.org", "city": "York", "updated": "2021-06-01"},
    {"id": "3", "name": "Bob Stone", "email": "bob@y.org", "city": "Hull", "updated": "2019-01-01"},
    {"id": "4", "name": "Carla", "email": "carla@z.org", "city": "", "updated": ""},
]


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["id", "name", "email", "city", "updated"])
        w.writeheader()
        w.writerows(rows)
    return path


def _index(tmp: Path, golden: str = GOLDEN) -> Index:
    data = _write(tmp / "crm.csv", ROWS)
    cfg = tmp / "job.yaml"
    cfg.write_text(JOB.format(data=data, golden=golden))
    index, _ = build_index(parse_job(cfg), tmp / "people.erx")
    return index


def _by_member(table: dict[str, list], field: str) -> dict[str, str | None]:
    return {rid: v for v, rid in zip(table[field], table[f"{field}_id"]) if rid}


def _records(rows: list[dict[str, str]]) -> Records:
    return Records.from_columns(
        [r["id"] for r in rows], {k: [r[k] or None for r in rows] for k in ("name", "email", "city", "updated")}, "crm"
    )


def _from_scratch(index: Index, rows: list[dict[str, str]]) -> dict[str, list]:
    """The golden records of the index's clusters made again from every record as read."""
    clusters = index.clusters()
    labels = np.asarray([clusters[("crm", r["id"])] for r in rows], dtype=np.int64)
    table = golden_table(_records(rows), labels, golden_plan(index.job))
    return {k: np.asarray(v).tolist() for k, v in table.items()}


def test_golden_records_follow_adds_and_removes(tmp_path: Path) -> None:
    index = _index(tmp_path)
    g = index.golden()
    assert g["cluster_id"] == sorted(set(index.clusters().values()))
    assert g == _from_scratch(index, ROWS)
    ann = g["cluster_id"].index(index.clusters()[("crm", "1")])
    assert g["city"][ann] == "York" and g["city_id"][ann] == "2"  # the latest update
    assert g["name"][ann] == "Ann Lee"
    # a newer record joins Ann's cluster: her city changes, and only her cluster is made again
    new = {"id": "5", "name": "Ann Marie Lee", "email": "ann@x.org", "city": "Bath", "updated": "2024-03-01"}
    stats = index.add(_records([new]))
    assert stats["golden_updated"] == 1
    g = index.golden()
    ann = g["cluster_id"].index(index.clusters()[("crm", "5")])
    assert (g["city"][ann], g["city_source"][ann], g["city_id"][ann]) == ("Bath", "crm", "5")
    assert g["name"][ann] == "Ann Marie Lee" and g["size"][ann] == 3
    assert g == _from_scratch(index, [*ROWS, new])
    # a record of a new person: a golden record of its own; Carla's (no city anywhere) stays empty
    dan = {"id": "6", "name": "Dan", "email": "dan@q.org", "city": "Ely", "updated": "x"}
    index.add(_records([dan]))
    g = index.golden()
    assert g == _from_scratch(index, [*ROWS, new, dan])
    carla = g["cluster_id"].index(index.clusters()[("crm", "4")])
    assert (g["city"][carla], g["city_source"][carla], g["city_id"][carla]) == (None, "", "")
    # removing the newest record gives Ann her city back; removing Bob retires his golden record
    index.remove(["5"])
    index.remove(["3"])
    rows = [r for r in [*ROWS, new, dan] if r["id"] not in ("3", "5")]
    g = index.golden()
    assert g == _from_scratch(index, rows)
    ann = g["cluster_id"].index(index.clusters()[("crm", "1")])
    assert g["city"][ann] == "York" and len(g["cluster_id"]) == 3
    index.refit()
    assert index.golden() == _from_scratch(index, rows)
    index.close()


def test_the_golden_command_writes_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _index(tmp_path).close()
    out = tmp_path / "golden.csv"
    assert main(["index", "golden", str(tmp_path / "people.erx"), "--out", str(out)]) == 0
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with open_index(tmp_path / "people.erx", readonly=True) as index:
        g = index.golden()
    assert [r["cluster_id"] for r in rows] == [str(c) for c in g["cluster_id"]]
    assert [r["city"] for r in rows] == [c or "" for c in g["city"]]
    capsys.readouterr()
    assert main(["index", "golden", str(tmp_path / "people.erx"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == g


def test_an_index_without_golden_records_says_how_to_get_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = _index(tmp_path, golden="")
    with pytest.raises(ErError, match="no output.golden"):
        index.golden()
    index.close()
    assert main(["index", "golden", str(tmp_path / "people.erx")]) == 2
    err = capsys.readouterr().err
    assert "no output.golden" in err and "Traceback" not in err


def test_the_golden_command_shows_control_characters_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A value holding ESC reaches the terminal escaped (``\\x1b``), as every value er prints; ``--out`` keeps
    the value exactly."""
    rows = [*ROWS[:3], {**ROWS[3], "city": "Red\x1b[31mCity"}]
    data = _write(tmp_path / "crm.csv", rows)
    cfg = tmp_path / "job.yaml"
    cfg.write_text(JOB.format(data=data, golden=GOLDEN))
    build_index(parse_job(cfg), tmp_path / "people.erx")[0].close()
    capsys.readouterr()
    assert main(["index", "golden", str(tmp_path / "people.erx")]) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "Red\\x1b[31mCity" in shown
    assert main(["index", "golden", str(tmp_path / "people.erx"), "--out", str(tmp_path / "g.csv"), "-q"]) == 0
    assert "Red\x1b[31mCity" in (tmp_path / "g.csv").read_text(encoding="utf-8")
