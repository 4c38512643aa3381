"""``prune_shingles:``: shingles in too many records are dropped before signing and verification, the same way
on every path (token sets kept or streamed, any chunking, the Dask executor), equal to a naive reference."""

from __future__ import annotations

import json
import random
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.data import Records
from er_framework.engine.engine import Engine
from er_framework.errors import ConfigError, ErError
from er_framework.executors import run_job
from er_framework.index.build import build_index
from er_framework.synth.documents import planted_documents
from er_plugins.documents import CharShingler

DISCLAIMERS = [
    "This article is distributed under the terms of the wire service licence and may not be reproduced without "
    "permission of the copyright holder, all rights reserved by the agency and its partners worldwide.",
    "Opinions expressed by the contributors are their own and do not necessarily reflect the views of the "
    "publisher, the editorial board or any of the advertisers who support this independent newsroom.",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    """Planted near-duplicate families; 60% of the documents carry one of two long shared disclaimers."""
    d = planted_documents(40, copies_per_family=(1, 3), words=(25, 50), edit_rates=(0.0, 0.08), n_singletons=80, seed=11)
    rng = random.Random(4)
    texts = [t + " " + rng.choice(DISCLAIMERS) if rng.random() < 0.6 else t for t in d.texts]
    ids = [f"d{i}" for i in range(len(texts))]
    path = tmp_path_factory.mktemp("prune") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)), encoding="utf-8")
    return path, ids, texts


def _job(tmp: Path, data: Path, extra: str = "", prune: str = "prune_shingles: {max_df: 0.2, max_df_floor: 1}") -> Path:
    cfg = tmp / f"job_{abs(hash((extra, prune)))}.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 5
        threshold: 0.5
        sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
        exact_duplicates: false
        shingler: {{type: char, k: 5}}
        signature: {{type: minhash, num_perm: 128}}
        blockers: [{{type: lsh_bands, target_recall: 0.99}}]
        verifier: {{type: jaccard}}
        cluster: {{type: connected_components}}
        diagnostics: 0
    """)
        + prune
        + "\n"
        + extra
    )
    if "signature:" in extra:  # the extra lines choose another signature
        cfg.write_text(cfg.read_text().replace("signature: {type: minhash, num_perm: 128}\n", "", 1))
    return cfg


def _naive(texts: list[str], max_df: float) -> tuple[dict[tuple[int, int], float], int, float]:
    """Every pair's Jaccard on the pruned shingle sets, the number of pruned shingles and the share of tokens pruned."""
    sh = CharShingler(CharShingler.Params(k=5))
    ts = sh.shingle(Records.from_columns([str(i) for i in range(len(texts))], {"text": texts}))
    sets = [set(int(x) for x in ts.row(i)) for i in range(len(texts))]
    df = Counter(t for s in sets for t in s)
    limit = max(1, int(max_df * len(texts) + 1e-9))
    gone = {t for t, c in df.items() if c > limit}
    pruned = [s - gone for s in sets]
    pairs = {}
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            union = len(pruned[i] | pruned[j])
            pairs[(i, j)] = len(pruned[i] & pruned[j]) / union if union else 0.0
    share = sum(len(s & gone) for s in sets) / sum(len(s) for s in sets)
    return pairs, len(gone), share


def _pairs(res) -> dict[tuple[int, int], float]:  # type: ignore[no-untyped-def]
    return {(int(a), int(b)): float(s) for a, b, s in zip(res.pairs.left, res.pairs.right, res.pairs.score)}


def test_pruned_scores_equal_the_naive_reference(tmp_path: Path, corpus: tuple[Path, list[str], list[str]]) -> None:
    data, _, texts = corpus
    res = run_job(parse_job(_job(tmp_path, data)), write=False)
    naive, n_gone, share = _naive(texts, 0.2)
    got = _pairs(res)
    assert got, "the planted families are found"
    for pair, score in got.items():
        assert score == pytest.approx(naive[pair], abs=1e-12)
    want = {p for p, s in naive.items() if s >= 0.5}
    assert len(want & set(got)) >= 0.97 * len(want) and set(got) <= want
    prune = next(s for s in res.report["stages"] if s["stage"] == "prune")
    assert prune["shingles_pruned"] == n_gone > 0
    assert prune["token_share_pruned"] == pytest.approx(share, abs=1e-4)
    assert prune["records_counted"] == len(texts) and prune["max_records"] == int(0.2 * len(texts))


def test_the_disclaimer_no_longer_joins_stories(tmp_path: Path, corpus: tuple[Path, list[str], list[str]]) -> None:
    """Without pruning, documents sharing only the disclaimer score higher than with it: the lift is gone."""
    data, _, texts = corpus
    plain, _, _ = _naive(texts, 1.0)
    pruned, _, _ = _naive(texts, 0.2)
    with_d = [i for i, t in enumerate(texts) if DISCLAIMERS[0] in t]
    lifted = [(i, j) for i in with_d for j in with_d if i < j]
    assert sum(plain[p] for p in lifted) / len(lifted) > 0.25 > sum(pruned[p] for p in lifted) / len(lifted)
    plain_res = run_job(parse_job(_job(tmp_path, data, prune="")), write=False)
    pruned_res = run_job(parse_job(_job(tmp_path, data)), write=False)
    assert plain_res.report["candidate_pairs"] > pruned_res.report["candidate_pairs"]


