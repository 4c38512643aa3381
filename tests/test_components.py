"""Built-in components pass the plugin contract checks; clustering is checked against networkx."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.components import FAMILIES, Context, GoldenRule, GoldenValues
from er_framework.data import Batch, Pairs, Records
from er_framework.kernels.graph import canonical_labels, connected_component_labels
from er_framework.testing import (
    check_blocker,
    check_shingler,
    check_signature_builder,
    check_verifier,
    sample_records,
)
from er_plugins.clusterers import ConnectedComponents, LabelPropagation, Louvain
from er_plugins.documents import CharShingler, JaccardVerifier, LshBands, MinHash, WordShingler


@pytest.mark.parametrize(
    "shingler", [CharShingler(CharShingler.Params(k=3)), CharShingler(), WordShingler(), WordShingler(WordShingler.Params(n=1))]
)
def test_shinglers_meet_the_contract(shingler) -> None:
    check_shingler(shingler)


def test_char_shingler_options() -> None:
    recs = Records.from_columns(["a", "b"], {"text": ["Hello   WORLD", "hello world"]})
    on = CharShingler(CharShingler.Params(k=3)).shingle(recs)
    assert on.row(0).tolist() == on.row(1).tolist()
    off = CharShingler(CharShingler.Params(k=3, lowercase=False, fold_whitespace=False)).shingle(recs)
    assert off.row(0).tolist() != off.row(1).tolist()
    # NFKC folds the ligature "ﬁ" into "fi" (casefold would too: test with lowercase off)
    lig = Records.from_columns(["a", "b"], {"text": ["ﬁne", "fine"]})
    nfkc = CharShingler(CharShingler.Params(k=2, lowercase=False)).shingle(lig)
    assert nfkc.row(0).tolist() == nfkc.row(1).tolist()
    raw = CharShingler(CharShingler.Params(k=2, lowercase=False, nfkc=False)).shingle(lig)
    assert raw.row(0).tolist() != raw.row(1).tolist()


def test_minhash_meets_the_contract_and_uses_the_job_seed() -> None:
    ts = CharShingler().shingle(sample_records())
    sig = check_signature_builder(MinHash(MinHash.Params(num_perm=32)), ts)
    assert sig.values.shape == (len(ts), 32) and sig.values.dtype == np.uint32
    other = MinHash(MinHash.Params(num_perm=32), Context(seed=99)).build(ts)
    assert not np.array_equal(other.values, sig.values)
    own = MinHash(MinHash.Params(num_perm=32, seed=99), Context(seed=1)).build(ts)
    assert np.array_equal(own.values, other.values)


@pytest.mark.parametrize("cross", [False, True])
def test_lsh_and_jaccard_meet_the_contract(cross: bool) -> None:
    recs = sample_records(n_sources=2 if cross else 1)
    ts = CharShingler(CharShingler.Params(k=3)).shingle(recs)
    sig = MinHash(MinHash.Params(num_perm=64)).build(ts)
    batch = Batch(records=recs, tokens=ts, signatures=sig, cross_source_only=cross)
    blocker = LshBands(LshBands.Params(bands=32, rows=2))
    pairs = batch.allowed(check_blocker(blocker, batch))
    # the identical documents r0 and r8 are candidates (unless same-source in link mode)
    assert (0, 8) in set(zip(pairs.left.tolist(), pairs.right.tolist())) or cross
    # empty texts are never bucketed together
    empty = np.flatnonzero(ts.sizes == 0)
    assert not np.isin(pairs.left, empty).any() and not np.isin(pairs.right, empty).any()
    check_verifier(JaccardVerifier(JaccardVerifier.Params(threshold=0.5)), batch, pairs)
    rep = blocker.block(batch).report
    assert rep["bands"] == 32 and rep["rows"] == 2


def test_lsh_reports_its_choice_of_bands() -> None:
    recs = sample_records()
    ts = CharShingler().shingle(recs)
    sig = MinHash(MinHash.Params(num_perm=128)).build(ts)
    blocker = LshBands(LshBands.Params(), Context(threshold=0.8))
    rep = blocker.block(Batch(records=recs, tokens=ts, signatures=sig)).report
    assert rep["bands"] * rep["rows"] <= 128
    assert rep["p_candidate_at_threshold"] >= 0.95


# ---------------------------------------------------------------- clustering


def nx_components(n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(left.tolist(), right.tolist()))
    labels = np.empty(n, dtype=np.int64)
    for comp in nx.connected_components(g):
        m = np.fromiter(comp, dtype=np.int64)
        labels[m] = m.min()
    return labels


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=120))
    )
)
def test_connected_components_match_networkx(case) -> None:
    n, edges = case
    left = np.array([e[0] for e in edges], dtype=np.int64)
    right = np.array([e[1] for e in edges], dtype=np.int64)
    assert np.array_equal(connected_component_labels(n, left, right), nx_components(n, left, right))


def test_long_chain_converges() -> None:
    n = 100_000
    left = np.arange(n - 1)
    right = left + 1
    perm = np.random.default_rng(0).permutation(n)
    labels = connected_component_labels(n, perm[left], perm[right])
    assert len(np.unique(labels)) == 1


def test_canonical_labels_order_of_first_appearance() -> None:
    assert canonical_labels([7, 7, 3, 9, 3]).tolist() == [0, 0, 1, 2, 1]


def bridged_cliques() -> Pairs:
    """Two 6-cliques joined by one weak bridge: the chaining case of connected components."""
    edges = []
    for base in (0, 6):
        for i in range(6):
            for j in range(i + 1, 6):
                edges.append((base + i, base + j, 0.95))
    edges.append((5, 6, 0.81))
    left, right, score = map(np.array, zip(*edges))
    return Pairs(left, right, score.astype(float)).normalized()


@pytest.mark.parametrize("cls", [Louvain, LabelPropagation])
def test_community_detection_splits_a_bridge(cls) -> None:
    pairs = bridged_cliques()
    n = 14  # two singletons at the end
    labels = canonical_labels(cls(cls.Params(), Context(seed=3)).cluster(n, pairs))
    assert len(set(labels[:6].tolist())) == 1 and len(set(labels[6:12].tolist())) == 1
    assert labels[0] != labels[6]
    assert labels[12] != labels[13] and labels[12] not in labels[:12]
    cc = canonical_labels(ConnectedComponents().cluster(n, pairs))
    assert len(set(cc[:12].tolist())) == 1


def test_community_detection_is_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(1)
    left = rng.integers(0, 300, 1500)
    right = rng.integers(0, 300, 1500)
    pairs = Pairs(left, right, rng.uniform(0.8, 1.0, 1500)).normalized()
    for cls in (Louvain, LabelPropagation):
        a = cls(cls.Params(seed=5)).cluster(300, pairs)
        b = cls(cls.Params(seed=5)).cluster(300, pairs)
        assert np.array_equal(a, b)


@pytest.mark.parametrize("max_chars", [1, 7, 50, 10_000])
def test_chunked_shingling_equals_whole_batch(max_chars: int) -> None:
    from er_framework.kernels import char_shingles, word_ngrams
    from er_plugins.documents import shingle_in_chunks

    texts = [r or "" for r in sample_records().fields["text"]] * 3
    for fn in (lambda t: char_shingles(t, 4), lambda t: word_ngrams(t, 2)):
        assert shingle_in_chunks(texts, fn, max_chars=max_chars).equals(fn(texts))


def test_golden_values_best_prefers_score_then_priority_then_input_order() -> None:
    # clusters: rows [0, 2, 4], [1, 3], [5] (row 5 missing)
    values = np.array(["a", "b", "cc", "d", "e", None], dtype=object)
    gv = GoldenValues(
        starts=np.array([0, 3, 5, 6]),
        members=np.array([0, 2, 4, 1, 3, 5]),
        values=values,
        codes=np.array([0, 1, 2, 3, 4, -1]),
        lengths=np.array([1, 1, 2, 1, 1, 0]),
        priority=np.array([1, 0, 1, 0, 0, 0]),
    )
    assert gv.clusters == 3 and gv.cluster_of_members().tolist() == [0, 0, 0, 1, 1, 2]
    assert gv.best(np.array([1.0, 0, 5, 0, 0, 9])).tolist() == [2, 1, -1]  # the highest score; a missing value never
    assert gv.best(np.zeros(6)).tolist() == [4, 1, -1]  # ties: priority 0 (row 4), then the first row (1 before 3)
    assert gv.best(np.array([np.nan, 0, np.nan, np.nan, np.nan, 0])).tolist() == [4, 1, -1]  # NaN loses to a number
    fam = FAMILIES["golden_rule"]
    assert fam.base is GoldenRule and fam.hook == "er_register_golden_rules" and fam.sections == () and fam.shape is not None
