"""er report --truth (evaluate/threshold_truth.py): which candidates the truth says are true pairs."""

from __future__ import annotations

from er_framework.evaluate.threshold_truth import candidate_truth
from er_framework.evaluate.truth import Truth

COLS = {
    "left_source": ["A", "A", "A", "B"],
    "left_id": ["1", "2", "3", "9"],
    "right_source": ["B", "B", "B", "B"],
    "right_id": ["1", "3", "3", "8"],
}


def test_pairs_truth_by_id_either_order() -> None:
    truth = Truth(
        path="t.csv",
        kind="pairs",
        columns={},
        left_ids=["1", "3"],
        right_ids=["1", "3"],
        left_sources=[None, None],
        right_sources=[None, None],
    )
    assert candidate_truth(COLS, truth).tolist() == [True, False, True, False]
    flipped = Truth(path="t.csv", kind="pairs", columns={}, left_ids=["3"], right_ids=["2"], left_sources=["B"], right_sources=["A"])
    assert candidate_truth(COLS, flipped).tolist() == [False, True, False, False]  # by source and id, either order


def test_cluster_truth_pairs_within_a_cluster() -> None:
    truth = Truth(
        path="t.csv", kind="clusters", columns={}, ids=["1", "2", "3", "9", "8"], labels=["x", "x", "y", None, None], sources=[None] * 5
    )
    assert candidate_truth(COLS, truth).tolist() == [True, False, True, False]  # records without a cluster: singletons


def test_a_labels_file_is_recognized_and_read_over_the_labelled_pairs(tmp_path) -> None:
    import numpy as np

    from er_framework.evaluate.threshold_truth import is_labels_file, labelled_values

    labels = tmp_path / "labels.csv"
    labels.write_text("left_source,left_id,right_source,right_id,match\nB,1,A,1,1\nA,2,B,3,0\nA,7,B,7,1\nA,3,B,3,\n", encoding="utf-8")
    truth = tmp_path / "truth.csv"
    truth.write_text("a_id,b_id\n1,1\n", encoding="utf-8")
    assert is_labels_file(labels) and not is_labels_file(truth) and not is_labels_file(tmp_path / "absent.csv")
    values, match = labelled_values(COLS, np.array([5.0, -2.0, 1.0, 0.0]), labels)
    assert values.tolist() == [5.0, -2.0, -np.inf]  # either order; a pair no blocker produced is never kept; no label: skipped
    assert match.tolist() == [True, False, True]


def test_the_curve_of_a_run_whose_candidates_are_a_dataset_folder(tmp_path) -> None:
    from er_framework.evaluate.threshold_truth import truth_curve
    from tests.io.test_part_tables import ROOT, as_datasets, documents_run

    out = documents_run(tmp_path)
    truth = ROOT / "configs" / "data" / "docs_truth.csv"
    before = truth_curve(out, truth)
    as_datasets(out)
    after = truth_curve(out, truth)
    assert (out / "candidates").is_dir() and "of candidates (65)" in after.pop("over") and "of candidates.csv (65)" in before.pop("over")
    assert after == before
