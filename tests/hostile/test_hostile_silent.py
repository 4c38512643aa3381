"""Issue 31, silent wrong answers made loud, each as a whole ``er`` process: pairs dropped by a cap (oversized
LSH buckets, identical records with exact duplicates off, purged blocks), ``prune_shingles`` that prunes
everything or empties records, a verifier that keeps nothing while near-identical candidates were rejected,
an output folder inside a page folder, a page folder at ``/``, and ``er explain`` after a source changed.

A warning is a line of the summary (printed to stderr with ``--quiet``) and an entry of report.json
``warnings``; a setting that guarantees a wrong answer is refused with exit 2 (what, where, the fix).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import string
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.conftest import run_er

ROOT = Path(__file__).resolve().parents[2]
NEWS_PAGES = ROOT / "configs" / "data" / "news" / "pages"

WORDS = ["".join(random.Random(i).choices(string.ascii_lowercase, k=7)) for i in range(20)]


def jsonl(path: Path, texts: list[str], prefix: str = "r") -> Path:
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    return path


def text_job(
    tmp: Path, data: Path, *, threshold: float = 0.8, extra: str = "", blocker: str = "{type: lsh_bands}", name: str = "job.yaml"
) -> Path:
    cfg = tmp / "job.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        name: silent
        mode: dedup
        seed: 1
        threshold: {threshold}
        sources:
          - {{name: docs, path: {json.dumps(str(data))}, id: id, fields: [text]}}
        shingler: {{type: char, k: 3}}
        signature: {{type: minhash, num_perm: 64}}
        blockers: [{blocker}]
        verifier: {{type: jaccard}}
        cluster: {{type: connected_components}}
        """)
        + extra,
        encoding="utf-8",
    )
    return cfg


def report(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "report.json").read_text(encoding="utf-8")))


def codes(out: Path) -> list[str]:
    return [w["code"] for w in report(out)["warnings"]]


def near_identical_titles(n: int) -> list[str]:
    return [f"Acme stainless steel water bottle 750 ml blue, model {i}" for i in range(n)]


# ------------------------------------------------------------------ pairs dropped by a cap


def test_oversized_lsh_buckets_are_a_warning_with_counts_and_the_fix(tmp_path: Path) -> None:
    data = jsonl(tmp_path / "titles.jsonl", near_identical_titles(3000))
    cfg = text_job(tmp_path, data, blocker="{type: lsh_bands, max_bucket_size: 500}")
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    assert ran.code == 0, ran.err
    line = next(x for x in ran.err.splitlines() if "max_bucket_size = 500" in x)  # printed even with --quiet
    assert "skipped" in line and "pairs they would have made" in line and "raise max_bucket_size" in line
    w = next(w for w in report(tmp_path / "out")["warnings"] if w["code"] == "pairs_dropped_by_cap")
    blk = report(tmp_path / "out")["blockers"][0]
    assert f"{blk['oversized_buckets']:,} buckets" in w["message"] and f"{blk['pairs_skipped']:,} pairs" in w["message"]
    assert f"at least {blk['largest_bucket']:,} records" in w["message"]


def test_identical_records_with_exact_duplicates_off_say_to_turn_it_on(tmp_path: Path) -> None:
    data = jsonl(tmp_path / "same.jsonl", ["exactly the same product title on every record"] * 2500)
    cfg = text_job(tmp_path, data, extra="exact_duplicates: false\n")
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    assert ran.code == 0, ran.err
    assert report(tmp_path / "out")["pairs_written"] == 0  # the answer the warning is about
    blk = report(tmp_path / "out")["blockers"][0]
    assert blk["largest_bucket"] == 2500 and blk["pairs_skipped"] == blk["oversized_buckets"] * 2500 * 2499 // 2
    line = next(x for x in ran.err.splitlines() if "max_bucket_size" in x)
    assert "exact_duplicates on" in line and f"{blk['pairs_skipped']:,} pairs" in line


