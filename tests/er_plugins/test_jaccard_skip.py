"""jaccard's skip_unlikely: candidates rejected from their signatures alone, never from their token sets."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from er_framework.config.resolve import parse_job
from er_framework.executors import run_job
from er_framework.synth.documents import planted_documents
from er_plugins.documents import agreement_cutoff


def _binomial_cdf(m: int, k: int, t: float) -> float:
    return sum(math.comb(k, i) * t**i * (1 - t) ** (k - i) for i in range(m + 1))


@pytest.mark.parametrize("k", [16, 64, 128, 256])
@pytest.mark.parametrize("t", [0.3, 0.5, 0.8, 0.95])
@pytest.mark.parametrize("p", [1e-6, 1e-9, 1e-12])
def test_agreement_cutoff_bounds_the_binomial_tail(k: int, t: float, p: float) -> None:
    """P[Bin(K, t) <= cutoff] <= p (the Chernoff bound holds), the cutoff is below K t, and one more
    agreement would break the Chernoff bound (it is the largest such count)."""
    m = agreement_cutoff(k, t, p)
    if m < 0:  # nothing qualifies (too few positions): not even 0 agreements rule J >= t out
        assert math.exp(k * math.log(1 - t)) > p
        return
    assert m < k * t
    assert _binomial_cdf(m, k, t) <= p
    a = (m + 1) / k
    if a < t:
        div = (a * math.log(a / t) if a > 0 else 0.0) + (1 - a) * math.log((1 - a) / (1 - t))
        assert math.exp(-k * div) > p


def test_agreement_cutoff_edges() -> None:
    assert agreement_cutoff(4, 0.8, 1e-12) == -1  # too few positions to rule anything out
    assert agreement_cutoff(128, 1.0, 1e-12) == 127  # J = 1 agrees everywhere
    assert agreement_cutoff(128, 0.0, 1e-12) == -1


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = planted_documents(150, copies_per_family=(1, 3), words=(40, 120), edit_rates=(0.0, 0.3), n_singletons=300, seed=11)
    path = tmp_path_factory.mktemp("skip") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(d.texts)))
    return path


def _run(tmp: Path, data: Path, extra: str, verifier: str, threshold: str = "0.6") -> dict:
    cfg = tmp / f"job_{abs(hash((extra, verifier, threshold)))}.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 3
        threshold: {threshold}
        sources: [{{name: d, path: {data}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 4}}
        signature: {{type: fss, num_perm: 128}}
        blockers: [{{type: lsh_bands, bands: 32, rows: 2}}]
        verifier: {verifier}
        diagnostics: 0
    """)
        + extra
    )
    res = run_job(parse_job(cfg), write=False)
    return {
        "pairs": list(zip(res.pairs.left.tolist(), res.pairs.right.tolist(), res.pairs.score.tolist())),
        "labels": res.labels.tolist(),
        "report": res.report,
    }


@pytest.mark.parametrize("extra", ["workers: 2\n", "workers: 2\ntoken_memory_mb: 0\n"])
def test_skipped_candidates_are_below_the_threshold_and_the_answer_is_the_same(tmp_path: Path, corpus: Path, extra: str) -> None:
    """A loose banding (many low candidates): with skip_unlikely some are decided from the signatures,
    every one of them has an exact Jaccard below the threshold, and the pairs and clusters are those of
    the exact run (kept sets and streamed)."""
    exact = _run(tmp_path, corpus, extra, "{type: jaccard}")
    skip = _run(tmp_path, corpus, extra, "{type: jaccard, skip_unlikely: 1.0e-12}")
    assert skip["pairs"] == exact["pairs"] and skip["labels"] == exact["labels"]
    verify = {s["stage"]: s for s in skip["report"]["stages"]}["verify"]
    assert verify["decided_by_signatures"] > 0
    assert verify["rejected_pairs"] == {s["stage"]: s for s in exact["report"]["stages"]}["verify"]["rejected_pairs"]
    if "token_memory_mb" in extra:  # streamed: the decided pairs' records are not shingled again
        exact_verify = {s["stage"]: s for s in exact["report"]["stages"]}["verify"]
        assert verify["records_reshingled"] < exact_verify["records_reshingled"]


