"""``threshold: auto``: the threshold chosen from every candidate's score, the same on every executor,
reported, and a fixed number (or the verifier's own) still wins."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import numpy as np
import pytest
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.errors import ConfigError, ErError
from er_framework.evaluate.metrics import bcubed
from er_framework.executors import run_job
from er_framework.index.build import build_index
from er_framework.synth.documents import planted_documents

BOILERPLATE = [
    "Subscribers may share this article with colleagues under the terms of the newsroom licence, provided that "
    "the source is credited and the text is not altered, sold or used to train any automated system whatsoever.",
    "The views expressed here are those of the authors and do not represent the editorial board, the owners of "
    "the publication or any advertiser; corrections can be sent to the desk at any time of the day or night.",
    "Readers who found this coverage useful can support our reporting with a subscription, a donation or by "
    "telling a friend about the newsletter that arrives in their inbox every weekday morning before breakfast.",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """Near-duplicate families (high scores) and short documents sharing long boilerplate (a middle group of scores)."""
    d = planted_documents(90, copies_per_family=(1, 3), words=(20, 40), edit_rates=(0.0, 0.06), n_singletons=150, seed=8)
    rng = random.Random(2)
    texts = [t + " " + rng.choice(BOILERPLATE) if rng.random() < 0.7 else t for t in d.texts]
    path = tmp_path_factory.mktemp("auto") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    return path, np.asarray(d.family, dtype=np.int64)


def _job(tmp: Path, data: Path, threshold: str = "auto", extra: str = "", verifier: str = "{type: jaccard}") -> Path:
    cfg = tmp / f"job_{abs(hash((threshold, extra, verifier)))}.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 5
        threshold: {threshold}
        sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 5}}
        signature: {{type: minhash, num_perm: 128}}
        blockers: [{{type: lsh_bands}}]
        verifier: {verifier}
        cluster: {{type: connected_components}}
        diagnostics: 0
    """)
        + extra
    )
    return cfg


def _f1(res, family: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    return float(bcubed(family, res.labels)[2])


def test_auto_chooses_between_the_groups_and_keeps_what_it_says(tmp_path: Path, corpus: tuple[Path, np.ndarray]) -> None:
    data, family = corpus
    res = run_job(parse_job(_job(tmp_path, data, extra="auto_threshold: {low: 0.15}\n")), write=False)
    section = res.report["threshold"]
    fit = section["auto"]
    assert section["chosen"] == "auto" and fit["ok"] is True and fit["method"] == "mixture"
    t = section["value"]
    assert 0.15 < t < 0.95 and res.report["verifier"]["threshold"] == t
    verify = next(s for s in res.report["stages"] if s["stage"] == "verify")
    assert verify["threshold"] == t and verify["threshold_chosen"]["ok"] is True
    # every written pair that is not an exact copy scores at least t, and every candidate at least t is written
    cand = res.candidates
    assert cand is not None and cand.score is not None
    written = set(zip(res.pairs.left.tolist(), res.pairs.right.tolist()))
    above = {(int(a), int(b)) for a, b, s in zip(cand.left, cand.right, cand.score) if s >= t}
    assert above <= written and all(s >= t or s == 1.0 for s in res.pairs.score)
    assert fit["n_scores"] == len(cand)
    # as good as the best fixed threshold, within 0.02 of B-cubed F1
    best = max(_f1(run_job(parse_job(_job(tmp_path, data, f"{x:.2f}")), write=False), family) for x in np.arange(0.2, 0.95, 0.05))
    assert _f1(res, family) >= best - 0.02


def test_a_fixed_number_or_the_verifiers_own_wins(tmp_path: Path, corpus: tuple[Path, np.ndarray]) -> None:
    data, _ = corpus
    fixed = run_job(parse_job(_job(tmp_path, data, "0.5")), write=False)
    assert fixed.report["threshold"] == {"value": 0.5, "chosen": "fixed"}
    own = run_job(parse_job(_job(tmp_path, data, verifier="{type: jaccard, threshold: 0.6}")), write=False)
    assert own.report["threshold"]["chosen"] == "fixed" and own.report["threshold"]["value"] == 0.6
    assert "auto" not in own.report["threshold"]


def test_too_few_scores_fall_back_and_say_so(tmp_path: Path) -> None:
    data = tmp_path / "few.jsonl"
    texts = ["alpha beta gamma delta epsilon zeta", "alpha beta gamma delta epsilon zeta eta", "unrelated words here"]
    data.write_text("".join(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    res = run_job(parse_job(_job(tmp_path, data, extra="auto_threshold: {low: 0.2, fallback: 0.5}\n")), write=False)
    fit = res.report["threshold"]["auto"]
    assert fit["ok"] is False and res.report["threshold"]["value"] == 0.5 and "too few" in fit["reason"]


def test_dask_chooses_the_same(tmp_path: Path, corpus: tuple[Path, np.ndarray], dask_cluster: LocalCluster) -> None:
    data, _ = corpus
    local, dask = tmp_path / "local", tmp_path / "dask"
    run_job(parse_job(_job(tmp_path, data, extra="auto_threshold: {low: 0.15}\n")), local)
    run_job(
        parse_job(
            _job(
                tmp_path,
                data,
                extra="auto_threshold: {low: 0.15}\n"
                f"executor: {{type: dask, address: '{dask_cluster.scheduler_address}', partition_mb: 0.003}}\n",
            )
        ),
        dask,
    )
    for name in ("pairs.csv", "clusters.csv"):
        assert (local / name).read_bytes() == (dask / name).read_bytes()
    reps = [json.loads((o / "report.json").read_text()) for o in (local, dask)]
    assert reps[1]["executor"]["partitions"] > 1
    assert reps[0]["threshold"] == reps[1]["threshold"]
    html = (local / "report.html").read_text()
    assert 'id="threshold"' in html and "Threshold chosen from the data" in html
    assert "candidate scores and the chosen threshold" in html  # the plot's alt text: the image was drawn


def test_refused_where_a_fixed_number_is_needed(tmp_path: Path, corpus: tuple[Path, np.ndarray]) -> None:
    data, _ = corpus
    with pytest.raises(ErError) as err:
        build_index(parse_job(_job(tmp_path, data)), tmp_path / "i.db")
    assert "threshold: auto" in str(err.value) and "set threshold to a number" in str(err.value)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("threshold: auto\nauto_threshold: {low: 0.9, high: 0.5}", "low (0.9) must be below high (0.5)"),
        ("threshold: 0.5\nauto_threshold: {low: 0.2}", "auto_threshold is read only with threshold: auto"),
        ("threshold: automatic", "expected a number or 'auto'"),
        ("threshold: true", "expected a number or 'auto'"),
        ("threshold: 1.5", "at most 1"),
        ("threshold: auto\nauto_threshold: {method: otsu}", "method"),
        ("threshold: auto\nauto_threshold: {low: 0.3, fallback: 0.1}", "fallback (0.1) must lie between"),
    ],
)
def test_bad_settings_are_named(tmp_path: Path, corpus: tuple[Path, np.ndarray], text: str, needle: str) -> None:
    data, _ = corpus
    cfg = _job(tmp_path, data)
    cfg.write_text(cfg.read_text().replace("threshold: auto\n", text + "\n", 1))
    with pytest.raises(ConfigError) as err:
        parse_job(cfg)
    assert needle in str(err.value)