def test_purged_blocks_of_a_key_are_a_warning(tmp_path: Path) -> None:
    rows = ["id,name,city,street"] + [f"{i},person {i % 40},Springfield,{i} main street" for i in range(300)]
    (tmp_path / "people.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    cfg = tmp_path / "job.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        name: purged
        mode: dedup
        threshold: 0.5
        sources:
          - {{name: p, path: {json.dumps(str(tmp_path / "people.csv"))}, id: id, fields: [name, city, street]}}
        blockers: [{{type: field_hash, fields: [city, name], max_block_size: 50}}]
        verifier: {{type: field_score, threshold: 80, fields: [{{field: name, scorer: exact, weight: 1}}]}}
        cluster: {{type: connected_components}}
        """),
        encoding="utf-8",
    )
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    assert ran.code == 0, ran.err
    w = [w for w in report(tmp_path / "out")["warnings"] if w["code"] == "pairs_dropped_by_cap"]
    assert len(w) == 1, w
    assert "key 'city'" in w[0]["message"] and "300 records in them" in w[0]["message"] and "44,850 pairs" in w[0]["message"]
    assert "max_block_size" in w[0]["fix"] and any("key 'city'" in x for x in ran.err.splitlines())


# ------------------------------------------------------------------ pruning


def test_max_df_of_one_record_is_refused_before_work(tmp_path: Path) -> None:
    data = jsonl(tmp_path / "titles.jsonl", near_identical_titles(50))
    cfg = text_job(tmp_path, data, extra="prune_shingles: {max_df: 1}\n")
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    ran.assert_clean_error(2, "prune_shingles.max_df", "drops every shingle that two records share", "at least 2")
    assert not (tmp_path / "out").exists()


def test_min_df_above_max_df_is_refused_before_work(tmp_path: Path) -> None:
    data = jsonl(tmp_path / "titles.jsonl", near_identical_titles(50))
    cfg = text_job(tmp_path, data, extra="prune_shingles: {max_df: 5, min_df: 6}\n")
    run_er(["validate", cfg]).assert_clean_error(2, "min_df = 6 is above max_df = 5")


def test_pruning_every_shingle_is_refused(tmp_path: Path) -> None:
    data = jsonl(tmp_path / "same.jsonl", ["one text shared by every record"] * 300)
    cfg = text_job(tmp_path, data, extra="exact_duplicates: false\nprune_shingles: {max_df: 2}\n")
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    ran.assert_clean_error(2, "drop every shingle of every one of the 300 records", "raise max_df")
    assert not (tmp_path / "out").exists()


def test_records_emptied_by_pruning_are_a_warning(tmp_path: Path) -> None:
    texts = [f"{' '.join(WORDS[j % 20] for j in range(i % 20, i % 20 + 6))} {i}" for i in range(200)] + ["zzzzzz"]
    data = jsonl(tmp_path / "docs.jsonl", texts)
    cfg = text_job(tmp_path, data, threshold=0.5, extra="prune_shingles: {min_df: 2}\n")
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    assert ran.code == 0, ran.err
    w = next(w for w in report(tmp_path / "out")["warnings"] if w["code"] == "records_emptied_by_pruning")
    assert "1 of the 201 records" in w["message"] and "lower min_df" in w["fix"]
    assert any("without any shingle" in x for x in ran.err.splitlines())


# ------------------------------------------------------------------ a verifier that keeps nothing


def pairs_of_copies(n: int) -> list[str]:
    rnd = random.Random(3)
    out = []
    for _ in range(n):
        t = " ".join(rnd.choice(WORDS) for _ in range(12))
        out += [t, t + "."]
    return out


def test_nothing_verified_while_near_identical_candidates_were_rejected_is_a_warning(tmp_path: Path) -> None:
    data = jsonl(tmp_path / "near.jsonl", pairs_of_copies(150))
    cfg = text_job(tmp_path, data, threshold=0.999, blocker="{type: lsh_bands, threshold: 0.5}")
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    assert ran.code == 0, ran.err
    rep = report(tmp_path / "out")
    assert rep["verified_pairs"] == 0 and rep["candidate_pairs"] > 0
    w = next(w for w in rep["warnings"] if w["code"] == "nothing_verified")
    assert "150 of the" in w["message"] and "near-identical" in w["message"] and "threshold" in w["fix"]
    assert any("verified none of the" in x for x in ran.err.splitlines())


def test_nothing_verified_among_distinct_records_stays_quiet(tmp_path: Path) -> None:
    rnd = random.Random(4)
    words = ["".join(rnd.choices(string.ascii_lowercase, k=6)) for _ in range(400)]
    data = jsonl(tmp_path / "distinct.jsonl", [" ".join(rnd.choice(words) for _ in range(12)) for _ in range(300)])
    cfg = text_job(tmp_path, data, threshold=0.999, blocker="{type: lsh_bands, threshold: 0.5}")
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"])
    assert ran.code == 0, ran.err
    rep = report(tmp_path / "out")
    assert rep["verified_pairs"] == 0 and rep["candidate_pairs"] > 0
    assert rep["scores"]["near_identical_rejected"]["near_identical"] == 0
    assert "nothing_verified" not in codes(tmp_path / "out") and "warning" not in ran.err


# ------------------------------------------------------------------ page folders


def news_job(tmp: Path, pages: Path) -> Path:
    text = (ROOT / "configs" / "news.yaml").read_text(encoding="utf-8").replace("path: data/news/pages", f"path: {json.dumps(str(pages))}")
    cfg = tmp / "news.yaml"
    cfg.write_text(text, encoding="utf-8")
    return cfg


def test_an_output_folder_inside_the_page_folder_is_not_read_back(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    shutil.copytree(NEWS_PAGES, pages)
    cfg = news_job(tmp_path, pages)
    first = run_er(["run", cfg, "--out", pages / "out", "--quiet"])
    assert first.code == 0, first.err
    (pages / "old-run").mkdir()  # an output folder of an older run beside it, and an unfinished run's stage
    shutil.copy(pages / "out" / "report.json", pages / "old-run" / "report.json")
    shutil.copy(pages / "out" / "report.html", pages / "old-run" / "report.html")
    (pages / ".er-tmp-123").mkdir()
    (pages / ".er-tmp-123" / "report.html").write_text("<html><body>stage</body></html>", encoding="utf-8")
    second = run_er(["run", cfg, "--out", pages / "out", "--quiet"])
    assert second.code == 0, second.err
    rep = report(pages / "out")
    assert rep["records"]["total"] == 26  # the 26 pages, not report.html of the runs
    assert rep["sources"]["pages"]["skipped_er_outputs"] == 3
    assert rep["sources"]["pages"]["skipped_er_output_examples"] == [".er-tmp-123/", "old-run/", "out/"]


def test_a_page_folder_at_the_root_is_refused_before_the_walk(tmp_path: Path) -> None:
    cfg = news_job(tmp_path, Path("/"))
    ran = run_er(["run", cfg, "--out", tmp_path / "out", "--quiet"], timeout=60)
    ran.assert_clean_error(2, "a folder of the operating system", "point the source's path at the folder that holds the pages")
    assert ran.peak_mb < 400


# ------------------------------------------------------------------ er explain after the sources changed


@pytest.fixture
def febrl_run(tmp_path: Path) -> tuple[Path, Path]:
    shutil.copy(ROOT / "configs" / "data" / "febrl" / "febrl3.csv", tmp_path / "febrl3.csv")
    text = (ROOT / "configs" / "febrl3.yaml").read_text(encoding="utf-8")
    lines = [("    path: febrl3.csv" if ln.strip().startswith("path:") and "febrl3.csv" in ln else ln) for ln in text.splitlines()]
    (tmp_path / "job.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ran = run_er(["run", tmp_path / "job.yaml", "--out", tmp_path / "out", "--quiet"])
    assert ran.code == 0, ran.err
    return tmp_path / "febrl3.csv", tmp_path / "out"


PAIR = ["--left", "rec-552-dup-3", "--right", "rec-552-dup-1"]


def test_explain_refuses_a_source_changed_after_the_run(febrl_run: tuple[Path, Path]) -> None:
    data, out = febrl_run
    assert run_er(["explain", out, *PAIR]).code == 0
    os.utime(data, ns=(1, 1))  # a touch: the whole file is hashed, its content is the same
    assert run_er(["explain", out, *PAIR]).code == 0
    text = data.read_text(encoding="utf-8")
    data.write_text(text.replace("rec-552-dup-1,", "rec-552-dup-1,X", 1), encoding="utf-8")
    ran = run_er(["explain", out, *PAIR])
    ran.assert_clean_error(2, str(data), "changed since the run", "run the job again", "--allow-changed")
    assert "harley" not in ran.err.lower()  # no record value of the file is quoted
    allowed = run_er(["explain", out, *PAIR, "--allow-changed"])
    assert allowed.code == 0 and "--allow-changed reads it as it is now" in allowed.err


def test_explain_refuses_a_same_size_edit(febrl_run: tuple[Path, Path]) -> None:
    data, out = febrl_run
    raw = bytearray(data.read_bytes())
    i = raw.index(b"harley")
    raw[i : i + 6] = b"harlez"
    data.write_bytes(bytes(raw))
    run_er(["explain", out, *PAIR]).assert_clean_error(2, "its content differs")


def test_review_refuses_a_source_changed_after_the_run(febrl_run: tuple[Path, Path]) -> None:
    data, out = febrl_run
    labels = data.parent / "labels.csv"
    text = data.read_text(encoding="utf-8")
    data.write_text(text.replace("rec-552-dup-1,", "rec-552-dup-1,X", 1), encoding="utf-8")
    ran = run_er(["review", out, "--labels", labels])
    ran.assert_clean_error(2, str(data), "changed since the run", "--allow-changed")
    assert not labels.exists()
    allowed = run_er(["review", out, "--labels", labels, "--allow-changed"])
    assert allowed.code == 0 and "--allow-changed reads it as it is now" in allowed.err and labels.is_file()
