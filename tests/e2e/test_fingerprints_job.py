"""The fingerprints job, CLI analysis and simulator, and CSV minutiae rows."""

from __future__ import annotations

import csv
import json
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

from er_framework.cli.main import main
from er_framework.config.resolve import parse_job
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_shipped_fingerprints_job_finds_every_finger(tmp_path: Path) -> None:
    res = run_job(parse_job(ROOT / "configs" / "fingerprints.yaml"), tmp_path)
    truth = {r["id"]: r["finger"] for r in read_csv(ROOT / "configs/data/fingerprints/truth.csv")}
    clusters = {r["id"]: r["cluster_id"] for r in read_csv(tmp_path / "clusters.csv")}
    assert set(clusters) == set(truth)
    fingers_of: dict[str, set[str]] = defaultdict(set)
    clusters_of: dict[str, set[str]] = defaultdict(set)
    for rid, c in clusters.items():
        fingers_of[c].add(truth[rid])
        clusters_of[truth[rid]].add(c)
    assert all(len(f) == 1 for f in fingers_of.values()), "two fingers merged"
    assert all(len(c) == 1 for c in clusters_of.values()), "a finger split"
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["shingler"]["type"] == "grid_cells" and rep["blockers"][0]["type"] == "grid_bits"
    assert res.report["verified_pairs"] == 150


def test_tune_fingerprints_prints_the_seed_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "fingerprints", "--occupancy", "0.2", "--agreement", "0.8", "--cells", "3", "--sets", "1024"]) == 0
    out = capsys.readouterr().out
    assert "P(candidate | same finger)      = 1 - (1 - (p q)^c)^M = 0.985" in out
    assert "P(candidate | different finger) = 1 - (1 - p^(2c))^M  = 0.063" in out
    assert "suggested: cells = " in out or "no (c, M) meets both targets" in out


def test_tune_fingerprints_rejects_bad_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "fingerprints", "--occupancy", "1.5", "--sets", "0"]) == 2
    err = capsys.readouterr().err
    assert "--occupancy" in err and "--sets" in err and "Traceback" not in err


@pytest.mark.parametrize("mode", ["cells", "geometric"])
def test_synth_fingerprints_writes_prints_and_truth(tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "fingerprints", "--fingers", "6", "--impressions", "3", "--mode", mode, "--out", str(tmp_path)]) == 0
    lines = [json.loads(x) for x in (tmp_path / "prints.jsonl").read_text().splitlines()]
    truth = read_csv(tmp_path / "truth.csv")
    assert len(lines) == len(truth) == 18
    assert {r["id"] for r in truth} == {x["id"] for x in lines}
    assert all(0 <= p[0] < 500 and 0 <= p[1] < 500 for x in lines for p in x["minutiae"])


def test_minutiae_as_csv_rows(tmp_path: Path) -> None:
    """CSV rows id,x,y (layout: long) give the same cells as the JSONL form."""
    rows = [("a", 10, 10), ("a", 260, 30), ("a", 480, 490), ("b", 10, 12), ("b", 262, 31), ("b", 481, 488), ("c", 100, 400)]
    (tmp_path / "m.csv").write_text("id,x,y\n" + "".join(f"{i},{x},{y}\n" for i, x, y in rows))
    (tmp_path / "job.yaml").write_text(
        textwrap.dedent("""
        sources: [{name: prints, path: m.csv, id: id, fields: [x, y], layout: long}]
        exact_duplicates: false
        shingler: {type: grid_cells, field: x, y_field: y, width: 500, height: 500, grid_x: 10, grid_y: 10}
        signature: {type: bitvector}
        blockers: [{type: grid_bits, sets: 64, cells: 1}]
        verifier: {type: cell_overlap, kind: jaccard, threshold: 0.9}
    """)
    )
    res = run_job(parse_job(tmp_path / "job.yaml"), tmp_path / "o")
    pairs = read_csv(tmp_path / "o" / "pairs.csv")
    assert [(p["left_id"], p["right_id"], p["score"]) for p in pairs] == [("a", "b", "1.0")]
    assert res.report["records"]["total"] == 3