def test_skip_unlikely_decides_only_pairs_whose_exact_jaccard_is_below(tmp_path: Path, corpus: Path) -> None:
    """The decision itself against the exact scores of the same candidates (the naive reference)."""
    from er_framework.data import Batch
    from er_framework.engine import stages
    from er_framework.engine.engine import Engine
    from er_framework.engine.log import StageLog

    cfg = tmp_path / "d.yaml"
    cfg.write_text(
        f"seed: 3\nthreshold: 0.6\nsources: [{{name: d, path: {corpus}, id: id, fields: [text]}}]\n"
        "shingler: {type: char, k: 4}\nsignature: {type: fss, num_perm: 128}\n"
        "blockers: [{type: lsh_bands, bands: 32, rows: 2}]\n"
        "verifier: {type: jaccard, skip_unlikely: 1.0e-9}\n"
    )
    job = parse_job(cfg)
    engine = Engine(job)
    records, _ = stages.read(job)
    exact = stages.exact_duplicates(job, records)
    sub = records.take(exact.active)
    batch = Batch(records=sub, active=exact.active)
    stages.shingle_and_sign(engine, sub, batch, StageLog())
    cand, _ = stages.block(engine, batch, exact)
    local_of = np.full(len(records), -1)
    local_of[exact.active] = np.arange(len(exact.active))
    from er_framework.data import Pairs

    local = Pairs(local_of[cand.left], local_of[cand.right])
    decided = engine.verifier.decided_by_signatures(batch, local)
    assert decided is not None
    skip, estimate = decided
    scores = engine.verifier.score(batch, local)
    assert skip.sum() > 10 and (scores[skip] < 0.6).all() and (estimate[skip] < 0.6).all()


def test_skip_unlikely_is_not_used_with_an_automatic_threshold(tmp_path: Path, corpus: Path) -> None:
    got = _run(tmp_path, corpus, "workers: 1\n", "{type: jaccard, skip_unlikely: 1.0e-12}", threshold="auto")
    assert "decided_by_signatures" not in {s["stage"]: s for s in got["report"]["stages"]}["verify"]


@pytest.mark.parametrize("union", [20, 200, 3000])
def test_fss_agreements_at_the_threshold_spread_no_more_than_the_binomial(union: int) -> None:
    """The premise of agreement_cutoff's Chernoff bound for fss (the shipped documents job's signatures):
    over many pairs of exact Jaccard t, the number of agreeing positions has mean K t and a variance no
    larger than the binomial's K t (1 - t) (positions independent or negatively associated), for unions
    small enough that later rounds fill bins (20, 200 tokens) and large enough that round 0 does (3,000);
    and no pair falls to the cutoff."""
    from er_framework.kernels.csr import TokenSets
    from er_framework.kernels.fss import fss_signatures

    k, t, n_pairs = 128, 0.8, 600
    inter = int(round(t * union))
    only = (union - inter) // 2  # |A| = |B| = inter + only, J = inter / union
    assert inter / (inter + 2 * only) == pytest.approx(t, abs=0.03)
    rng = np.random.default_rng(union)
    sets = []
    for _ in range(n_pairs):  # fresh random tokens per pair: the pairs are independent draws
        tokens = rng.choice(np.iinfo(np.int64).max, size=inter + 2 * only, replace=False).astype(np.uint64)
        common, a_only, b_only = tokens[:inter], tokens[inter : inter + only], tokens[inter + only :]
        sets += [np.sort(np.concatenate([common, a_only])), np.sort(np.concatenate([common, b_only]))]
    indptr = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=indptr[1:])
    sig = fss_signatures(TokenSets(indptr, np.concatenate(sets)), k, seed=7)
    agree = (sig[0::2] == sig[1::2]).sum(axis=1)
    j = inter / (inter + 2 * only)
    binomial_var = k * j * (1 - j)
    assert abs(agree.mean() - k * j) < 4 * math.sqrt(binomial_var / n_pairs)
    assert agree.var(ddof=1) <= 1.3 * binomial_var  # the sample variance's standard error is ~6% here
    assert agree.min() > agreement_cutoff(k, j, 1e-12)
