"""The plausibility check of a finished run (er_framework/engine/plausibility.py): each check fires on a
crafted report, none fires on the shipped Febrl3 run, and a collapsing run says so in its summary,
report.json and report.html (and exits 3 with fail_on_warnings)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from er_framework.config import parse_job
from er_framework.engine import plausibility as pl
from er_framework.engine.plausibility import warnings_of
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]
FEBRL3 = ROOT / "configs" / "data" / "febrl" / "febrl3.csv"


@pytest.fixture(scope="module")
def febrl3_report() -> dict[str, Any]:
    """report.json of the shipped Febrl3 job (not written)."""
    return run_job(parse_job(ROOT / "configs" / "febrl3.yaml"), write=False).report


def sound() -> dict[str, Any]:
    """A plausible dedup report: 5,000 records, a fitted Fellegi-Sunter model, small clusters."""
    return {
        "mode": "dedup",
        "records": {"total": 5000, "per_source": {"s": 5000}},
        "candidate_pairs": 36000,
        "verified_pairs": 6500,
        "clusters": {"count": 2000, "singletons": 800, "largest": 6, "records_in_multi_record_clusters": 4200},
        "verifier": {
            "type": "fellegi_sunter",
            "lambda": 0.18,
            "expected_matches": 6500.0,
            "pairs_at_or_above_threshold": 6500,
            "converged": True,
            "iterations": 7,
            "per_field": {
                "name": {"weight_log2": [6.1, 2.0, -1.5]},
                "dob": {"weight_log2": [4.0, -3.0]},
            },
        },
    }


def codes(report: dict[str, Any]) -> list[str]:
    return [w["code"] for w in warnings_of(report)]


def test_a_sound_report_and_the_shipped_febrl3_run_have_no_warnings(febrl3_report: dict[str, Any]) -> None:
    assert warnings_of(sound()) == []
    assert warnings_of(febrl3_report) == []
    assert febrl3_report["warnings"] == []  # build_report adds the list, empty here
    assert warnings_of({}) == []  # nothing to check: nothing said


def test_one_giant_cluster() -> None:
    r = sound()
    r["clusters"] = {"count": 120, "singletons": 30, "largest": 2501}
    assert codes(r) == ["giant_cluster"]
    w = warnings_of(r)[0]
    assert "2,501 of the 5,000 records (50%" in w["message"] and w["fix"]
    r["clusters"]["largest"] = 2500  # exactly half: not more than half
    assert codes(r) == []
    small = sound()
    small["records"]["total"] = 150
    small["clusters"] = {"count": 2, "largest": 100}  # most records, but 100 records are not a giant
    assert "giant_cluster" not in codes(small)
    small["clusters"]["largest"] = 101
    assert "giant_cluster" in codes(small)


def test_every_candidate_a_match() -> None:
    r = sound()
    r["verified_pairs"] = int(0.95 * r["candidate_pairs"])
    r["verifier"]["expected_matches"] = 6500.0
    assert codes(r) == ["every_candidate_matches"]
    r["verified_pairs"] -= 1
    assert codes(r) == []
    few = sound()
    few["candidate_pairs"] = few["verified_pairs"] = 1000  # a thousand candidates may all match
    few["verifier"]["pairs_at_or_above_threshold"] = 1000
    assert "every_candidate_matches" not in codes(few)
    few["candidate_pairs"] = few["verified_pairs"] = 1001
    assert "every_candidate_matches" in codes(few)


@pytest.mark.parametrize("lam, fires", [(0.999, True), (0.99, False), (0.5, False), (1e-6, False), (5e-7, True), (0.0, True)])
def test_lambda_at_a_boundary(lam: float, fires: bool) -> None:
    r = sound()
    r["verifier"]["lambda"] = lam
    assert ("lambda_at_boundary" in codes(r)) is fires
    if fires:
        fix = next(w["fix"] for w in warnings_of(r) if w["code"] == "lambda_at_boundary")
        assert ("fix_u" in fix) is (lam > 0.5)


def test_lambda_over_every_record_pair_is_checked_among_the_candidates() -> None:
    """Training sessions give lambda over every record pair (5e-7 for a million records a side, rightly):
    the boundary is checked on the expected matches among the candidates over the pairs scored."""
    r = sound()
    r["verifier"].update(
        {
            "lambda": 5e-7,
            "sessions": {"lambda_over": "population", "sessions": []},
            "pairs_scored": 36000,
            "expected_matches_in_candidates": 6500.0,
        }
    )
    assert pl.candidate_lambda(r["verifier"]) == pytest.approx(6500 / 36000)
    assert codes(r) == []
    r["verifier"]["expected_matches_in_candidates"] = 35999.0
    assert codes(r) == ["lambda_at_boundary"]
    assert "lambda = 0.999972 among the candidates" in warnings_of(r)[0]["message"]
    r["verifier"]["expected_matches_in_candidates"] = 0.01  # and then far fewer than the 6,500 pairs kept
    assert codes(r) == ["lambda_at_boundary", "expected_matches_low"]
    r["verifier"]["expected_matches_in_candidates"] = 6500.0
    r["verifier"]["expected_matches"] = 20000.0  # over every record pair: 4 per record of 5,000
    r["verifier"]["pairs_at_or_above_threshold"] = r["verified_pairs"] = 6500
    got = warnings_of(r)
    assert [w["code"] for w in got] == ["expected_matches_high"] and "among every record pair" in got[0]["message"]


def test_a_training_session_that_did_not_converge() -> None:
    r = sound()
    r["verifier"]["sessions"] = {
        "lambda_over": "population",
        "sessions": [
            {"agree_on": ["given_name"], "iterations": 500, "converged": False, "used": True},
            {"agree_on": ["surname"], "iterations": 500, "converged": False, "used": False},  # not used: no matter
            {"agree_on": ["dob"], "iterations": 9, "converged": True, "used": True},
        ],
    }
    r["verifier"]["expected_matches_in_candidates"] = 6500.0
    r["verifier"]["pairs_scored"] = 36000
    got = warnings_of(r)
    assert [w["code"] for w in got] == ["em_not_converged"]
    assert "session on the pairs agreeing on given_name stopped after 500 iterations" in got[0]["message"]


def test_lambda_of_a_verifier_that_fits_nothing_is_not_checked() -> None:
    r = sound()
    r["verifier"] = {"type": "jaccard", "threshold": 0.5}
    assert codes(r) == []


def test_expected_matches_too_many_for_the_records() -> None:
    r = sound()
    r["verifier"]["expected_matches"] = pl.EXPECTED_PER_RECORD_DEDUP * 5000 + 1
    r["verifier"]["pairs_at_or_above_threshold"] = r["verified_pairs"] = 10_001
    assert codes(r) == ["expected_matches_high"]
    # large entities (inventors with dozens of patents): the clusters hold as many pairs as the model expects
    r["clusters"]["pairs"] = 5001
    assert codes(r) == [] and pl.EXPECTED_SHARE_IN_CLUSTERS == 0.5
    r["clusters"]["pairs"] = 5000
    assert codes(r) == ["expected_matches_high"]
    assert "more than twice the 5,000 pairs its clusters hold" in warnings_of(r)[0]["message"]
    r["verifier"]["expected_matches"] = pl.EXPECTED_PER_RECORD_DEDUP * 5000
    assert codes(r) == []
    link = sound()
    link["mode"] = "link"
    link["records"] = {"total": 15000, "per_source": {"A": 10000, "B": 5000}}
    link["verifier"]["expected_matches"] = 10_001.0  # two per record of the smaller source, and one more
    link["verifier"]["pairs_at_or_above_threshold"] = link["verified_pairs"] = 10_001
    assert codes(link) == ["expected_matches_high"]
    assert "5,000 records in the smaller source" in warnings_of(link)[0]["message"]
    link["verifier"]["expected_matches"] = 10_000.0
    assert codes(link) == []
    # three sources: per pair of sources the smaller one's records, summed (5,000 + 5,000 + 8,000)
    link["records"] = {"total": 23000, "per_source": {"A": 10000, "B": 5000, "C": 8000}}
    link["verifier"]["expected_matches"] = pl.EXPECTED_PER_RECORD_LINK * 18_000 + 1
    assert codes(link) == ["expected_matches_high"]
    assert "3 sources (18,000 records of the smaller source summed over the pairs of sources)" in warnings_of(link)[0]["message"]
    link["verifier"]["expected_matches"] = pl.EXPECTED_PER_RECORD_LINK * 18_000
    assert codes(link) == []


def test_expected_matches_too_few_for_what_is_kept() -> None:
    r = sound()
    r["verifier"]["expected_matches"] = 64.9  # under 1% of the 6,500 pairs kept
    assert codes(r) == ["expected_matches_low"]
    r["verifier"]["expected_matches"] = 65.0
    assert codes(r) == []


def test_training_from_too_few_labels_or_with_no_links() -> None:
    r = sound()
    r["training"] = {"matches": 1, "non_matches": 1}
    [w] = warnings_of(r)
    assert w["code"] == "few_labels" and "1 labelled matches and 1 labelled non-matches" in w["message"]
    assert "6,500 pairs" in w["message"] and "at least 10 pairs of each kind" in w["fix"]
    r["training"] = {"matches": pl.FEW_LABELS, "non_matches": pl.FEW_LABELS}
    assert codes(r) == []
    r["verified_pairs"] = 0
    assert codes(r) == ["training_no_links"]
    del r["training"]
    assert codes(r) == []


def test_a_field_whose_every_level_weighs_nothing() -> None:
    r = sound()
    r["verifier"]["per_field"]["birth_month"] = {"weight_log2": [0.04, -0.09, 0.0]}
    r["verifier"]["per_field"]["birth_year"] = {"weight_log2": [0.0, 0.0]}
    r["verifier"]["per_field"]["state"] = {"weight_log2": [0.1, -0.02]}  # 0.1 bits at one level: something
    got = warnings_of(r)
    assert [w["code"] for w in got] == ["field_says_nothing", "field_says_nothing"]
    assert "'birth_month'" in got[0]["message"] and "'birth_year'" in got[1]["message"]


def test_em_not_converged() -> None:
    r = sound()
    r["verifier"]["converged"] = False
    r["verifier"]["iterations"] = 500
    assert codes(r) == ["em_not_converged"]
    assert "500 iterations" in warnings_of(r)[0]["message"]
    del r["verifier"]["converged"]  # a verifier that does not say: nothing to warn of
    assert codes(r) == []


def test_the_verifiers_own_warnings_come_after_the_checks() -> None:
    r = sound()
    r["verifier"]["converged"] = False
    r["verifier"]["warnings"] = [{"code": "labels_one_sided", "message": "all labels say match", "fix": "label non-matches"}]
    r["verifier"]["fit"] = {"warnings": [{"message": "a nested one"}]}
    got = warnings_of(r)
    assert [w["code"] for w in got] == ["em_not_converged", "labels_one_sided", "verifier"]
    assert got[1] == {"code": "labels_one_sided", "message": "all labels say match", "fix": "label non-matches"}
    assert got[2] == {"code": "verifier", "message": "a nested one", "fix": ""}


def test_the_checks_do_not_change_the_report() -> None:
    r = sound()
    r["clusters"]["largest"] = 4000
    before = copy.deepcopy(r)
    assert warnings_of(r) and r == before


# ---------------------------------------------------------------- a run that collapses

#: Febrl3 blocked on the given name and on the surname alone (no cap), compared on both names by EM on the
#: candidates with u held at a few hundred random pairs' estimate (fix_u): every candidate agrees on one name, which random pairs
#: almost never do, so EM puts every candidate into the match class (lambda -> 1) and the names chain
#: most of the 5,000 records into one cluster
COLLAPSING = """
name: collapse
mode: dedup
seed: 7
sources:
  - {{name: febrl3, path: {data}, id: rec_id, fields: [given_name, surname]}}
