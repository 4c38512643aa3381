"""Evaluation metrics (er_framework.evaluate.metrics): hand-computed examples, sources and ids, errors, end to end
(the truth shapes: test_truth.py)."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from evaluate_runs import PRED, ROOT, TRUTH, VERIFIED, cluster_truth, write_run, write_text

from er_framework.errors import InputError
from er_framework.evaluate.metrics import (
    adjusted_rand_index,
    bcubed,
    evaluate,
    format_table,
    write_metrics,
)
from er_framework.evaluate.truth import load_truth

# --------------------------------------------------------------------------
# reference implementations (direct definitions, O(n^2))
# --------------------------------------------------------------------------


def ari_direct(t: list, p: list) -> float:
    """ARI from the pair counts of its definition (Hubert & Arabie): pairs together in both, in each."""
    n = len(t)
    both = in_t = in_p = 0
    for i, j in itertools.combinations(range(n), 2):
        st, sp = t[i] == t[j], p[i] == p[j]
        both += st and sp
        in_t += st
        in_p += sp
    total = n * (n - 1) / 2
    expected = in_t * in_p / total
    maximum = (in_t + in_p) / 2
    return 1.0 if maximum == expected else (both - expected) / (maximum - expected)


def bcubed_direct(t: list, p: list) -> tuple[float, float]:
    n = len(t)
    prec = rec = 0.0
    for i in range(n):
        same_p = [j for j in range(n) if p[j] == p[i]]
        same_t = [j for j in range(n) if t[j] == t[i]]
        both = [j for j in same_p if t[j] == t[i]]
        prec += len(both) / len(same_p)
        rec += len(both) / len(same_t)
    return prec / n, rec / n


# --------------------------------------------------------------------------
# hand-computed example
# --------------------------------------------------------------------------


def test_hand_computed_cluster_truth(tmp_path: Path) -> None:
    """truth {a,b,c},{d,e},{f} vs predicted {a,b},{c,d,e},{f}; pairs.csv: ab, cd, de.

    B-cubed precision per record (|pred ∩ truth| / |pred|):
      a 2/2, b 2/2, c 1/3, d 2/3, e 2/3, f 1/1 -> sum 14/3 -> P = 14/18 = 7/9
    B-cubed recall per record (|pred ∩ truth| / |truth|):
      a 2/3, b 2/3, c 1/3, d 2/2, e 2/2, f 1/1 -> sum 14/3 -> R = 7/9, F1 = 7/9
    ARI: cells n_ij = 2 (ab), 1 (c), 2 (de), 1 (f) -> Σ C(n_ij,2) = 2;
      truth sizes 3,2,1 -> Σ C = 3+1 = 4; predicted sizes 2,3,1 -> Σ C = 1+3 = 4; C(6,2) = 15;
      E = 4·4/15 = 16/15, max = 4 -> ARI = (2 − 16/15) / (4 − 16/15) = (14/15)/(44/15) = 7/22
    Cluster-implied pairs: predicted ab, cd, ce, de; true ab, ac, bc, de -> TP 2: P = R = F1 = 1/2.
    Verified pairs ab, cd, de: TP ab, de -> P = 2/3, R = 2/4, F1 = 2·(2/3)(1/2)/(2/3 + 1/2) = 4/7.
    Reduction ratio: 5 candidates of C(6,2) = 15 -> 1 − 5/15 = 2/3.
    """
    out = write_run(tmp_path / "o", PRED, VERIFIED)
    m = evaluate(out, load_truth(cluster_truth(tmp_path)))
    c = m["clusters"]
    assert c["bcubed_precision"] == pytest.approx(7 / 9)
    assert c["bcubed_recall"] == pytest.approx(7 / 9)
    assert c["bcubed_f1"] == pytest.approx(7 / 9)
    assert c["adjusted_rand_index"] == pytest.approx(7 / 22)
    assert (c["records"], c["predicted_clusters"], c["true_clusters"]) == (6, 3, 3)

    order = sorted(TRUTH)
    t = [TRUTH[i] for i in order]
    p = [PRED[i] for i in order]
    assert ari_direct(t, p) == pytest.approx(7 / 22)
    assert bcubed_direct(t, p) == pytest.approx((7 / 9, 7 / 9))

    cp = m["pairwise"]["cluster_pairs"]
    assert (cp["predicted"], cp["true"], cp["true_positives"]) == (4, 4, 2)
    assert cp["precision"] == cp["recall"] == cp["f1"] == pytest.approx(0.5)
    vp = m["pairwise"]["verified_pairs"]
    assert (vp["predicted"], vp["true"], vp["true_positives"]) == (3, 4, 2)
    assert vp["precision"] == pytest.approx(2 / 3)
    assert vp["recall"] == pytest.approx(1 / 2)
    assert vp["f1"] == pytest.approx(float(Fraction(4, 7)))

    b = m["blocking"]
    assert b["possible_pairs"] == 15 and b["candidate_pairs"] == 5
    assert b["reduction_ratio"] == pytest.approx(2 / 3)
    assert b["pair_completeness"] is None and "candidates" in b["note"]
    assert m["truth"]["kind"] == "clusters" and m["truth"]["true_pairs"] == 4
    assert m["records"]["truth_only"]["count"] == 0 and m["records"]["output_only"]["count"] == 0

    table = format_table(m)
    assert "B-cubed precision" in table and "adjusted Rand index" in table and "0.3182" in table
    json.dumps(m, allow_nan=False)  # JSON-ready


def test_metric_functions_match_direct_definitions() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(2, 40))
        t = rng.integers(0, int(rng.integers(1, n + 1)), n)
        p = rng.integers(0, int(rng.integers(1, n + 1)), n) * 1000 + 5  # sparse, large labels
        assert adjusted_rand_index(t, p) == pytest.approx(ari_direct(list(t), list(p)))
        bp, br, bf = bcubed(t, p)
        assert (bp, br) == pytest.approx(bcubed_direct(list(t), list(p)))
        assert bf == pytest.approx(2 * bp * br / (bp + br))
        try:
            from sklearn.metrics import (
                adjusted_rand_score,  # optional cross-check, not a dependency
            )
        except ImportError:
            continue
        assert adjusted_rand_index(t, p) == pytest.approx(adjusted_rand_score(t, p))
    same = np.array([0, 0, 1, 2])
    assert adjusted_rand_index(same, same + 3) == 1.0
    assert adjusted_rand_index(np.arange(4), np.arange(4)) == 1.0  # all singletons
    assert bcubed(np.zeros(0, np.int64), np.zeros(0, np.int64)) == (None, None, None)


# --------------------------------------------------------------------------
# sources, missing records, candidates
# --------------------------------------------------------------------------


def test_link_mode_two_sources(tmp_path: Path) -> None:
    """A = {1,2,3}, B = {1,2,9}: ids '1' and '2' exist in both sources; records are (source, id)."""
    clusters = [("A", "1", 0), ("A", "2", 1), ("A", "3", 2), ("B", "1", 0), ("B", "2", 3), ("B", "9", 2)]
    pairs = [("A", "1", "B", "1"), ("A", "3", "B", "9")]
    out = write_run(tmp_path / "o", clusters, pairs, mode="link", candidate_pairs=4)
    truth = write_text(tmp_path / "t.csv", "left_source,left_id,right_source,right_id\nA,1,B,1\nA,2,B,2\n")
    m = evaluate(out, load_truth(truth))
    assert m["blocking"]["possible_pairs"] == 9  # |A| x |B|
    assert m["blocking"]["reduction_ratio"] == pytest.approx(1 - 4 / 9)
    vp = m["pairwise"]["verified_pairs"]
    assert (vp["true"], vp["true_positives"], vp["precision"], vp["recall"]) == (2, 1, 0.5, 0.5)
    # (A,2) and (B,2) are different records in different predicted clusters
    assert m["records"]["matched"] == 4

    # no source columns: ids '1'/'2' are ambiguous across the two sources
    ambiguous = write_text(tmp_path / "amb.csv", "left_id,right_id\n1,2\n")
    with pytest.raises(InputError) as e:
        evaluate(out, load_truth(ambiguous))
    assert "more than one" in str(e.value) and "left_source" in str(e.value)
    # ids that occur in one source only are looked up
    unique = write_text(tmp_path / "u.csv", "left_id,right_id\n3,9\n")
    m2 = evaluate(out, load_truth(unique))
    assert m2["pairwise"]["verified_pairs"]["true_positives"] == 1
    # or the source is given for a truth of one source
    m3 = evaluate(out, load_truth(ambiguous, source="A"))
    assert m3["records"]["matched"] == 2
    # an unknown source name
    bad = write_text(tmp_path / "bad.csv", "left_source,left_id,right_source,right_id\nAA,1,B,1\n")
    with pytest.raises(InputError, match="did you mean 'A'"):
        evaluate(out, load_truth(bad))


def test_link_and_dedup_possible_pairs(tmp_path: Path) -> None:
    clusters = [("A", "1", 0), ("A", "2", 0), ("B", "1", 1), ("B", "2", 2)]
    out = write_run(tmp_path / "o", clusters, [("A", "1", "A", "2")], mode="link_and_dedup", candidate_pairs=3)
    m = evaluate(out, load_truth(write_text(tmp_path / "t.csv", "source,id,cluster\nA,1,x\nA,2,x\n")))
    assert m["blocking"]["possible_pairs"] == 6  # within A (1) + within B (1) + across (4)
    assert m["blocking"]["reduction_ratio"] == pytest.approx(0.5)
    assert m["pairwise"]["verified_pairs"]["f1"] == 1.0


def test_missing_records_are_reported(tmp_path: Path) -> None:
    """Truth has g (not in the output, with a); output has f (not in the truth: a singleton)."""
    out = write_run(tmp_path / "o", PRED, VERIFIED)
    labels = {k: v for k, v in TRUTH.items() if k != "f"} | {"g": "T1"}
    m = evaluate(out, load_truth(cluster_truth(tmp_path, labels)))
    r = m["records"]
    assert r["truth_only"] == {"count": 1, "examples": ["s/g"]}
    assert r["output_only"] == {"count": 1, "examples": ["s/f"]}
    assert (r["output"], r["truth"], r["matched"]) == (6, 6, 5)
    # true pairs: T1 = {a,b,c,g} -> 6, T2 -> 1: g's 3 pairs count as missed
    assert m["truth"]["true_pairs"] == 7
    assert m["pairwise"]["cluster_pairs"]["recall"] == pytest.approx(2 / 7)
    # cluster metrics over the 6 output records, f a truth singleton -> identical to the first example
    assert m["clusters"]["adjusted_rand_index"] == pytest.approx(7 / 22)
    notes = " ".join(m["notes"])
    assert "not in the output" in notes and "truth singletons" in notes
    assert "truth only, e.g. s/g" in format_table(m)


def test_pair_completeness_from_candidates_file(tmp_path: Path) -> None:
    """Candidates ab, ac, cd (+ written pairs ab, cd, de) = {ab, ac, cd, de}: 3 of the 4 true pairs."""
    cands = [("s", "a", "s", "b"), ("s", "c", "s", "a"), ("s", "c", "s", "d")]
    out = write_run(tmp_path / "o", PRED, VERIFIED, candidates=cands)
    m = evaluate(out, load_truth(cluster_truth(tmp_path)))
    b = m["blocking"]
    assert b["candidates_considered"] == 4
    assert b["pair_completeness"] == pytest.approx(3 / 4)
    assert b["pair_quality"] == pytest.approx(3 / 4)
    m2 = evaluate(out, load_truth(write_text(tmp_path / "p.csv", "left_id,right_id\na,b\nb,c\n")))
    assert m2["blocking"]["pair_completeness"] == pytest.approx(1 / 2)


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------


def test_bad_input_errors(tmp_path: Path) -> None:
    out = write_run(tmp_path / "o", PRED, VERIFIED)
    truth = cluster_truth(tmp_path)
    with pytest.raises(InputError) as e:
        load_truth(truth, cluster_column="clustr")
    assert "'clustr' not found" in str(e.value) and "did you mean 'cluster'?" in str(e.value)
    with pytest.raises(InputError, match="did you mean 'id'"):
        load_truth(truth, id_column="ids")
    with pytest.raises(InputError) as e:
        load_truth(tmp_path / "truht.csv")
    assert "no such truth file" in str(e.value) and "did you mean 'truth.csv'" in str(e.value)
    with pytest.raises(InputError, match="cannot tell the truth's columns"):
        load_truth(write_text(tmp_path / "odd.csv", "foo,bar\n1,2\n"))
    with pytest.raises(InputError, match="empty"):
        load_truth(write_text(tmp_path / "empty.csv", ""))
    with pytest.raises(InputError, match="unsupported file type"):
        load_truth(write_text(tmp_path / "t.xlsx", "x"))
    with pytest.raises(InputError, match="id is"):
        load_truth(write_text(tmp_path / "noid.csv", "left_id,right_id\na,\n"))
    with pytest.raises(InputError, match="duplicated id"):
        load_truth(write_text(tmp_path / "dup.csv", "id,cluster\na,1\na,2\n"))
    with pytest.raises(InputError, match="listed more than once in the truth"):
        evaluate(out, load_truth(write_text(tmp_path / "dup2.csv", "source,id,cluster\ns,a,1\ns,a,2\n")))
    with pytest.raises(InputError, match="none of the 2 truth records"):
        evaluate(out, load_truth(write_text(tmp_path / "other.csv", "id,cluster\nx,1\ny,1\n")))
    with pytest.raises(InputError, match="no such output folder"):
        evaluate(tmp_path / "nope", load_truth(truth))
    empty_dir = tmp_path / "empty_out"
    empty_dir.mkdir()
    with pytest.raises(InputError, match="no clusters.csv"):
        evaluate(empty_dir, load_truth(truth))
    (out / "clusters.csv").write_text("source,idd,cluster_id\ns,a,0\n")
    with pytest.raises(InputError, match="did you mean 'idd'"):
        evaluate(out, load_truth(truth))


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def test_write_metrics(tmp_path: Path) -> None:
    out = write_run(tmp_path / "o", PRED, VERIFIED)
    truth = cluster_truth(tmp_path)
    m = evaluate(out, load_truth(truth))
    path = write_metrics(out, m)
    assert path == out / "evaluation.json"
    assert json.loads(path.read_text())["clusters"]["bcubed_f1"] == pytest.approx(7 / 9)
    assert not [p for p in out.iterdir() if p.name.startswith(".er-tmp")]


# --------------------------------------------------------------------------
# end to end
# --------------------------------------------------------------------------


def test_documents_job_against_planted_truth(tmp_path: Path) -> None:
    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job

    out = tmp_path / "docs"
    run_job(parse_job(ROOT / "configs/documents.yaml"), out)
    m = evaluate(out, load_truth(ROOT / "configs/data/docs_truth.csv"))
    vp = m["pairwise"]["verified_pairs"]
    assert m["truth"]["kind"] == "pairs" and vp["true"] == 50
    assert vp["recall"] == 1.0  # all 40 near-duplicates and 10 exact copies found
    assert m["clusters"]["bcubed_recall"] == 1.0
    assert m["records"]["truth_only"]["count"] == 0
    assert m["records"]["output"] == 270
    assert 0.99 < m["blocking"]["reduction_ratio"] < 1.0
    assert m["blocking"]["reduction_ratio"] == pytest.approx(1 - m["blocking"]["candidate_pairs"] / (270 * 269 / 2))


def _naive_per_source_pair(clusters, pairs, truth_pairs=None, truth_clusters=None):
    """Plain reference of ``per_source_pair``: sets of record pairs, grouped by their sources."""
    records = [(s, i) for s, i, _ in clusters]
    cid = {(s, i): c for s, i, c in clusters}
    listed = {frozenset({(a, b), (c, d)}) for a, b, c, d in pairs}
    in_clusters = {frozenset({x, y}) for x, y in itertools.combinations(records, 2) if cid[x] == cid[y]}
    if truth_pairs is not None:
        true = {frozenset({(a, b), (c, d)}) for a, b, c, d in truth_pairs}
    else:
        tc = {(s, i): c for s, i, c in truth_clusters}
        members = sorted(tc)
        true = {frozenset({x, y}) for x, y in itertools.combinations(members, 2) if tc[x] == tc[y]}

    def key(p):
        return tuple(sorted(r[0] for r in p))

    names = sorted({s for s, _, _ in clusters})
    out = {}
    for s, t in itertools.combinations_with_replacement(names, 2):
        row = {}
        for what, predicted in (("verified_pairs", listed), ("cluster_pairs", in_clusters)):
            pr = {p for p in predicted if key(p) == (s, t)}
            tr = {p for p in true if key(p) == (s, t)}
            row[what] = (len(pr), len(tr), len(pr & tr))
        if s != t or any(any(v[:2]) for v in row.values()):
            out[(s, t)] = row
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["pairs", "clusters"])
def test_per_source_pair_equals_naive_reference(tmp_path: Path, seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    names = ["A", "B", "C", "D"][: 3 + seed % 2]
    clusters = [(s, str(i), int(rng.integers(0, 12))) for s in names for i in range(8)]
    records = [(s, i) for s, i, _ in clusters]
    picks = rng.integers(0, len(records), size=(30, 2))
    pairs = sorted({(*records[a], *records[b]) for a, b in picks.tolist() if a < b})
    mode = "link_and_dedup" if seed % 3 == 0 else "link"
    out = write_run(tmp_path / "o", clusters, pairs, mode=mode, per_source=dict.fromkeys(names, 8))
    if kind == "pairs":
        tp = sorted({(*records[a], *records[b]) for a, b in rng.integers(0, len(records), size=(25, 2)).tolist() if a != b})
        tp.append(("A", "99", "B", "99"))  # a truth record absent from the output
        text = "left_source,left_id,right_source,right_id\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in tp)
        want = _naive_per_source_pair(clusters, pairs, truth_pairs=[p for p in tp if p[1] != "99"])
        want_extra = 1
    else:
        tc = [(s, i, int(rng.integers(0, 10))) for s, i in records if rng.random() < 0.8]
        text = "source,id,cluster\n" + "".join(f"{s},{i},{c}\n" for s, i, c in tc)
        want = _naive_per_source_pair(clusters, pairs, truth_clusters=tc)
        want_extra = 0
    m = evaluate(out, load_truth(write_text(tmp_path / "t.csv", text)))
    got = {}
    for row in m["per_source_pair"]:
        got[tuple(row["sources"])] = {
            k: (row[k]["predicted"], row[k]["true"], row[k]["true_positives"]) for k in ("verified_pairs", "cluster_pairs")
        }
    if want_extra:  # the A/99 - B/99 truth pair is a true A-B pair that no output record holds
        for k in ("verified_pairs", "cluster_pairs"):
            p, t, tp_ = want[("A", "B")][k]
            want[("A", "B")][k] = (p, t + 1, tp_)
    assert got == want
    # the rows add up to the overall counts
    for k in ("verified_pairs", "cluster_pairs"):
        assert sum(v[k][0] for v in got.values()) == m["pairwise"][k]["predicted"]
        assert sum(v[k][2] for v in got.values()) == m["pairwise"][k]["true_positives"]
    assert "A – B: pairs listed" in format_table(m)


def test_per_source_pair_only_with_two_to_ten_sources(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", {"1": 0, "2": 0}, [("1", "2")])
    assert evaluate(one, load_truth(write_text(tmp_path / "t.csv", "id,cluster\n1,x\n2,x\n")))["per_source_pair"] is None
    names = [f"S{i}" for i in range(11)]
    many = write_run(tmp_path / "many", [(s, f"{s}-1", 0) for s in names], [], mode="link")
    m = evaluate(many, load_truth(write_text(tmp_path / "t2.csv", "left_id,right_id\nS0-1,S1-1\n")))
    assert m["per_source_pair"] is None and any("at most 10" in n for n in m["notes"])


def test_dataset_folders_evaluate_as_the_files_they_replace(tmp_path: Path) -> None:
    """A run whose clusters, pairs and candidates are dataset folders (a Dask run's, issue 30) evaluates the same."""
    from tests.io.test_part_tables import as_datasets, documents_run

    out = documents_run(tmp_path)
    truth = load_truth(ROOT / "configs" / "data" / "docs_truth.csv")
    before = evaluate(out, truth)
    assert sorted(as_datasets(out)) == ["candidates", "clusters", "pairs"]
    after = evaluate(out, truth)
    for key in ("clusters", "pairwise", "records"):
        assert after[key] == before[key], key
    assert after["blocking"]["pair_completeness"] == before["blocking"]["pair_completeness"] is not None
