"""The shingle stage (engine/stages/shingling.py) on both cores and in bounded memory: the results do not
depend on workers, chunk size or the token budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from stage_runs import run_docs

import er_framework.engine.engine as engine_module
from er_framework.capabilities import MultisetSigning
from er_framework.kernels import char_shingles, hash_params, minhash_signatures
from er_framework.kernels.oph import oph_signatures


def signs_multisets(monkeypatch: pytest.MonkeyPatch, builder: type, multiset: bool) -> None:
    """Make the engine take ``builder`` for a builder with (``multiset``) or without the MultisetSigning ability."""
    real = engine_module.has

    def has(component: object, capability: type) -> bool:
        cls = component if isinstance(component, type) else type(component)
        if capability is MultisetSigning and issubclass(cls, builder):
            return multiset
        return real(component, capability)

    monkeypatch.setattr(engine_module, "has", has)


@pytest.mark.parametrize("signature", ["minhash", "oph", "fss"])
def test_results_identical_for_any_workers_chunk_and_token_budget(
    tmp_path: Path, corpus: Path, signature: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from er_framework.registry import default_registry

    builder = default_registry().get("signature", signature).cls
    base_pairs, base_labels, base_rep = run_docs(tmp_path, corpus, signature, "workers: 1\n")
    assert len(base_pairs) > 50  # the planted families are found
    n = len(base_labels)
    stages = {s["stage"]: s for s in base_rep["stages"]}
    # the builder takes multisets: counted with repeats; the sets (sorted from the multisets) fit the
    # budget and are kept, so verification does not shingle again
    assert stages["shingle"]["tokens_counted"] == "with repeats" and stages["shingle"]["token_sets_kept"] is True
    assert "records_reshingled" not in stages["verify"]
    variants = [
        ("workers: 2\n", True),
        ("workers: 2\nchunk_records: 37\n", True),
        ("workers: 1\nchunk_records: 1\n", True),
        # multisets signed, nothing kept (a zero budget): verification shingles the candidates again
        ("workers: 2\nchunk_records: 50\ntoken_memory_mb: 0\n", True),
        # ... and the budget exhausted part-way
        ("workers: 2\nchunk_records: 100\ntoken_memory_mb: 0.2\n", True),
        # a builder that needs sets: kept within the budget ...
        ("workers: 2\n", False),
        # ... streamed, the token sets recomputed for verification ...
        ("workers: 2\nchunk_records: 50\ntoken_memory_mb: 0\n", False),
        # ... and the budget exhausted part-way: switches to streaming
        ("workers: 2\nchunk_records: 100\ntoken_memory_mb: 0.2\n", False),
    ]
    for extra, multiset in variants:
        signs_multisets(monkeypatch, builder, multiset)
        pairs, labels, rep = run_docs(tmp_path, corpus, signature, extra)
        assert pairs == base_pairs, extra
        assert labels == base_labels, extra
        assert rep["diagnostics"] == base_rep["diagnostics"], extra
        assert rep["candidate_pairs"] == base_rep["candidate_pairs"], extra
        stages = {s["stage"]: s for s in rep["stages"]}
        assert stages["shingle"]["tokens_counted"] == ("with repeats" if multiset else "distinct")
        if "token_memory_mb" not in extra:
            assert stages["shingle"]["token_sets_kept"] is True and "records_reshingled" not in stages["verify"]
        else:
            assert stages["shingle"]["token_sets_kept"] is False and 0 < stages["verify"]["records_reshingled"] < n
        if multiset:  # the same counts (with repeats) whether the sets were kept or not
            assert stages["shingle"]["total_tokens"] == {s["stage"]: s for s in base_rep["stages"]}["shingle"]["total_tokens"], extra
    assert stages["shingle"]["token_sets_kept"] is False and stages["shingle"]["chunks"] == -(-n // 100)
    assert 0 < stages["verify"]["records_reshingled"] < n


def test_multiset_signatures_equal_set_signatures() -> None:
    rng = np.random.default_rng(8)
    texts = ["".join(rng.choice(list("ab cdé"), size=int(n))) for n in rng.integers(0, 80, 300)]
    sets = char_shingles(texts, 3)
    multi = char_shingles(texts, 3, unique=False)
    assert len(multi.tokens) > len(sets.tokens)  # repeats are there
    for i in range(len(texts)):
        assert np.array_equal(np.unique(multi.row(i)), sets.row(i))
    a, b = hash_params(32, 2)
    assert np.array_equal(minhash_signatures(multi, a, b), minhash_signatures(sets, a, b))
    assert np.array_equal(oph_signatures(multi, 32, 2), oph_signatures(sets, 32, 2))
    from er_framework.kernels.fss import fss_signatures

    assert np.array_equal(fss_signatures(multi, 32, 2), fss_signatures(sets, 32, 2))
    from er_framework.kernels import word_ngrams

    wsets, wmulti = word_ngrams(texts, 2), word_ngrams(texts, 2, unique=False)
    assert all(np.array_equal(np.unique(wmulti.row(i)), wsets.row(i)) for i in range(len(texts)))


def test_token_sets_kept_only_when_the_first_chunk_forecasts_they_fit(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder that needs sets (``budget``): kept when they fit; not kept at all when the first chunk's
    tokens per character forecast more than the budget; dropped part-way when the corpus outgrows the
    forecast. The pairs, clusters and diagnostics are the same every time."""
    import er_framework.engine.stages.shingling as pipeline
    from er_framework.registry import default_registry

    signs_multisets(monkeypatch, default_registry().get("signature", "minhash").cls, False)
    extra = "workers: 2\nchunk_records: 100\n"
    pairs, labels, rep = run_docs(tmp_path, corpus, "minhash", extra)
    stages = {s["stage"]: s for s in rep["stages"]}
    assert stages["shingle"]["token_sets_kept"] is True and "records_reshingled" not in stages["verify"]
    total, chunks = stages["shingle"]["total_tokens"], stages["shingle"]["chunks"]
    assert chunks >= 4
    budgets: list[int] = []
    real_budget = pipeline.token_budget

    def budget(mb: float) -> int:
        budgets.append(real_budget(mb))
        return total // 2  # tokens: two chunks or so fit, the whole corpus does not

    monkeypatch.setattr(pipeline, "token_budget", budget)
    for share, why in [(pipeline.KEEP_FORECAST_SHARE, "forecast"), (10.0**9, "part-way")]:
        monkeypatch.setattr(pipeline, "KEEP_FORECAST_SHARE", share)
        got_pairs, got_labels, got = run_docs(tmp_path, corpus, "minhash", extra)
        assert got_pairs == pairs and got_labels == labels, why
        assert got["diagnostics"] == rep["diagnostics"] and got["candidate_pairs"] == rep["candidate_pairs"], why
        stages = {s["stage"]: s for s in got["stages"]}
        assert stages["shingle"]["token_sets_kept"] is False and stages["verify"]["records_reshingled"] > 0, why
    # the real budget: token_memory_mb (2048 MB) and at most a share of the memory available
    assert budgets and all(0 < b <= 2048 * 2**20 // 8 for b in budgets)


def test_shingle_steps_by_characters_do_not_change_the_results(tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shingle stage's steps of about SHINGLE_STEP_CHARS characters (besides chunk_records): more
    steps, the same pairs, clusters, diagnostics and counts, with the sets kept or streamed."""
    import er_framework.engine.stages.shingling as pipeline

    pairs, labels, rep = run_docs(tmp_path, corpus, "fss", "workers: 2\n")
    one = {s["stage"]: s for s in rep["stages"]}["shingle"]
    assert one["chunks"] == 1
    monkeypatch.setattr(pipeline, "SHINGLE_STEP_CHARS", 5000)
    for extra in ("workers: 2\n", "workers: 1\ntoken_memory_mb: 0\n"):
        got_pairs, got_labels, got = run_docs(tmp_path, corpus, "fss", extra)
        shingle = {s["stage"]: s for s in got["stages"]}["shingle"]
        assert shingle["chunks"] > 20
        assert shingle["total_tokens"] == one["total_tokens"]
        assert shingle["token_sets_kept"] is ("token_memory_mb" not in extra)
        assert got_pairs == pairs and got_labels == labels
        assert got["diagnostics"] == rep["diagnostics"] and got["candidate_pairs"] == rep["candidate_pairs"]


def test_step_bounds() -> None:
    from er_framework.data import Records
    from er_framework.engine.stages.shingling import step_bounds

    texts = ["a" * n for n in (5, 5, 30, 1, 1, 1, 1, 8)]
    recs = Records(ids=[str(i) for i in range(8)], source=np.zeros(8, dtype=np.int64), source_names=["s"], fields={"text": texts})
    assert step_bounds(recs, 100, None) == [0, 8]
    assert step_bounds(recs, 3, None) == [0, 3, 6, 8]
    assert step_bounds(recs, 100, 12) == [0, 2, 3, 6, 8]  # the 30-character record is a step of its own
    assert step_bounds(recs, 4, 12) == [0, 2, 3, 4, 6, 8]
    empty = Records(ids=[], source=np.zeros(0, dtype=np.int64), source_names=["s"], fields={"text": []})
    assert step_bounds(empty, 10, 12) == [0, 0]


def test_a_pruning_that_empties_every_record_is_refused() -> None:
    from er_framework.engine.stages.shingling import check_pruning_leaves_shingles
    from er_framework.errors import InputError

    report = {"max_df": 2, "min_df": None, "shingles_pruned": 40, "vocabulary": 40, "most_frequent_df": [300]}
    check_pruning_leaves_shingles(300, 299, report)  # one record keeps a shingle: a warning of the report, not a refusal
    check_pruning_leaves_shingles(0, 0, report)  # no record had shingles: nothing pruning did
    with pytest.raises(InputError) as e:
        check_pruning_leaves_shingles(300, 300, report)
    assert "every one of the 300 records" in str(e.value) and "raise max_df" in str(e.value)
