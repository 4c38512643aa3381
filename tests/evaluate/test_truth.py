"""Truth files (er_framework.evaluate.truth): the shapes (pairs, clusters), the columns found or named, ids, and
the messages about a truth file that cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evaluate_runs import PRED, ROOT, TRUTH, VERIFIED, cluster_truth, write_run, write_text

from er_framework.errors import InputError
from er_framework.evaluate.metrics import evaluate
from er_framework.evaluate.truth import load_truth

# --------------------------------------------------------------------------
# truth shapes
# --------------------------------------------------------------------------


def test_pairs_truth_gives_the_same_cluster_metrics(tmp_path: Path) -> None:
    """Pairs ab, bc, de close to {a,b,c},{d,e},{f}: cluster metrics as for the cluster truth.

    Pairwise metrics use the listed pairs only (3 true pairs, not the 4 of the closure):
    verified ab, cd, de -> TP ab, de: P 2/3, R 2/3; cluster pairs ab, cd, ce, de -> TP ab, de: P 1/2, R 2/3.
    """
    out = write_run(tmp_path / "o", PRED, VERIFIED)
    by_clusters = evaluate(out, load_truth(cluster_truth(tmp_path)))
    pairs_file = write_text(tmp_path / "pairs_truth.csv", "left_id,right_id\na,b\nc,b\nd,e\nb,a\n")
    truth = load_truth(pairs_file)
    assert truth.kind == "pairs"
    by_pairs = evaluate(out, truth)
    for key in ("bcubed_precision", "bcubed_recall", "bcubed_f1", "adjusted_rand_index"):
        assert by_pairs["clusters"][key] == pytest.approx(by_clusters["clusters"][key])
    assert by_pairs["truth"]["true_pairs"] == 3
    vp = by_pairs["pairwise"]["verified_pairs"]
    assert (vp["true_positives"], vp["precision"], vp["recall"]) == (2, pytest.approx(2 / 3), pytest.approx(2 / 3))
    cp = by_pairs["pairwise"]["cluster_pairs"]
    assert (cp["true_positives"], cp["precision"], cp["recall"]) == (2, pytest.approx(0.5), pytest.approx(2 / 3))
    notes = " ".join(by_pairs["notes"])
    assert "connected components" in notes and "more than once" in notes
    # f is in no truth pair: a truth singleton, reported as such
    assert by_pairs["records"]["output_only"] == {"count": 1, "examples": ["s/f"]}


def test_column_detection_and_explicit_columns(tmp_path: Path) -> None:
    out = write_run(tmp_path / "o", PRED, VERIFIED)
    rows = "".join(f"{i},{c},x\n" for i, c in TRUTH.items())
    f = write_text(tmp_path / "t.csv", "record_id,entity_id,site\n" + rows)
    t = load_truth(f)
    assert t.columns == {"id": "record_id", "cluster": "entity_id"}
    f2 = write_text(tmp_path / "t2.csv", "key_,grp,site\n" + rows)
    t2 = load_truth(f2, id_column="key_", cluster_column="grp")
    assert evaluate(out, t2)["clusters"]["adjusted_rand_index"] == pytest.approx(7 / 22)
    f3 = write_text(tmp_path / "t3.csv", "a_col,b_col\na,b\nd,e\n")
    t3 = load_truth(f3, left="a_col", right="b_col")
    assert t3.kind == "pairs" and evaluate(out, t3)["truth"]["true_pairs"] == 2
    # id1/id2 and the fingerprint / news truths
    assert load_truth(write_text(tmp_path / "t4.csv", "id1,id2\na,b\n")).columns == {"left_id": "id1", "right_id": "id2"}
    assert load_truth(ROOT / "configs/data/fingerprints/truth.csv").columns == {"id": "id", "cluster": "finger"}
    assert load_truth(ROOT / "configs/data/news/truth.csv").columns == {"id": "id", "cluster": "story"}


def test_jsonl_truth_with_integer_ids_and_parquet_outputs(tmp_path: Path) -> None:
    ids = {"1": 0, "2": 0, "3": 1, "4": 1, "5": 1, "6": 2}
    out = write_run(tmp_path / "o", ids, [("1", "2"), ("3", "4"), ("4", "5")], fmt="parquet")
    truth = tmp_path / "t.jsonl"
    truth.write_text("".join(json.dumps({"id": int(i), "entity": c}) + "\n" for i, c in zip(ids, ["x", "x", "x", "y", "y", None])))
    m = evaluate(out, load_truth(truth))
    assert m["clusters"]["adjusted_rand_index"] == pytest.approx(7 / 22)
    assert m["clusters"]["bcubed_f1"] == pytest.approx(7 / 9)
    assert any("no value in column 'entity'" in n for n in m["notes"])  # record 6: a singleton


# --------------------------------------------------------------------------
# the truth file (read by er_framework.io.table_file)
# --------------------------------------------------------------------------


def test_truth_formats_tsv_gzip_and_parquet(tmp_path: Path) -> None:
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = "".join(f"{i}\t{c}\n" for i, c in TRUTH.items())
    tsv = write_text(tmp_path / "t.tsv", "id\tcluster\n" + rows)
    with gzip.open(tmp_path / "t.csv.gz", "wt", encoding="utf-8") as f:
        f.write("id,cluster\n" + rows.replace("\t", ","))
    pq.write_table(pa.table({"id": list(TRUTH), "cluster": list(TRUTH.values())}), tmp_path / "t.parquet")
    for path in (tsv, tmp_path / "t.csv.gz", tmp_path / "t.parquet"):
        t = load_truth(path)
        assert (t.kind, t.ids, t.labels) == ("clusters", list(TRUTH), list(TRUTH.values())), path


def test_truth_file_problems_name_the_file_and_line(tmp_path: Path) -> None:
    bad_row = write_text(tmp_path / "rows.csv", "id,cluster\na,1\nb,1,extra\nc\n")
    with pytest.raises(InputError) as e:
        load_truth(bad_row)
    text = str(e.value)
    assert f"{bad_row}:3" in text and "has 3 cells but the header has 2 columns" in text
    assert f"{bad_row}:4" in text and "row 4 has 1 cell but the header has 2 columns" in text
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,cluster\na,Gen\xe8ve\n".encode("latin-1"))
    with pytest.raises(InputError) as e:
        load_truth(latin)
    [problem] = e.value.problems
    assert problem.where == f"{latin}:2" and "not valid UTF-8" in problem.message and "(truth file)" in problem.message
    assert "iconv" in problem.fix
    jsonl = write_text(tmp_path / "t.jsonl", '{"id": "a", "cluster": 1}\n{"id": "b", "cluster": 1\n')
    with pytest.raises(InputError, match=r"t\.jsonl:2: line 2 is not valid JSON"):
        load_truth(jsonl)
    (tmp_path / "folder.csv").mkdir()
    with pytest.raises(InputError) as e:
        load_truth(tmp_path / "folder.csv")
    assert "is a directory, expected a truth file" in str(e.value) and "--truth" in str(e.value)
    with pytest.raises(InputError, match="header row or no JSON object"):
        load_truth(write_text(tmp_path / "blank.jsonl", "\n\n"))
