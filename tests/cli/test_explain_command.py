"""``er explain OUT --left ID --right ID``: the waterfall of one pair of a finished run."""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from er_framework.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def febrl4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("explain") / "febrl4"
    assert main(["run", str(ROOT / "configs" / "febrl4.yaml"), "--out", str(out), "--quiet"]) == 0
    return out


def pair_scores(out: Path) -> dict[tuple[str, str], float]:
    with (out / "pairs.csv").open(encoding="utf-8") as fh:
        return {(r["left_id"], r["right_id"]): float(r["score"]) for r in csv.DictReader(fh)}


def test_weights_sum_to_the_pairs_score(febrl4: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = pair_scores(febrl4)
    # a pair of pairs.csv whose score is not saturated, so that the sum is really checked
    (left, right), score = min(scores.items(), key=lambda kv: kv[1])
    assert main(["explain", str(febrl4), "--left", left, "--right", right, "--json"]) == 0
    ex = json.loads(capsys.readouterr().out)
    total = ex["prior_weight"] + sum(f["weight"] for f in ex["fields"])
    assert total == pytest.approx(ex["match_weight"], abs=1e-9)
    assert 1 / (1 + 2**-total) == pytest.approx(score, rel=1e-9)
    assert ex["score"] == pytest.approx(score, rel=1e-9)
    assert len(ex["fields"]) == 10 and all(f["level"] for f in ex["fields"])


def test_the_printed_waterfall(febrl4: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(febrl4), "--left", "rec-1070-org", "--right", "rec-1070-dup-0"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("A rec-1070-org  vs  B rec-1070-dup-0")
    assert re.search(r"prior\s+[-+]\d+\.\d\d bits", text)
    assert re.search(r"soc_sec_id\s+5304218\s+5304218\s+=100\s+\+\d+\.\d\d bits", text)
    assert "-> probability" in text and "threshold 0.5" in text


def test_a_document_pair_shows_shared_and_differing_shingles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "docs"
    assert main(["run", str(ROOT / "configs" / "documents.yaml"), "--out", str(out), "--quiet"]) == 0
    with (out / "pairs.csv").open(encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if float(r["score"]) < 1.0)
    assert main(["explain", str(out), "--left", row["left_id"], "--right", row["right_id"]]) == 0
    text = capsys.readouterr().out
    m = re.search(r"Jaccard = shared / union = ([\d,]+) / ([\d,]+) = ([\d.]+)", text)
    assert m and float(m.group(3)) == pytest.approx(float(row["score"]), abs=1e-6)
    assert int(m.group(1).replace(",", "")) / int(m.group(2).replace(",", "")) == pytest.approx(float(row["score"]))


def test_unknown_ids_and_folders_are_clear_errors(febrl4: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(febrl4), "--left", "nobody", "--right", "rec-1070-dup-0"]) == 2
    assert "no record 'nobody'" in capsys.readouterr().err
    assert main(["explain", str(tmp_path), "--left", "a", "--right", "b"]) == 2
    assert "no report.json" in capsys.readouterr().err


#: two records of one person (same names) that differ in every blocking key: phone and email (field_hash)
#: and the city they sort by (sorted_neighbourhood, window 2, three other records between them)
NO_CANDIDATE_JOB = """
mode: dedup
sources: [{name: p, path: p.csv, id: id, fields: [first_name, last_name, phone, email, city]}]
exact_duplicates: false
blockers:
  - {type: field_hash, fields: [phone, email]}
  - {type: sorted_neighbourhood, key: [city], window: 2}
verifier: {type: field_score, threshold: 150, fields: [{field: first_name, scorer: ratio}, {field: last_name, scorer: ratio}]}
cluster: {type: connected_components}
"""
NO_CANDIDATE_ROWS = """id,first_name,last_name,phone,email,city
x,maria,lopez,555-0001,maria@a.org,aberdeen
y,maria,lopez,555-0002,mlopez@b.org,zurich
c1,john,smith,555-0003,john@c.org,bristol
c2,jane,doe,555-0003,jane@c.org,cardiff
c3,paul,kim,555-0004,jane@c.org,dover
"""


def test_a_pair_no_blocker_produced_is_not_a_candidate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.csv").write_text(NO_CANDIDATE_ROWS)
    (tmp_path / "job.yaml").write_text(NO_CANDIDATE_JOB)
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "job.yaml"), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["explain", str(out), "--left", "x", "--right", "y"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[1] == "  not a candidate: no blocker produced this pair, so the run never scored it (verified: False)"
    assert "  blockers[0] field_hash: did not pair them" in lines
    assert "    phone: not shared  ('555-0001' vs '555-0002')" in lines
    assert "    email: not shared  ('maria@a.org' vs 'mlopez@b.org')" in lines
    assert "  blockers[1] sorted_neighbourhood: did not pair them" in lines
    assert any(line.startswith("    city: not in one window  ('aberdeen' vs 'zurich')  4 records apart") for line in lines)
    # the names are equal: the verifier would keep the pair, but the run never scored it
    assert "score 200.000000  would be at or above the threshold 150, but the pair is not a candidate" in text
    assert "  at or above the threshold" not in text and lines[-1] == "  verified: False"
    assert main(["explain", str(out), "--left", "x", "--right", "y", "--json"]) == 0
    ex = json.loads(capsys.readouterr().out)
    assert ex["candidate"] is False and ex["verified"] is False and ex["score"] == 200.0
    assert [b["candidate"] for b in ex["blocking"]] == [False, False]
    # a pair a blocker did produce (the shared phone) is a candidate, scored by the run
    assert main(["explain", str(out), "--left", "c1", "--right", "c2", "--json"]) == 0
    ex = json.loads(capsys.readouterr().out)
    assert ex["candidate"] is True and ex["blocking"][0]["candidate"] is True
    assert ex["blocking"][0]["keys"][0] == {
        "key": "phone",
        "left": "555-0003",
        "right": "555-0003",
        "shared": True,
        "note": "",
        "kind": "key",
    }


# ------------------------------------------------------------------ a database source changed since the run

CUSTOMERS = [("c1", "ann", "111"), ("c2", "anne", "111"), ("c3", "bob", "222"), ("c4", "bobby", "222"), ("c5", "carl", "333")]


def _er(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "er_framework", *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_explain_and_review_refuse_a_database_source_updated_since_the_run(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    table = "customers" if kind == "sqlite" else f"customers_{uuid.uuid4().hex[:10]}"
    if kind == "sqlite":
        url = "sqlite:///crm.db"

        def execute(sql: str, rows: list[tuple[str, ...]] | None = None) -> None:
            with sqlite3.connect(tmp_path / "crm.db") as conn:
                conn.executemany(sql, rows) if rows else conn.execute(sql)
            conn.close()

    else:
        url = str(request.getfixturevalue("postgres_url"))

        def execute(sql: str, rows: list[tuple[str, ...]] | None = None) -> None:
            with psycopg.connect(url) as conn:
                sql = sql.replace("?", "%s")
                conn.cursor().executemany(sql, rows) if rows else conn.execute(sql)

        request.addfinalizer(lambda: execute(f"DROP TABLE IF EXISTS {table}"))
    execute(f"CREATE TABLE {table} (cid text, name text, zip text)")
    execute(f"INSERT INTO {table} VALUES (?, ?, ?)", CUSTOMERS)
    (tmp_path / "job.yaml").write_text(
        f"""\
mode: dedup
sources:
  - {{name: crm, database: {json.dumps(url)}, table: {table}, id: cid, fields: [name, zip]}}
blockers: [{{type: field_hash, fields: [zip]}}]
verifier: {{type: field_score, threshold: 50, fields: [{{field: name, scorer: jaro_winkler, weight: 1}}]}}
""",
        encoding="utf-8",
    )
    assert _er(["run", "job.yaml", "--out", "out", "-q"], tmp_path).returncode == 0
    explain = ["explain", "out", "--left", "c1", "--right", "c2"]
    review = ["review", "out", "--labels", "labels.csv"]
    unchanged = _er(explain, tmp_path)
    assert unchanged.returncode == 0 and "changed" not in unchanged.stderr and "ann" in unchanged.stdout
    assert _er(review, tmp_path).returncode == 0
    execute(f"UPDATE {table} SET name = 'zed' WHERE cid = 'c1'")
    where = f"source 'crm' ({url}, table '{table}')"
    for args in (explain, review):
        refused = _er(args, tmp_path)
        assert refused.returncode == 2, refused.stderr
        assert f"{where}: the input changed since the run: the values of its rows differ" in refused.stderr
        assert "--allow-changed" in refused.stderr and "zed" not in refused.stderr + refused.stdout
    allowed = _er([*explain, "--allow-changed"], tmp_path)
    assert allowed.returncode == 0 and "zed" in allowed.stdout
    assert f"note: {where} changed since the run" in allowed.stderr
    execute(f"UPDATE {table} SET name = 'ann' WHERE cid = 'c1'")  # the rows the run read again: unchanged
    again = _er(explain, tmp_path)
    assert again.returncode == 0 and "changed" not in again.stderr
