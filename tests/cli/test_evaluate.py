"""``er evaluate`` (er_framework.cli.evaluate): the table, --json, evaluation.json, bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from er_framework.cli.evaluate import cmd_evaluate
from er_framework.cli.main import build_parser, main
from er_framework.io.output_write import write_outputs

# truth {a,b,c},{d,e},{f}; predicted {a,b},{c,d,e},{f}: ARI 7/22 (tests/evaluate/test_metrics.py)
TRUTH = {"a": "T1", "b": "T1", "c": "T1", "d": "T2", "e": "T2", "f": "T3"}
PRED = {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1, "f": 2}
VERIFIED = [("a", "b"), ("c", "d"), ("d", "e")]


def write_run(out: Path) -> Path:
    """An output folder as er run writes it: clusters, pairs and report.json of one source 's'."""
    tables = {
        "clusters": {"source": ["s"] * len(PRED), "id": list(PRED), "cluster_id": np.array(list(PRED.values()))},
        "pairs": {
            "left_source": ["s"] * len(VERIFIED),
            "left_id": [a for a, _ in VERIFIED],
            "right_source": ["s"] * len(VERIFIED),
            "right_id": [b for _, b in VERIFIED],
            "score": np.ones(len(VERIFIED)),
        },
    }
    report = {"mode": "dedup", "records": {"total": len(PRED), "per_source": {"s": len(PRED)}}, "candidate_pairs": 5}
    write_outputs(out, tables, {"report": report})
    return out


def cluster_truth(tmp: Path) -> Path:
    path = tmp / "truth.csv"
    path.write_text("id,cluster\n" + "".join(f"{i},{c}\n" for i, c in TRUTH.items()), encoding="utf-8")
    return path


def test_cmd_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = write_run(tmp_path / "o")
    truth = cluster_truth(tmp_path)
    args = argparse.Namespace(out_dir=str(out), truth=str(truth), id_column=None, cluster_column=None, json=True)
    assert cmd_evaluate(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["clusters"]["adjusted_rand_index"] == pytest.approx(7 / 22)
    assert json.loads((out / "evaluation.json").read_text()) == printed
    args.json = False
    args.cluster_column = "cluster"
    assert cmd_evaluate(args) == 0
    text = capsys.readouterr().out
    assert "B-cubed F1" in text and "evaluation.json" in text


def test_cli_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["evaluate", "x", "--truth", "t.csv", "--json"])
    assert args.truth == "t.csv" and args.json
    out = write_run(tmp_path / "o")
    assert main(["evaluate", str(out), "--truth", str(cluster_truth(tmp_path))]) == 0
    assert "adjusted Rand index" in capsys.readouterr().out
    assert main(["evaluate", str(out), "--truth", str(tmp_path / "missing.csv")]) == 2
    err = capsys.readouterr().err
    assert "missing.csv" in err and "Traceback" not in err
