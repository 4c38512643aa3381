"""The customer-records domain end to end: normalizers from YAML, blockers, verifier, link answer."""

from __future__ import annotations

import csv
import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from er_framework.config.resolve import parse_job
from er_framework.errors import ConfigError, InputError
from er_framework.evaluate.metrics import evaluate
from er_framework.evaluate.truth import load_truth
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_customers_job_answers_how_many_of_b_came_from_a(tmp_path: Path) -> None:
    res = run_job(parse_job(ROOT / "configs" / "customers.yaml"), tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    link = report["link"]
    truth = list(csv.DictReader(open(ROOT / "configs/data/customers/truth.csv", newline="")))
    assert link["sources"] == ["A", "B"]
    # one_to_one: as many A as B records matched, close to the 1,000 true referrals
    assert link["matched"]["A"] == link["matched"]["B"]
    assert abs(link["matched"]["B"] - len(truth)) <= 10
    assert [row["threshold"] for row in link["by_threshold"]] == sorted(row["threshold"] for row in link["by_threshold"])
    assert link["threshold"] == 0.5 and 0.5 in [row["threshold"] for row in link["by_threshold"]]
    counts = [row["B"] for row in link["by_threshold"]]
    assert counts == sorted(counts, reverse=True)  # fewer matches at higher thresholds
    assert sum(link["score_histogram"]["counts"]) == report["candidate_pairs"] == len(res.candidates)
    # every record in clusters.csv exactly once; F1 against the truth
    assert report["records"]["total"] == 4000
    m = evaluate(tmp_path, load_truth(ROOT / "configs/data/customers/truth.csv"))
    assert m["pairwise"]["verified_pairs"]["f1"] >= 0.98
    ids = res.records.ids
    found = {(ids[i], ids[j]) for i, j in zip(res.candidates.left.tolist(), res.candidates.right.tolist())}
    assert len(found & {(r["a_id"], r["b_id"]) for r in truth}) >= 0.99 * len(truth)  # pair completeness
    # normalizers ran and are reported; blockers report their purges
    assert set(report["normalize"]) == {"first_name", "last_name", "address", "city", "zip", "phone", "email", "dob"}
    assert report["normalize"]["phone"]["missing_after"] >= report["normalize"]["phone"]["missing_before"]
    assert report["blockers"][0]["type"] == "field_hash" and "per_key" in report["blockers"][0]
    assert "B records matched to A" in res.summary()
    html = (tmp_path / "report.html").read_text()
    assert "Link answer" in html and f"B: {link['matched']['B']:,} of 2,000 records matched" in html


def _job(tmp: Path, normalize: str) -> Path:
    shutil.copy(ROOT / "configs/data/customers/a.csv", tmp / "a.csv")
    shutil.copy(ROOT / "configs/data/customers/b.csv", tmp / "b.csv")
    cfg = tmp / "job.yaml"
    # no leading blank line and the verifier on two lines: the normalize block stays at job.yaml:9
    cfg.write_text(
        textwrap.dedent("""\
        mode: link
        sources:
          - {name: A, path: a.csv, id: id, fields: [first_name, last_name, phone]}
          - {name: B, path: b.csv, id: id, fields: [first_name, last_name, phone]}
        blockers: [{type: field_hash, fields: [phone]}]
        verifier: {type: field_score, threshold: 200,
                   fields: [{field: [first_name, last_name], scorer: token_sort_ratio}, {field: phone, scorer: digits}]}
        cluster: {type: one_to_one}
    """)
        + normalize
    )
    return cfg


def test_bad_normalizers_are_config_errors_with_lines(tmp_path: Path) -> None:
    cfg = _job(tmp_path, "normalize:\n  phone: fone\n  emial: email\n  first_name: {type: phone, region: US}\n")
    with pytest.raises(ConfigError) as exc:
        parse_job(cfg)
    text = str(exc.value)
    assert "job.yaml:10" in text and "fone" in text and "did you mean 'phone'" in text
    assert "field 'emial' is not read by any source" in text
    assert "no option 'region'" in text and "default_region" in text


def test_normalized_values_feed_the_blockers_and_missing_stays_missing(tmp_path: Path) -> None:
    truth = {(r["a_id"], r["b_id"]) for r in csv.DictReader(open(ROOT / "configs/data/customers/truth.csv", newline=""))}

    def found(normalize: str) -> tuple[int, dict]:
        res = run_job(parse_job(_job(tmp_path, normalize)), write=False)
        ids = res.records.ids
        got = {(ids[i], ids[j]) for i, j in zip(res.pairs.left.tolist(), res.pairs.right.tolist())}
        return len(got & truth), res.report

    raw, _ = found("")
    norm, report = found("normalize: {phone: phone}\n")
    # formatting differences ("(555) 123-4567" vs "555.123.4567") no longer split the phone buckets
    assert norm > raw
    stats = report["normalize"]["phone"]
    assert stats["values"] == 4000 and stats["missing_after"] > stats["missing_before"] > 0
    # the placeholder 000-000-0000 became missing: it forms no bucket
    assert "000-000-0000" in stats["unparseable_examples"]
    assert report["blockers"][0]["per_key"][0]["records_missing"] == stats["missing_after"]


def test_unreadable_rows_are_reported_not_dropped(tmp_path: Path) -> None:
    cfg = _job(tmp_path, "")
    with open(tmp_path / "b.csv", "a", encoding="utf-8") as f:
        f.write("B999999,only,two\n")
    with pytest.raises(InputError) as exc:
        run_job(parse_job(cfg), write=False)
    assert "b.csv:2002" in str(exc.value)


def test_lsh_on_field_qgrams_joins_the_field_blockers(tmp_path: Path) -> None:
    """Pairs whose every field differs a little: LSH over q-grams of chosen fields, unioned with field_hash."""
    shutil.copy(ROOT / "configs/data/customers/a.csv", tmp_path / "a.csv")
    shutil.copy(ROOT / "configs/data/customers/b.csv", tmp_path / "b.csv")
    fields = "[first_name, last_name, address, city, zip, phone, email, dob]"
    cfg = tmp_path / "job.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        mode: link
        sources:
          - {{name: A, path: a.csv, id: id, fields: {fields}}}
          - {{name: B, path: b.csv, id: id, fields: {fields}}}
        exact_duplicates: false
        normalize: {{first_name: [name, nickname], last_name: name, address: address, phone: phone}}
        shingler: {{type: char, k: 3, fields: [first_name, last_name, address]}}
        signature: {{type: fss, num_perm: 64}}
        blockers:
          - {{type: field_hash, fields: [phone]}}
          - {{type: lsh_bands, threshold: 0.5}}
        verifier:
          type: fellegi_sunter
          threshold: 0.9
          fields:
            - {{field: first_name, comparison: jaro_winkler, levels: [100, 92, 80]}}
            - {{field: last_name, comparison: jaro_winkler, levels: [100, 92, 80]}}
            - {{field: [address, city, zip], name: location, comparison: ratio, levels: [100, 85, 70]}}
            - {{field: phone, comparison: digits, last_digits: 10}}
            - {{field: email, comparison: ratio, levels: [100, 80]}}
            - {{field: dob, comparison: levenshtein, levels: [100, 80]}}
        cluster: {{type: one_to_one}}
    """)
    )
    res = run_job(parse_job(cfg), write=False)
    by_type = {b["type"]: b["candidate_pairs"] for b in res.report["blockers"]}
    assert by_type["lsh_bands"] > 0 and by_type["field_hash"] > 0
    # the union is deduplicated and cross-source only
    assert max(by_type.values()) <= res.report["candidate_pairs"] <= sum(by_type.values())
    src = res.records.source
    assert np.all(src[res.pairs.left] != src[res.pairs.right])
    truth = {(r["a_id"], r["b_id"]) for r in csv.DictReader(open(ROOT / "configs/data/customers/truth.csv", newline=""))}
    ids = res.records.ids
    got = {(ids[i], ids[j]) for i, j in zip(res.pairs.left.tolist(), res.pairs.right.tolist())}
    assert len(got & truth) >= 0.97 * len(truth) and len(got - truth) <= 0.01 * len(truth)


def test_normalizers_in_worker_processes_give_the_same_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import er_framework.engine.stages.reading as pipeline

    job = parse_job(ROOT / "configs" / "customers.yaml")
    records, _ = pipeline.read(job)
    serial = pipeline.normalize_fields(records, job.spec.normalize, workers=1)
    monkeypatch.setattr(pipeline, "PARALLEL_NORMALIZE_MIN_VALUES", 1)
    parallel = pipeline.normalize_fields(records, job.spec.normalize, workers=2)
    assert list(parallel) == list(serial) and parallel == serial
