"""``er synth`` (er_framework.cli.synth): customers and fingerprints with truth, bad options."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from er_framework.cli.main import main


def test_synth_customers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "customers", "--n", "20", "--overlap", "0.5", "--out", str(tmp_path)]) == 0
    assert "a.csv (20 records)" in capsys.readouterr().out
    for name in ("a.csv", "b.csv"):
        with open(tmp_path / name, newline="", encoding="utf-8") as f:
            assert len(list(csv.DictReader(f))) == 20
    with open(tmp_path / "truth.csv", newline="", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == 10


def test_synth_customers_three_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "customers", "--n", "30", "--sources", "3", "--seed", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "c.csv (30 records)" in out and "truth.csv" in out
    with open(tmp_path / "truth.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and set(rows[0]) == {"left_id", "right_id"}
    assert {(r["left_id"][0], r["right_id"][0]) for r in rows} == {("A", "B"), ("A", "C"), ("B", "C")}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--sources", "1"], "--sources: must be from 2 to 26, got 1"),
        (["--sources", "27"], "--sources: must be from 2 to 26, got 27"),
        (["--n", "5000000", "--sources", "3"], "--n: must be from 1 to 3,333,333"),
    ],
)
def test_synth_customers_bad_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    base = ["synth", "customers", "--n", "20", "--out", str(tmp_path / "o")]
    assert main(base + argv) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_synth_customers_bad_overlap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "customers", "--n", "20", "--overlap", "2", "--out", str(tmp_path)]) == 2
    assert "er synth customers" in capsys.readouterr().err


def test_synth_fingerprints_bad_options_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["synth", "fingerprints", "--fingers", "0", "--grid", "20by20", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "er synth fingerprints --fingers: must be from 1" in err and "'20by20' is not COLSxROWS" in err
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- absurd sizes (issue 18, case 18)


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["customers", "--n", "1e12"], ["--n: must be from 1 to 5,000,000, got 1,000,000,000,000", "in memory"]),
        (["customers", "--n", "5000001"], ["--n: must be from 1 to 5,000,000", "11 GB"]),
        (["customers", "--n", "0"], ["--n: must be from 1"]),
        (["customers", "--n", "10", "--seed", "-1"], ["--seed: must be from 0"]),
        (["customers", "--n", "10", "--overlap", "nan"], ["--overlap: must be a finite number in [0, 1], got nan"]),
        (["fingerprints", "--fingers", "1e12"], ["--fingers: must be from 1 to 1,000,000", "6.5 GB"]),
        (["fingerprints", "--fingers", "600000"], ["1,200,000 prints is more than the maximum 1,000,000"]),
        (["fingerprints", "--fingers", "10", "--impressions", "1e9"], ["--impressions: must be from 1 to 1,000"]),
        (["fingerprints", "--fingers", "10", "--mode", "cells", "--grid", "1000x1000"], ["1,000,000 cells, more than 65,536"]),
        (
            ["fingerprints", "--fingers", "10", "--mode", "cells", "--occupancy", "2", "--agreement", "0", "--seed", "-3"],
            [
                "--occupancy: must be a finite number in [0, 1], got 2.0",
                "--agreement: must be a finite number in (0, 1]",
                "--seed: must be from 0",
            ],
        ),
        (
            ["fingerprints", "--fingers", "10", "--width", "inf", "--height", "-1", "--sigma", "-1"],
            ["--width: must be a finite number", "--height: must be a finite number", "--sigma: must be a finite number"],
        ),
    ],
)
def test_absurd_sizes_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needles: list[str]
) -> None:
    assert main(["synth", *argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text", ["2.5", "1e400", "nan", "ten"])
def test_a_count_is_a_whole_number(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["synth", "customers", "--n", text, "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert f"expected a whole number, got {text!r}" in capsys.readouterr().err


def test_counts_in_float_notation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "fingerprints", "--fingers", "1e1", "--impressions", "2.0", "--out", str(tmp_path)]) == 0
    assert "20 prints of 10 fingers" in capsys.readouterr().out


# ---------------------------------------------------------------- er synth news (issue 17)


def test_synth_news_folder_is_read_by_a_news_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    out = tmp_path / "corpus"
    assert main(["synth", "news", "--pages", "40", "--families", "heldout", "--seed", "5", "--out", str(out)]) == 0
    assert "wrote 40 pages of" in capsys.readouterr().out
    with open(out / "truth.csv", newline="", encoding="utf-8") as f:
        truth = list(csv.DictReader(f))
    assert sorted(r["id"] for r in truth) == sorted(p.relative_to(out / "pages").as_posix()[:-5] for p in (out / "pages").rglob("*.html"))
    assert {r["family"] for r in truth} <= {"magazine", "wiremirror", "localblog", "aggregator"}
    # the shipped news job with only the folder changed
    job = yaml.safe_load((Path(__file__).resolve().parents[2] / "configs" / "news.yaml").read_text(encoding="utf-8"))
    job["sources"][0]["path"] = "corpus/pages"
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job), encoding="utf-8")
    assert main(["run", str(tmp_path / "job.yaml"), "--out", str(tmp_path / "out")]) == 0
    with open(tmp_path / "out" / "clusters.csv", newline="", encoding="utf-8") as f:
        clustered = {r["id"] for r in csv.DictReader(f)}
    assert clustered == {r["id"] for r in truth}
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "out"), "--truth", str(out / "truth.csv")]) == 0
    assert "B-cubed" in capsys.readouterr().out


def test_synth_news_refuses_an_earlier_corpus_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c"
    assert main(["synth", "news", "--pages", "30", "--seed", "1", "--out", str(out)]) == 0
    (out / "pages" / "notes.txt").write_text("mine", encoding="utf-8")
    first = sorted(p.name for p in (out / "pages").rglob("*.html"))
    assert main(["synth", "news", "--pages", "30", "--seed", "2", "--out", str(out)]) == 2
    assert "already holds pages" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "pages").rglob("*.html")) == first
    assert main(["synth", "news", "--pages", "30", "--seed", "2", "--out", str(out), "--force"]) == 0
    with open(out / "truth.csv", newline="", encoding="utf-8") as f:
        ids = sorted(r["id"] for r in csv.DictReader(f))
    assert sorted(p.relative_to(out / "pages").as_posix()[:-5] for p in (out / "pages").rglob("*.html")) == ids
    assert (out / "pages" / "notes.txt").read_text(encoding="utf-8") == "mine"  # not ours: left alone


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--pages", "1e9"], ["--pages: must be from 1 to 50,000", "1.5 GB"]),
        (["--pages", "10", "--families", "tune,bogus"], ["unknown template family 'bogus'"]),
        (
            ["--pages", "10", "--chrome-scale", "0", "--seed", "-1"],
            ["--chrome-scale: must be a finite number in (0, 4]", "--seed: must be from 0"],
        ),
    ],
)
def test_synth_news_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needles: list[str]) -> None:
    assert main(["synth", "news", *argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- er synth persons (issue 29)


def test_synth_persons_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p"
    assert main(["synth", "persons", "--n", "300", "--duplicates", "40", "--triples", "5", "--seed", "3", "--out", str(out)]) == 0
    assert "persons.csv (300 records, 45 duplicate pairs)" in capsys.readouterr().out
    with open(out / "persons.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with open(out / "truth.csv", newline="", encoding="utf-8") as f:
        truth = list(csv.DictReader(f))
    assert len(rows) == 300 and list(truth[0]) == ["id", "entity"]
    assert sorted(r["id"] for r in rows) == sorted(t["id"] for t in truth)
    groups: dict[str, int] = {}
    for t in truth:
        groups[t["entity"]] = groups.get(t["entity"], 0) + 1
    assert sum(k * (k - 1) // 2 for k in groups.values()) == 45
    assert any(r["birth_year"].endswith(".0") for r in rows)  # CSV: 20% float rows by default
    first = (out / "persons.csv").read_bytes()
    assert main(["synth", "persons", "--n", "300", "--duplicates", "40", "--triples", "5", "--seed", "3", "--out", str(out)]) == 0
    assert (out / "persons.csv").read_bytes() == first  # deterministic for a seed


def test_synth_persons_parquet_without_floats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    assert main(["synth", "persons", "--n", "100", "--duplicates", "10", "--format", "parquet", "--out", str(tmp_path)]) == 0
    table = pq.read_table(tmp_path / "persons.parquet")
    assert table.num_rows == 100 and str(table.schema.field("birth_year").type) == "int64"
    assert str(table.schema.field("previous_cities").type).startswith("list<")
    assert main(["synth", "persons", "--n", "100", "--duplicates", "10", "--float-dates", "0", "--out", str(tmp_path / "c")]) == 0
    with open(tmp_path / "c" / "persons.csv", newline="", encoding="utf-8") as f:
        assert not any(r["birth_year"].endswith(".0") for r in csv.DictReader(f))


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--n", "1e12"], ["er synth persons --n: must be from 2 to 2,000,000, got 1,000,000,000,000", "in memory"]),
        (["--n", "1"], ["--n: must be from 2"]),
        (["--n", "100", "--duplicates", "100"], ["--duplicates: must be from 0 to 99, got 100", "fewer duplicates than --n"]),
        (["--n", "100", "--duplicates", "10", "--triples", "6"], ["--triples: must be from 0 to 5, got 6"]),
        (
            ["--n", "100", "--seed", "-1", "--float-dates", "1.5"],
            ["--seed: must be from 0", "--float-dates: must be a finite number in [0, 1]"],
        ),
    ],
)
def test_synth_persons_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needles: list[str]) -> None:
    assert main(["synth", "persons", *argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err
    assert not (tmp_path / "o").exists()


def test_synth_persons_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert main(["synth", "persons", "--n", "10", "--duplicates", "1", "--out", str(tmp_path / "f")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


# ---------------------------------------------------------------- er synth inventors (issue 29)


def test_synth_inventors_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "i"
    assert main(["synth", "inventors", "--n", "400", "--seed", "3", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "inventors.csv (400 mentions of " in said and " patents) and " in said and "truth.csv (id, entity)" in said
    with open(out / "inventors.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with open(out / "truth.csv", newline="", encoding="utf-8") as f:
        truth = list(csv.DictReader(f))
    assert len(rows) == 400 and list(rows[0])[:3] == ["id", "patent_id", "first_name"] and list(truth[0]) == ["id", "entity"]
    assert sorted(r["id"] for r in rows) == sorted(t["id"] for t in truth)
    assert any(";" in r["coinventors"] for r in rows) and all(r["classes"] for r in rows)
    first = (out / "inventors.csv").read_bytes()
    assert main(["synth", "inventors", "--n", "400", "--seed", "3", "--out", str(out)]) == 0
    assert (out / "inventors.csv").read_bytes() == first  # deterministic for a seed


def test_synth_inventors_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    assert main(["synth", "inventors", "--n", "200", "--format", "parquet", "--out", str(tmp_path)]) == 0
    table = pq.read_table(tmp_path / "inventors.parquet")
    assert table.num_rows == 200
    for c in ("coinventors", "classes"):
        assert str(table.schema.field(c).type).startswith("list<")
    assert (tmp_path / "truth.csv").exists()


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--n", "1e12"], ["er synth inventors --n: must be from 1 to 2,000,000, got 1,000,000,000,000", "in memory"]),
        (["--n", "0"], ["--n: must be from 1"]),
        (["--n", "100", "--seed", "-1"], ["--seed: must be from 0"]),
    ],
)
def test_synth_inventors_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needles: list[str]) -> None:
    assert main(["synth", "inventors", *argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err
    assert not (tmp_path / "o").exists()


def test_synth_inventors_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert main(["synth", "inventors", "--n", "10", "--out", str(tmp_path / "f")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert (tmp_path / "f").read_text(encoding="utf-8") == "x"


def test_synth_inventors_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["synth", "inventors", "--help"])
    text = capsys.readouterr().out
    assert "--n" in text and "--format" in text and "coinventors" in text