normalize: {{given_name: name, surname: name}}
exact_duplicates: false
blockers:
  - {{type: field_hash, fields: [given_name, surname], max_block_size: null}}
verifier:
  type: fellegi_sunter
  threshold: 0.5
  estimation: em
  fix_u: true
  u_from_random_pairs: 300
  fields:
    - {{field: given_name, comparison: exact}}
    - {{field: surname, comparison: exact}}
cluster: {{type: connected_components}}
"""


def er(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "er_framework", *args], capture_output=True, text=True, cwd=ROOT, check=False)


def test_fix_u_collapsing_everything_into_one_cluster_says_so(tmp_path: Path) -> None:
    job = tmp_path / "collapse.yaml"
    job.write_text(textwrap.dedent(COLLAPSING).format(data=FEBRL3))
    done = er("run", str(job), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    warned = [line for line in lines if line.startswith("warning: ")]
    assert any("one cluster holds" in line and "of the 5,000 records" in line for line in warned)
    assert any("lambda = " in line and "remove fix_u: true" in line for line in warned)
    assert any("candidate pairs (100.0%) are verified" in line for line in warned)
    # the warnings come before the written files, after the counts
    first_warning = lines.index(warned[0])
    assert first_warning > next(i for i, x in enumerate(lines) if x.startswith("clusters"))
    assert first_warning < next(i for i, x in enumerate(lines) if x.startswith("wrote "))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["clusters"]["largest"] > 0.5 * report["records"]["total"]
    assert report["verifier"]["lambda"] > pl.LAMBDA_HIGH
    assert {"giant_cluster", "every_candidate_matches", "lambda_at_boundary"} <= {w["code"] for w in report["warnings"]}
    assert report["warnings"] == warnings_of(report)
    html = (tmp_path / "out" / "report.html").read_text()
    box = html.index('<section id="warnings" class="warnings">')
    assert box < html.index('<section id="job">') and "one cluster holds" in html[box:]
    # --quiet drops the summary but not the warnings; fail_on_warnings: true makes the run exit 3
    quiet = er("run", str(job), "--out", str(tmp_path / "quiet"), "--quiet", "--no-report")
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert "warning: one cluster holds" in quiet.stderr
    strict = tmp_path / "strict.yaml"
    strict.write_text(job.read_text() + "fail_on_warnings: true\n")
    failed = er("run", str(strict), "--out", str(tmp_path / "strict"), "--quiet", "--no-report")
    assert failed.returncode == 3, failed.stderr
    assert "fail_on_warnings: true: exit 3" in failed.stderr
    assert (tmp_path / "strict" / "pairs.csv").is_file()  # the outputs are written all the same


def test_fail_on_warnings_without_warnings_exits_0(tmp_path: Path) -> None:
    job = tmp_path / "febrl3.yaml"
    text = (ROOT / "configs" / "febrl3.yaml").read_text().replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    job.write_text(text + "\nfail_on_warnings: true\n")
    done = er("run", str(job), "--out", str(tmp_path / "out"), "--quiet", "--no-report")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# ---------------------------------------------------------------- issue 31: losses of the run itself


def test_oversized_buckets_are_pairs_dropped_by_a_cap() -> None:
    r = sound()
    r["exact_duplicates"] = {"enabled": False}
    r["blockers"] = [
        {"type": "lsh_bands", "max_bucket_size": 500, "largest_bucket": 3000, "oversized_buckets": 13, "pairs_skipped": 58_480_500}
    ]
    [w] = [w for w in warnings_of(r) if w["code"] == "pairs_dropped_by_cap"]
    assert "'lsh_bands' skipped 13 buckets over max_bucket_size = 500" in w["message"]
    assert "at least 3,000 records" in w["message"] and "58,480,500 pairs" in w["message"]
    assert "raise max_bucket_size" in w["fix"] and "exact_duplicates on" in w["fix"]
    r["blockers"][0]["oversized_buckets"] = 0
    assert "pairs_dropped_by_cap" not in codes(r)


def test_purged_blocks_are_pairs_dropped_by_a_cap_per_key() -> None:
    r = sound()
    purged = {"buckets": 2, "records": 700, "pairs_cost": 200_000, "largest": [{"value": "smith", "size": 400}]}
    none = {"buckets": 0, "records": 0, "pairs_cost": 0, "largest": []}
    r["blockers"] = [
        {"type": "field_hash", "max_block_size": 200, "per_key": [{"key": "surname", "purged": purged}, {"key": "dob", "purged": none}]}
    ]
    [w] = [w for w in warnings_of(r) if w["code"] == "pairs_dropped_by_cap"]
    assert "key 'surname'" in w["message"] and "700 records in them, the largest 400" in w["message"] and "200,000 pairs" in w["message"]
    assert "exact_duplicates" not in w["fix"] and "max_block_size" in w["fix"]
    caps = pl.capped_pairs(r["blockers"][0])
    assert [c["setting"] for c in caps] == ["max_block_size"]


def test_records_emptied_by_pruning() -> None:
    r = sound()
    r["stages"] = [{"stage": "prune", "records_counted": 5000, "records_emptied": 50, "max_df": 3, "min_df": None}]
    [w] = [w for w in warnings_of(r) if w["code"] == "records_emptied_by_pruning"]
    assert "50 of the 5,000 records (1.0%)" in w["message"] and "raise max_df" in w["fix"]
    r["stages"][0]["records_emptied"] = 0
    assert "records_emptied_by_pruning" not in codes(r)


def test_nothing_verified_needs_evidence() -> None:
    r = sound()
    r["verified_pairs"] = 0
    r["scores"] = {
        "near_identical_rejected": {"sampled": 2000, "near_identical": 0, "similarity": 0.9, "best_score": 0.4, "threshold": 0.9}
    }
    assert "nothing_verified" not in codes(r)  # truly distinct records: quiet
    r["scores"]["near_identical_rejected"]["near_identical"] = 31
    [w] = [w for w in warnings_of(r) if w["code"] == "nothing_verified"]
    assert "none of the 36,000 candidate pairs" in w["message"] and "31 of the 2,000" in w["message"]
    assert "best score was 0.4" in w["message"] and "check the threshold" in w["fix"]
    r["training"] = {"labels": "labels.csv", "pairs": 3}
    assert "too few labelled pairs" in warnings_of(r)[0]["fix"]
    r["training"] = {"matches": 1, "non_matches": 1}  # training_no_links says it (one warning, not two)
    assert codes(r).count("training_no_links") == 1 and "nothing_verified" not in codes(r)
    r["verified_pairs"] = 5
    assert "nothing_verified" not in codes(r)


@pytest.mark.parametrize(
    "junk",
    [
        {"blockers": 5},
        {"blockers": [{"oversized_buckets": "x", "per_key": 3}]},
        {"blockers": [{"per_key": [{"purged": {"buckets": 2, "largest": "no"}}]}]},
        {"stages": "prune"},
        {"stages": [{"stage": "prune", "records_emptied": None}]},
        {"scores": {"near_identical_rejected": {"near_identical": "3"}}, "verified_pairs": 0},
    ],
)
def test_the_new_checks_read_a_report_edited_by_hand_without_a_crash(junk: dict[str, Any]) -> None:
    r = sound()
    r.update(junk)
    assert isinstance(warnings_of(r), list)