@pytest.mark.parametrize(
    "extra", ["token_memory_mb: 0\n", "chunk_records: 7\n", "workers: 1\n", "token_memory_mb: 0\nsignature: {type: fss, num_perm: 128}\n"]
)
def test_kept_or_streamed_any_chunking_same_answer(tmp_path: Path, corpus: tuple[Path, list[str], list[str]], extra: str) -> None:
    data, _, _ = corpus
    sig = "signature: {type: fss, num_perm: 128}\n" if "fss" in extra else ""
    base = run_job(parse_job(_job(tmp_path, data, sig)), write=False)
    other = run_job(parse_job(_job(tmp_path, data, extra)), write=False)
    assert _pairs(other) == _pairs(base)
    assert other.labels.tolist() == base.labels.tolist()
    keys = ("shingles_pruned", "token_share_pruned", "record_share_pruned", "records_pruned", "records_emptied", "vocabulary")
    prune = [{k: next(s for s in r.report["stages"] if s["stage"] == "prune")[k] for k in keys} for r in (base, other)]
    assert prune[0] == prune[1]


def test_dask_executor_prunes_the_same(tmp_path: Path, corpus: tuple[Path, list[str], list[str]], dask_cluster: LocalCluster) -> None:
    data, _, _ = corpus
    local_out, dask_out = tmp_path / "local", tmp_path / "dask"
    run_job(parse_job(_job(tmp_path, data)), local_out)
    run_job(
        parse_job(_job(tmp_path, data, f"executor: {{type: dask, address: '{dask_cluster.scheduler_address}', partition_mb: 0.002}}\n")),
        dask_out,
    )
    for name in ("pairs.csv", "clusters.csv"):
        assert (local_out / name).read_bytes() == (dask_out / name).read_bytes()
    reps = [json.loads((o / "report.json").read_text()) for o in (local_out, dask_out)]
    prune = [next(s for s in r["stages"] if s["stage"] == "prune") for r in reps]
    assert reps[1]["executor"]["partitions"] > 1
    for key in ("shingles_pruned", "vocabulary", "token_share_pruned", "record_share_pruned", "records_emptied"):
        assert prune[0][key] == prune[1][key], key


@pytest.mark.parametrize(
    "prune, needle",
    [
        ("prune_shingles: {max_df: 0}", "max_df must be a share"),
        ("prune_shingles: {max_df: 1.5}", "max_df must be a share"),
        ("prune_shingles: {max_df: true}", "max_df"),
        ("prune_shingles: {min_df: 1.0}", "min_df must be a share"),
        ("prune_shingles: {}", "needs max_df or min_df"),
        ("prune_shingles: {max_dff: 0.1}", "max_dff"),
        # settings that guarantee no shared shingle (issue 31): refused before any work
        ("prune_shingles: {max_df: 1}", "drops every shingle that two records share"),
        ("prune_shingles: {max_df: 3, min_df: 4}", "min_df = 4 is above max_df = 3"),
    ],
)
def test_bad_settings_are_named(tmp_path: Path, corpus: tuple[Path, list[str], list[str]], prune: str, needle: str) -> None:
    data, _, _ = corpus
    with pytest.raises(ConfigError) as err:
        parse_job(_job(tmp_path, data, prune=prune))
    assert needle in str(err.value) and "prune_shingles" in str(err.value)


def test_a_job_without_shingler_cannot_prune(tmp_path: Path) -> None:
    data = tmp_path / "c.csv"
    data.write_text("id,name\n1,a\n2,b\n")
    cfg = tmp_path / "j.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        threshold: 0.5
        sources: [{{name: c, path: {data}, id: id, fields: [name]}}]
        blockers: [{{type: field_hash, key: name}}]
        verifier: {{type: field_score, fields: {{name: jaro_winkler}}}}
        prune_shingles: {{max_df: 0.1}}
    """)
    )
    with pytest.raises(ConfigError) as err:
        parse_job(cfg)
    assert "prune_shingles drops shingles, but the job has no 'shingler'" in str(err.value)


def test_an_index_refuses_pruning(tmp_path: Path, corpus: tuple[Path, list[str], list[str]]) -> None:
    data, _, _ = corpus
    job = parse_job(_job(tmp_path, data))
    with pytest.raises(ErError) as err:
        build_index(job, tmp_path / "i.db")
    text = str(err.value)
    assert "prune_shingles drops shingles by how many records of the whole corpus hold them" in text
    assert "--model FILE, which holds the dropped shingles" in text
    # with a model holding the dropped shingles (a run's), pruning is no reason to refuse
    model = run_job(job, write=False).model
    assert model is not None and model.pruned is not None and len(model.pruned)
    assert not [m for m in Engine(job, model).lookup_refusals() if "prune_shingles" in m]
    assert [m for m in Engine(job).lookup_refusals() if "prune_shingles" in m]


def test_counts_beyond_the_memory_are_refused_with_a_clear_error(
    tmp_path: Path, corpus: tuple[Path, list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vocabulary too large for the memory still available stops the prune stage with an input error
    (what, how much, the fix), not a MemoryError or a swapping machine."""
    from er_framework.engine.stages import shingling

    data, _, _ = corpus
    monkeypatch.setattr(shingling, "available_memory", lambda: 100_000)  # 100 KB left
    with pytest.raises(ErError) as err:
        run_job(parse_job(_job(tmp_path, data)), write=False)
    text = str(err.value)
    assert "counting the shingles of" in text and "more than this process can hold" in text
    assert "remove prune_shingles" in text
    monkeypatch.setattr(shingling, "available_memory", lambda: None)  # unknown: no limit
    assert run_job(parse_job(_job(tmp_path, data)), write=False).report["stages"]
