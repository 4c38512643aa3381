"""Issue 18, cases 18 and 20: absurd sizes are refused with the reason, before the memory is spent.

* ``er synth customers --n 1e12`` (and the other synth sizes): exit 2 naming the maximum and why.
* ``sorted_neighbourhood`` with a huge window, ``field_hash`` on a key with huge buckets and no cap, on
  2 x 200k customers: exit 2 with the estimated pairs, before any pair is made (peak RSS far below the
  address-space limit the run gets; without the guards these runs exceed 3.5 GB).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

N = 200_000
#: an address-space limit for the runs: without the guards they fail on it (a MemoryError), with them
#: they stop at the estimate
LIMIT_MB = 3000

SOURCES = """
name: hostile-sizes
mode: link
sources:
  - {{name: A, path: {data}/a.csv, id: id, fields: [first_name, last_name, address, city, zip, phone, email, dob]}}
  - {{name: B, path: {data}/b.csv, id: id, fields: [first_name, last_name, address, city, zip, phone, email, dob]}}
exact_duplicates: false
verifier: {{type: fellegi_sunter, threshold: 0.9, fields: [{{field: last_name, levels: [100, 90]}}, {{field: phone, comparison: digits}}]}}
cluster: {{type: one_to_one}}
workers: 1
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sizes")
    subprocess.run(
        [sys.executable, "-m", "er_framework.cli.main", "synth", "customers", "--n", str(N), "--seed", "5", "--out", str(root)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return root


def job(tmp_path: Path, data: Path, blockers: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(SOURCES.format(data=data) + blockers, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["customers", "--n", "1e12"], "--n: must be from 1 to 5,000,000, got 1,000,000,000,000"),
        (["customers", "--n", "1000000000000"], "generated in memory"),
        (["fingerprints", "--fingers", "1e12"], "--fingers: must be from 1 to 1,000,000"),
        (["fingerprints", "--fingers", "1000", "--impressions", "1e9"], "--impressions: must be from 1 to 1,000"),
        (["fingerprints", "--fingers", "10", "--mode", "cells", "--grid", "100000x100000"], "more than 65,536"),
    ],
)
def test_absurd_synth_sizes(er: object, tmp_path: Path, argv: list[str], needle: str) -> None:
    ran = er(["synth", *argv, "--out", tmp_path / "o"], limit_mb=LIMIT_MB)  # type: ignore[operator]
    ran.assert_clean_error(2, needle)
    assert not (tmp_path / "o").exists()


def test_a_huge_window_is_refused_by_the_config_check(er: object, data: Path, tmp_path: Path) -> None:
    path = job(tmp_path, data, "blockers:\n  - {type: sorted_neighbourhood, key: [last_name, first_name], window: 100000}\n")
    ran = er(["run", path, "--out", tmp_path / "out"], limit_mb=LIMIT_MB)  # type: ignore[operator]
    ran.assert_clean_error(2, "window 100,000 is above the maximum 10,000", "candidate pairs")
    assert ran.peak_mb < 1000, ran.peak_mb
    assert not (tmp_path / "out").exists()


def test_a_window_making_billions_of_pairs_is_refused_with_the_estimate(er: object, data: Path, tmp_path: Path) -> None:
    path = job(tmp_path, data, "blockers:\n  - {type: sorted_neighbourhood, key: [last_name, first_name], window: 5000}\n")
    ran = er(["run", path, "--out", tmp_path / "out"], limit_mb=LIMIT_MB)  # type: ignore[operator]
    # 400k records x 4999: about 2e9 pairs (~150 GB)
    ran.assert_clean_error(
        2, "sorted_neighbourhood (window 5,000) would create about 2e+09 candidate pairs", "max_pairs = 50,000,000", "lower window to"
    )
    assert ran.peak_mb < 1500, ran.peak_mb
    assert not ran.left_behind


def test_huge_buckets_without_a_cap_are_refused_with_the_estimate(er: object, data: Path, tmp_path: Path) -> None:
    # city: a few thousand distinct values over 400k records: ~77 M cross-source pairs
    path = job(tmp_path, data, "blockers:\n  - {type: field_hash, fields: [city], max_block_size: null}\n")
    ran = er(["run", path, "--out", tmp_path / "out"], limit_mb=LIMIT_MB)  # type: ignore[operator]
    ran.assert_clean_error(
        2, "field_hash key 'city' would create about", "candidate pairs", "largest kept bucket", "set max_block_size (now null: no cap)"
    )
    assert ran.peak_mb < 1500, ran.peak_mb


def test_a_huge_record_does_not_blow_up_the_diagnostics(er: object, tmp_path: Path) -> None:
    """Case 19 (diagnostics part): a 4 MB text among ordinary documents. The diagnostics stage used to
    shingle and sort the record's tokens for every sampled pair holding it (past 4 GB for 50 MB); now
    it leaves it out, says so, and stays below the memory of the shingle stage."""
    import json
    import random
    import string

    rng = random.Random(3)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(20000)]
    with open(tmp_path / "d.jsonl", "w", encoding="utf-8") as f:
        for i in range(300):
            f.write(json.dumps({"id": i, "text": " ".join(rng.choices(words, k=rng.randint(50, 200)))}) + "\n")
        f.write(json.dumps({"id": "huge", "text": " ".join(rng.choices(words, k=700_000))}) + "\n")
    (tmp_path / "job.yaml").write_text(
        "name: huge-record\nthreshold: 0.8\nexact_duplicates: false\n"
        "sources: [{name: d, path: d.jsonl, id: id, fields: [text]}]\n"
        "shingler: {type: char, k: 5}\nsignature: {type: minhash, num_perm: 128}\nblockers: [{type: lsh_bands}]\n"
        "verifier: {type: jaccard}\ncluster: {type: connected_components}\noutput: {dir: out}\n",
        encoding="utf-8",
    )
    ran = er(["run", tmp_path / "job.yaml", "--quiet"], limit_mb=LIMIT_MB)  # type: ignore[operator]
    ran.assert_clean_error(0)
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    stages = {s["stage"]: s for s in report["stages"]}
    assert report["diagnostics"]["s_curve"]["capped"]["records_skipped_long_text"] == 1
    assert stages["diagnostics"]["peak_rss_mb"] <= stages["shingle"]["peak_rss_mb"], stages
