"""Setting and restoring pairs' labels in a labels file (er review --serve's changes and its undo)."""

from __future__ import annotations

import random
from pathlib import Path

from er_framework.io.label_rows import Previous, pair_key, restore_label_rows, set_label_rows, widen_header
from er_framework.io.labels_file import LABELS_HEADER, LabelsFile, read_labels_file, update_labels_file


def row(ls: str, li: str, rs: str, ri: str, match: str, **extra: str) -> dict[str, str]:
    return {"left_source": ls, "left_id": li, "right_source": rs, "right_id": ri, "match": match, **extra}


def reversed_row(c: dict[str, str]) -> dict[str, str]:
    return row(c["right_source"], c["right_id"], c["left_source"], c["left_id"], c["match"])


def test_a_new_pair_gets_a_row_and_undo_removes_it() -> None:
    labels = LabelsFile()
    before = set_label_rows(labels, [row("A", "1", "B", "2", "1", score="0.9", side="above")])
    assert labels.records() == [row("A", "1", "B", "2", "1", score="0.9", side="above")]
    assert before == [Previous(("A", "1", "B", "2"), ())]
    restore_label_rows(labels, before)
    assert labels.rows == []


def test_an_existing_row_is_set_in_either_orientation_and_undo_blanks_it() -> None:
    header = ["right_id", "match", "left_source", "left_id", "right_source", "note"]
    labels = LabelsFile(header=list(header), rows=[["1", "", "B", "2", "A", "mine"]])
    before = set_label_rows(labels, [row("A", "1", "B", "2", "0")])
    assert labels.header[:6] == ["right_id", "match", "left_source", "left_id", "right_source", "note"]
    assert set(LABELS_HEADER) <= set(labels.header)  # score and side added, as er review does
    assert len(labels.rows) == 1
    rec = labels.records()[0]
    assert (rec["match"], rec["note"], rec["left_source"]) == ("0", "mine", "B")  # the user's column and orientation kept
    restore_label_rows(labels, before)
    assert labels.records()[0]["match"] == ""
    assert labels.records()[0]["note"] == "mine"


def test_a_pair_with_two_rows_has_both_set_and_restored() -> None:
    labels = LabelsFile()
    widen_header(labels)
    labels.rows = [["A", "1", "B", "2", "", "", "1"], ["B", "2", "A", "1", "", "", "yes"]]
    before = set_label_rows(labels, [row("A", "1", "B", "2", "0")])
    assert [r["match"] for r in labels.records()] == ["0", "0"]  # never a pair both a match and a non-match
    restore_label_rows(labels, before)
    assert [r["match"] for r in labels.records()] == ["1", "yes"]


def test_a_pair_changed_twice_in_one_change_ends_as_before() -> None:
    labels = LabelsFile()
    before = set_label_rows(labels, [row("A", "1", "B", "2", "1"), row("B", "2", "A", "1", "0")])
    assert [r["match"] for r in labels.records()] == ["0"]
    restore_label_rows(labels, before)
    assert labels.rows == []


def test_restore_is_the_inverse_of_set_against_a_naive_reference() -> None:
    """Random files and changes: after set + restore the rows are those before (the naive reference: a copy)."""
    rnd = random.Random(7)
    for _ in range(200):
        labels = LabelsFile()
        widen_header(labels)
        for _ in range(rnd.randrange(0, 8)):
            a, b = str(rnd.randrange(5)), str(rnd.randrange(5))
            labels.rows.append(["A", a, "B", b, "", "", rnd.choice(["", "1", "0", "no"])])
        copy = [list(r) for r in labels.rows]
        changes = [row("A", str(rnd.randrange(5)), "B", str(rnd.randrange(5)), rnd.choice("10")) for _ in range(rnd.randrange(1, 6))]
        flip = [rnd.random() < 0.5 for _ in changes]
        changes = [reversed_row(c) if f else c for c, f in zip(changes, flip)]
        before = set_label_rows(labels, changes)
        # every pair changed holds the last match given for it, on all its rows
        last = {}
        for c in changes:
            k = pair_key(c)
            last[k] = last[(k[2], k[3], k[0], k[1])] = c["match"]
        for r in labels.records():
            if pair_key(r) in last:
                assert r["match"] == last[pair_key(r)]
        restore_label_rows(labels, before)
        assert labels.rows == copy


def test_through_the_one_writer(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("left_source;left_id;right_source;right_id;match\r\nA;=1;B;2;\r\n", encoding="utf-8-sig")
    before: list[Previous] = []

    def change(labels: LabelsFile) -> LabelsFile:
        before.extend(set_label_rows(labels, [row("A", "=1", "B", "2", "1")]))
        return labels

    update_labels_file(path, change)
    got = read_labels_file(path, fix="-")
    assert got.separator == ";" and got.bom and got.newline == "\r\n"  # the spreadsheet's dialect kept
    assert got.records()[0]["match"] == "1" and got.records()[0]["left_id"] == "=1"
    update_labels_file(path, lambda labels: (restore_label_rows(labels, before), labels)[1])
    assert read_labels_file(path, fix="-").records()[0]["match"] == ""
