"""Evaluation of a run's outputs against ground truth (``er evaluate``).

The truth is read by :func:`er_framework.evaluate.truth.load_truth` (its shapes: pairs or clusters).

A record is identified by ``(source, id)``. A truth without a source column
uses the ``source=`` given, else the output's only source; with several
output sources each truth id is looked up among them and must belong to
exactly one (else an error tells how to fix the truth file).

Metrics (:func:`evaluate`), over the union of output and truth records
(a record absent from the truth is a singleton of the truth; a record absent
from the output is never predicted to match anything):

* **blocking** – reduction ratio ``1 - candidate_pairs / possible_pairs``
  (``report.json``; possible pairs: dedup n(n-1)/2, link |A|·|B|,
  link_and_dedup n(n-1)/2 = within- plus cross-source pairs), and, when the
  output folder holds ``candidates.csv``/``.parquet`` (columns
  ``left_source,left_id,right_source,right_id``), pair completeness
  ``|C ∩ T| / |T|`` and pair quality ``|C ∩ T| / |C|`` where C = candidates ∪
  written pairs (exact duplicates are found by hashing before blocking and
  need not appear among the candidates);
* **pairwise** – precision, recall and F1 of the written pairs
  (``pairs.csv``) and of the cluster-implied pairs (all within-cluster pairs
  of ``clusters.csv``) against the true pairs;
* **per source pair** (two to :data:`SOURCE_PAIR_MAX` output sources) – the
  same pairwise precision, recall and F1 for the pairs of each pair of
  sources (A–B, A–C, B–C, …; within one source too when there are such
  pairs), each pair counted under its two records' sources;
* **clusters** – B-cubed precision/recall/F1 (per-record averages, singletons
  included) and the adjusted Rand index, over the records of
  ``clusters.csv``; truth records missing from the output are left out (and
  reported), output records missing from the truth are truth singletons.

Everything is vectorized (ids factorized with pyarrow, counts by sorting
int64 keys): a million records evaluate in seconds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from er_framework.errors import InputError, Problem, choices_text, did_you_mean
from er_framework.evaluate.truth import Truth, load_truth
from er_framework.io.output_read import find_table, large_strings, read_output_columns
from er_framework.io.output_write import write_files
from er_framework.io.outputs import OutputStage, recover
from er_framework.io.report_json import check_report
from er_framework.io.table_file import no_such_path_problem
from er_framework.kernels.arrow import to_numpy
from er_framework.kernels.graph import connected_component_labels

__all__ = [
    "SOURCE_PAIR_MAX",
    "adjusted_rand_index",
    "bcubed",
    "contingency",
    "evaluate",
    "format_table",
    "write_metrics",
]

Int64Array = npt.NDArray[np.int64]

#: How many example records are listed for missing records.
EXAMPLES = 5


# --------------------------------------------------------------------------
# vectorized helpers
# --------------------------------------------------------------------------


def _factorize(parts: Sequence[Any]) -> tuple[list[Int64Array], list[str | None]]:
    """Integer codes of string arrays in one shared code space (``-1`` = missing).

    Returns the codes of every part and the distinct values (index = code).
    """
    arrays = [large_strings(p) for p in parts]
    lengths = [len(a) for a in arrays]
    if sum(lengths) == 0:
        return [np.zeros(0, dtype=np.int64) for _ in parts], []
    combined = pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]
    enc = pc.dictionary_encode(combined)
    codes = np.asarray(to_numpy(enc.indices, null=-1), dtype=np.int64)
    values = enc.dictionary.to_pylist()
    out = []
    start = 0
    for n in lengths:
        out.append(codes[start : start + n])
        start += n
    return out, values


def _sorted_runs(keys: Int64Array) -> tuple[Int64Array, Int64Array]:
    """Distinct values of ``keys`` and their counts (np.sort + neighbour comparison)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    s = np.sort(keys)
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    counts = np.diff(np.append(starts, len(s)))
    return s[starts], counts.astype(np.int64)


def _pairs_of(counts: Int64Array) -> int:
    """Sum of C(m, 2) over the counts, as an exact Python int."""
    c = counts.astype(np.int64)
    return int((c * (c - 1) // 2).sum())


def _ratio(num: float, den: float) -> float | None:
    return float(num) / float(den) if den else None


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _prf(tp: int, predicted: int, true: int) -> dict[str, Any]:
    p = _ratio(tp, predicted)
    r = _ratio(tp, true)
    return {"predicted": int(predicted), "true": int(true), "true_positives": int(tp), "precision": p, "recall": r, "f1": _f1(p, r)}


def _pair_keys(left: Int64Array, right: Int64Array, n: int) -> Int64Array:
    """Unordered pair keys ``min * n + max`` (self pairs must be removed first)."""
    lo = np.minimum(left, right).astype(np.int64)
    hi = np.maximum(left, right).astype(np.int64)
    return lo * np.int64(n) + hi


def _count_in(sorted_unique: Int64Array, keys: Int64Array) -> int:
    """How many of ``keys`` occur in ``sorted_unique``."""
    if len(sorted_unique) == 0 or len(keys) == 0:
        return 0
    pos = np.searchsorted(sorted_unique, keys)
    pos[pos == len(sorted_unique)] = 0
    return int((sorted_unique[pos] == keys).sum())


def _compact(labels: Int64Array) -> Int64Array:
    """Labels renumbered 0..k-1 (bincount-based when the labels are small non-negative ints)."""
    labels = np.asarray(labels)
    if len(labels) == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(labels.min()), int(labels.max())
    if lo >= 0 and hi < 4 * len(labels) + 16:
        present = np.bincount(labels.astype(np.int64)) > 0
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[labels]
    values, _ = _sorted_runs(labels.astype(np.int64))
    return np.searchsorted(values, labels).astype(np.int64)


def contingency(truth: Int64Array, pred: Int64Array) -> tuple[Int64Array, Int64Array, Int64Array]:
    """Non-empty cells of the contingency table of two labelings (any int labels).

    Returns ``(n_ij, a_i, b_j)`` per cell: the cell's count, the size of its
    truth cluster and the size of its predicted cluster. Cells are counted by
    sorting int64 keys ``t * width + p`` (no O(n^2) loop).
    """
    if len(truth) == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    t = _compact(truth)
    p = _compact(pred)
    width = np.int64(p.max() + 1)
    cells, n_ij = _sorted_runs(t * width + p)
    a = np.bincount(t)
    b = np.bincount(p)
    return n_ij, a[cells // width], b[cells % width]


def bcubed(truth: Int64Array, pred: Int64Array) -> tuple[float | None, float | None, float | None]:
    """B-cubed precision, recall and F1 (per-record averages; None for no records).

    precision(r) = |pred(r) ∩ truth(r)| / |pred(r)|, recall(r) = |pred(r) ∩ truth(r)| / |truth(r)|;
    summed per contingency cell: P = Σ n_ij² / b_j / n, R = Σ n_ij² / a_i / n.
    """
    n = len(truth)
    if n == 0:
        return None, None, None
    n_ij, a, b = contingency(truth, pred)
    sq = n_ij.astype(np.float64) ** 2
    p = float((sq / b).sum() / n)
    r = float((sq / a).sum() / n)
    return p, r, _f1(p, r)


def adjusted_rand_index(truth: Int64Array, pred: Int64Array) -> float | None:
    """Adjusted Rand index (Hubert & Arabie) from the contingency table.

    ARI = (Σ C(n_ij,2) − E) / (½(Σ C(a_i,2) + Σ C(b_j,2)) − E), E = Σ C(a_i,2)·Σ C(b_j,2) / C(n,2).
    The denominator is 0 only when both labelings are all singletons or both
    one cluster (identical partitions): 1.0, as scikit-learn returns.
    """
    n = len(truth)
    if n == 0:
        return None
    n_ij, _, _ = contingency(truth, pred)
    index = _pairs_of(n_ij)
    sum_a = _pairs_of(np.bincount(_compact(truth)))
    sum_b = _pairs_of(np.bincount(_compact(pred)))
    total = n * (n - 1) // 2
    if total == 0:
        return 1.0
    expected = sum_a * sum_b / total
    maximum = (sum_a + sum_b) / 2
    if maximum == expected:
        return 1.0
    return float((index - expected) / (maximum - expected))


# --------------------------------------------------------------------------
# reading the output folder
# --------------------------------------------------------------------------


_PAIR_COLS = ("left_source", "left_id", "right_source", "right_id")


def _read_report(out: Path) -> tuple[dict[str, Any] | None, str | None]:
    p = out / "report.json"
    if not p.is_file():
        return None, f"no report.json in {str(out)!r}: the reduction ratio is not computed"
    try:
        report = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(
            Problem(where=str(p), message=f"cannot read report.json: {e}", fix="run the job again to rewrite its outputs")
        ) from None
    return check_report(report, p), None  # not an object, or a key of the wrong kind: not a report er wrote


def _possible_pairs(report: dict[str, Any]) -> tuple[int | None, str]:
    mode = report.get("mode")
    recs = report.get("records") or {}
    per_source = recs.get("per_source") if isinstance(recs, dict) else None
    total = recs.get("total") if isinstance(recs, dict) else None
    if isinstance(per_source, dict) and per_source:
        sizes = [int(v) for v in per_source.values()]
        total = sum(sizes) if total is None else int(total)
    else:
        sizes = [int(total)] if isinstance(total, int) else []
    if total is None:
        return None, "report.json has no record counts"
    n = int(total)
    if mode == "link":
        cross = (n * n - sum(s * s for s in sizes)) // 2
        what = " × ".join(f"{s:,}" for s in sizes) if len(sizes) == 2 else f"cross-source pairs of {len(sizes)} sources"
        return cross, f"link: {what}"
    if mode == "link_and_dedup":
        return n * (n - 1) // 2, "link_and_dedup: within- plus cross-source pairs, n(n-1)/2"
    return n * (n - 1) // 2, "dedup: n(n-1)/2"


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


def _source_codes(values: Sequence[str | None], names: list[str], where: str, what: str) -> Int64Array:
    """Source names -> index into ``names`` (``-1`` = None); unknown names raise InputError."""
    (codes,), distinct = _factorize([values])
    index = {name: i for i, name in enumerate(names)}
    unknown = [v for v in distinct if v is not None and v not in index]
    if unknown:
        shown = ", ".join(repr(v) for v in unknown[:EXAMPLES])
        more = f" and {len(unknown) - EXAMPLES} more" if len(unknown) > EXAMPLES else ""
        raise InputError(
            Problem(
                where=where,
                message=f"{what} names source(s) {shown}{more} that are not in the output; output sources: {choices_text(names)}",
                fix=f"{did_you_mean(str(unknown[0]), names)}use the source names of the job's "
                "sources (the 'source' column of clusters.csv)",
            )
        )
    mapping = np.array([index[v] if v is not None else -1 for v in distinct] + [-1], dtype=np.int64)
    return mapping[codes]  # code -1 picks the trailing -1


def _label(names: list[str], src: int, ident: str) -> str:
    return f"{names[src]}/{ident}" if 0 <= src < len(names) else ident


def evaluate(out_dir: str | Path, truth: Truth | str | Path) -> dict[str, Any]:
    """Metrics of the outputs in ``out_dir`` against ``truth`` (a :class:`Truth` or a truth file).

    Reads ``clusters.csv``/``.parquet`` (required), ``pairs.csv``/``.parquet``
    (required), ``report.json`` and ``candidates.csv``/``.parquet`` (both
    optional) and returns a JSON-ready dict with the sections ``truth``,
    ``records``, ``blocking``, ``pairwise``, ``clusters`` and ``notes`` (see
    the module docstring for the definitions). Undefined ratios are ``None``.
    """
    if not isinstance(truth, Truth):
        truth = load_truth(truth)
    # 1. read -------------------------------------------------------------
    recover(out_dir)  # a commit interrupted by a kill is completed first
    files = _read_output_files(out_dir)
    notes: list[str] = list(truth.notes)
    if files.report_note:
        notes.append(files.report_note)
    t_ids, t_srcs = _truth_ids_and_sources(truth)
    # 2. output records -------------------------------------------------
    recs = _index_records(files, t_ids)
    # 3. truth records: sources, then universe indices -------------------
    uni = _truth_universe(recs, truth, t_srcs, notes)
    # 4. truth labels over the universe ----------------------------------
    if truth.kind == "clusters":
        labels = _cluster_truth_labels(recs, uni, truth)
    else:
        labels = _pair_truth_labels(uni, truth, notes)
    # 5. predicted labels over the universe ------------------------------
    P = np.arange(uni.size, dtype=np.int64) + (int(recs.pred_codes.max()) + 1 if recs.n else 0)
    P[: recs.n] = recs.pred_codes
    pr = files.pr
    pred_keys = _pairs_to_universe(recs, uni.size, files.clusters_path, pr, 2, "pairs.csv", files.pairs_path)
    if len(pred_keys) != len(pr["left_id"]):
        notes.append(f"pairs.csv holds {len(pr['left_id']) - len(pred_keys)} repeated or self pair(s): counted once")
    # 6. metrics ----------------------------------------------------------
    pairwise, clusters_section = _pairwise_and_cluster_metrics(recs, uni, labels, P, pred_keys)
    per_source_pair = _per_source_pair(recs, uni, labels, P, pred_keys, notes)
    blocking = _blocking_metrics(files, recs, uni, labels, pred_keys)
    records = _records_section(recs, uni, truth, notes)

    truth_section = truth.describe()
    truth_section.update({"records": records["truth"], "true_pairs": labels.true_pairs})
    if labels.clusters_in_file is not None:
        truth_section["clusters"] = labels.clusters_in_file
    else:
        truth_section["components"] = len(_sorted_runs(labels.T[uni.in_truth])[0])
    return {
        "out_dir": str(files.out),
        "truth": truth_section,
        "records": records,
        "blocking": blocking,
        "pairwise": pairwise,
        "per_source_pair": per_source_pair,
        "clusters": clusters_section,
        "notes": notes,
    }


@dataclass
class _OutputFiles:
    """Step 1 of :func:`evaluate`: the tables of an output folder (string columns) and its report."""

    out: Path
    clusters_path: Path
    pairs_path: Path
    cand_path: Path | None
    cl: dict[str, pa.Array]
    pr: dict[str, pa.Array]
    cd: dict[str, pa.Array] | None
    report: dict[str, Any] | None
    report_note: str | None


def _read_output_files(out_dir: str | Path) -> _OutputFiles:
    """Check the output folder, then read clusters, pairs, candidates (if any) and report.json."""
    out = Path(out_dir)
    if not out.is_dir():
        what = "is not a folder" if out.exists() else "does not exist"
        raise InputError(
            no_such_path_problem(out, "output folder", "pass the folder written by er run (its --out)")
            if not out.exists()
            else Problem(where=str(out), message=f"{str(out)!r} {what}", fix="pass the folder written by er run")
        )
    clusters_path = find_table(out, "clusters")
    pairs_path = find_table(out, "pairs")
    missing = [n for n, p in (("clusters.csv", clusters_path), ("pairs.csv", pairs_path)) if p is None]
    if missing:
        raise InputError(
            [
                Problem(
                    where=str(out),
                    message=f"no {m} (or .parquet, or the dataset folder {m.split('.')[0]}/) in the output folder",
                    fix="run the job with this folder as --out first",
                )
                for m in missing
            ]
        )
    assert clusters_path is not None and pairs_path is not None
    cl = read_output_columns(clusters_path, ("source", "id", "cluster_id"))
    pr = read_output_columns(pairs_path, _PAIR_COLS)
    cand_path = find_table(out, "candidates")
    cd = read_output_columns(cand_path, _PAIR_COLS) if cand_path is not None else None
    report, report_note = _read_report(out)
    return _OutputFiles(out, clusters_path, pairs_path, cand_path, cl, pr, cd, report, report_note)


def _truth_ids_and_sources(truth: Truth) -> tuple[list[str], list[str | None]]:
    """Every id occurrence of the truth (a pairs truth: the left ids, then the right ids) and its
    source (``None``: unknown; ``truth.source`` fills those)."""
    if truth.kind == "clusters":
        t_ids: list[str] = truth.ids
        t_srcs: list[str | None] = truth.sources
    else:
        t_ids = truth.left_ids + truth.right_ids
        t_srcs = truth.left_sources + truth.right_sources
    if truth.source is not None:
        t_srcs = [truth.source if s is None else s for s in t_srcs]
    return t_ids, t_srcs


@dataclass
class _Records:
    """Steps 1-2 of :func:`evaluate`: the output records, and every id (output, truth, pairs,
    candidates) in one code space; a record's key is ``source * n_ids + id``."""

    n: int  # output records
    names: list[str]  # output source names (index = source code)
    osrc: Int64Array  # source code of each output record
    pred_codes: Int64Array  # predicted cluster code of each output record
    id_codes: list[Int64Array]  # output ids, truth ids, pairs left, pairs right[, candidates left, right]
    id_values: list[str | None]
    n_ids: int
    order: Int64Array  # output records in key order
    skey: Int64Array  # their keys, sorted

    @property
    def oid(self) -> Int64Array:
        return self.id_codes[0]

    def label(self, src: int, code: Any) -> str:
        return _label(self.names, src, self.id_values[code] or "")

    def locate(self, keys: Int64Array) -> tuple[Int64Array, npt.NDArray[np.bool_]]:
        """The output record of each key and whether there is one."""
        if self.n == 0:
            return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
        pos = np.searchsorted(self.skey, keys)
        pos[pos == self.n] = 0
        found = self.skey[pos] == keys
        return self.order[pos], found


def _index_records(files: _OutputFiles, t_ids: list[str]) -> _Records:
    """Factorize sources, cluster ids and all ids; refuse an output record listed twice."""
    cl, pr, cd = files.cl, files.pr, files.cd
    n = len(cl["id"])
    (osrc,), source_names_raw = _factorize([cl["source"]])
    names = [str(s) for s in source_names_raw]
    (pred_codes,), _ = _factorize([cl["cluster_id"]])
    id_parts = [cl["id"], t_ids, pr["left_id"], pr["right_id"]]
    if cd is not None:
        id_parts += [cd["left_id"], cd["right_id"]]
    id_codes, id_values = _factorize(id_parts)
    n_ids = max(len(id_values), 1)
    oid = id_codes[0]

    okey = osrc * np.int64(n_ids) + oid
    order = np.argsort(okey, kind="stable")
    skey = okey[order]
    if n > 1 and (dups := np.flatnonzero(skey[1:] == skey[:-1])).size:
        shown = ", ".join(repr(_label(names, int(osrc[order[i]]), id_values[oid[order[i]]] or "")) for i in dups[:EXAMPLES])
        raise InputError(
            Problem(
                where=str(files.clusters_path),
                message=f"{len(dups)} record(s) are listed more than once: {shown}",
                fix="clusters.csv must list every record exactly once; run the job again",
            )
        )
    return _Records(n, names, osrc, pred_codes, id_codes, id_values, n_ids, order, skey)


@dataclass
class _Universe:
    """Step 3 of :func:`evaluate`: the output records (indices ``0..n-1``) followed by the truth
    records absent from the output (``n..size-1``)."""

    tkey: Int64Array  # key of each truth id occurrence
    uidx: Int64Array  # its universe index
    extra_keys: Int64Array  # sorted keys of the truth records absent from the output
    size: int
    in_truth: npt.NDArray[np.bool_]  # per universe record: named by the truth


def _truth_universe(recs: _Records, truth: Truth, t_srcs: list[str | None], notes: list[str]) -> _Universe:
    """Resolve the truth's sources, then give every truth record its universe index."""
    tid = recs.id_codes[1]
    tsrc = _source_codes(t_srcs, recs.names, truth.path, "the truth")
    unknown = tsrc < 0
    if unknown.any():
        if len(recs.names) <= 1:
            tsrc[unknown] = 0
        else:
            tsrc[unknown] = _sources_of_ids(recs, tid[unknown], truth)
            notes.append(
                f"the truth has no source column: each truth id was matched to the one output source holding it ({', '.join(recs.names)})"
            )
    tkey = tsrc * np.int64(recs.n_ids) + tid
    tpos, tfound = recs.locate(tkey)
    extra_keys, _ = _sorted_runs(tkey[~tfound])
    m_extra = len(extra_keys)
    uidx = tpos.copy()
    if m_extra:
        uidx[~tfound] = recs.n + np.searchsorted(extra_keys, tkey[~tfound])
    size = recs.n + m_extra
    in_truth = np.zeros(size, dtype=bool)
    in_truth[uidx] = True
    return _Universe(tkey, uidx, extra_keys, size, in_truth)


def _sources_of_ids(recs: _Records, tid: Int64Array, truth: Truth) -> Int64Array:
    """The output source holding each id (of a truth without sources); an id held by several
    output sources raises InputError, one held by none gets ``len(names)`` (not in the output)."""
    names = recs.names
    per_id = np.bincount(recs.oid, minlength=recs.n_ids)
    src_of = np.full(recs.n_ids, len(names), dtype=np.int64)
    src_of[recs.oid] = recs.osrc
    counts = per_id[tid]
    if (counts > 1).any():
        amb = np.unique(tid[counts > 1])
        shown = ", ".join(repr(recs.id_values[i]) for i in amb[:EXAMPLES])
        raise InputError(
            Problem(
                where=truth.path,
                message=f"the truth has no source column, the output has {len(names)} sources "
                f"({choices_text(names)}) and {len(amb)} truth id(s) occur in more than one "
                f"of them: {shown}",
                fix="add the source of every id to the truth file (a 'source' column for "
                "a cluster truth, 'left_source' and 'right_source' for pairs)",
            )
        )
    return src_of[tid]


@dataclass
class _TruthLabels:
    """Step 4 of :func:`evaluate`: a truth cluster label for every universe record."""

    T: Int64Array
    true_pairs: int
    true_pair_keys: Int64Array | None  # a pairs truth: its sorted unordered pair keys
    clusters_in_file: int | None  # a cluster truth: the clusters it names


def _cluster_truth_labels(recs: _Records, uni: _Universe, truth: Truth) -> _TruthLabels:
    """Labels of a cluster truth (records without a cluster, or absent from it, are singletons)."""
    n_ids = recs.n_ids
    runs, cnt = _sorted_runs(uni.tkey)
    if (cnt > 1).any():
        dup = runs[cnt > 1]
        shown = ", ".join(repr(recs.label(int(k // n_ids), int(k % n_ids))) for k in dup[:EXAMPLES])
        raise InputError(
            Problem(
                where=truth.path,
                message=f"{len(dup)} record(s) are listed more than once in the truth: {shown}",
                fix="list every record once, with its cluster",
            )
        )
    (lab,), lab_values = _factorize([truth.labels])
    k = len(lab_values)
    T = np.arange(uni.size, dtype=np.int64) + k  # records without a truth cluster: singletons
    has = lab >= 0
    T[uni.uidx[has]] = lab[has]
    _, sizes = _sorted_runs(T)
    return _TruthLabels(T, _pairs_of(sizes), None, k)


def _pair_truth_labels(uni: _Universe, truth: Truth, notes: list[str]) -> _TruthLabels:
    """The pairs of a pairs truth, and their connected components as labels."""
    U = uni.size
    half = len(truth.left_ids)
    lu, ru = uni.uidx[:half], uni.uidx[half:]
    self_pairs = int((lu == ru).sum())
    if self_pairs:
        notes.append(f"{self_pairs:,} truth pair(s) pair a record with itself: ignored")
    keep = lu != ru
    true_pair_keys, cnt = _sorted_runs(_pair_keys(lu[keep], ru[keep], U))
    repeated = int((cnt - 1).sum())
    if repeated:
        notes.append(f"{repeated:,} truth pair(s) are listed more than once (either order): counted once")
    lo, hi = np.divmod(true_pair_keys, np.int64(U)) if U else (true_pair_keys, true_pair_keys)
    T = connected_component_labels(U, lo, hi)
    notes.append(
        "the truth lists pairs: pairwise metrics use exactly those pairs; the cluster metrics "
        "(B-cubed, ARI) use their connected components (transitive closure) as true clusters"
    )
    return _TruthLabels(T, len(true_pair_keys), true_pair_keys, None)


def _pairs_to_universe(
    recs: _Records, U: int, clusters_path: Path, cols: dict[str, pa.Array], first: int, what: str, path: Path
) -> Int64Array:
    """Sorted unique pair keys (universe indices) of a pairs table whose left/right id codes are
    ``recs.id_codes[first]`` and ``[first + 1]``; self pairs dropped, unknown records refused."""
    ls, rs = recs.id_codes[first], recs.id_codes[first + 1]
    lsrc = _source_codes(cols["left_source"], recs.names, str(path), what)
    rsrc = _source_codes(cols["right_source"], recs.names, str(path), what)
    li, lf = recs.locate(lsrc * np.int64(recs.n_ids) + ls)
    ri, rf = recs.locate(rsrc * np.int64(recs.n_ids) + rs)
    bad = ~(lf & rf) | (lsrc < 0) | (rsrc < 0)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise InputError(
            Problem(
                where=str(path),
                message=f"{int(bad.sum())} pair(s) name records that are not in "
                f"{clusters_path.name}, e.g. {recs.id_values[ls[j]]!r} – {recs.id_values[rs[j]]!r}",
                fix="the pairs and clusters must come from the same run; run the job again",
            )
        )
    selfp = li == ri
    keys, _ = _sorted_runs(_pair_keys(li[~selfp], ri[~selfp], max(U, 1)))
    return keys


def _true_positives(labels: _TruthLabels, U: int, keys: Int64Array) -> int:
    """How many of the pair ``keys`` are true pairs."""
    if labels.true_pair_keys is not None:
        return _count_in(labels.true_pair_keys, keys)
    lo, hi = np.divmod(keys, np.int64(max(U, 1)))
    return int((labels.T[lo] == labels.T[hi]).sum())


def _pairwise_and_cluster_metrics(
    recs: _Records, uni: _Universe, labels: _TruthLabels, P: Int64Array, pred_keys: Int64Array
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Step 6: the ``pairwise`` and ``clusters`` sections."""
    n, U, T = recs.n, uni.size, labels.T
    tv, pv = T[:n], P[:n]
    n_ij, _, _ = contingency(tv, pv)
    _, pred_sizes = _sorted_runs(recs.pred_codes)
    cluster_pairs = _pairs_of(pred_sizes)
    if labels.true_pair_keys is not None:
        lo, hi = np.divmod(labels.true_pair_keys, np.int64(max(U, 1)))
        tp_cluster = int((P[lo] == P[hi]).sum())
    else:
        tp_cluster = _pairs_of(n_ij)
    pairwise = {
        "verified_pairs": _prf(_true_positives(labels, U, pred_keys), len(pred_keys), labels.true_pairs),
        "cluster_pairs": _prf(tp_cluster, cluster_pairs, labels.true_pairs),
    }

    bp, br, bf = bcubed(tv, pv)
    clusters_section = {
        "records": n,
        "predicted_clusters": len(pred_sizes),
        "true_clusters": len(_sorted_runs(tv)[0]),
        "bcubed_precision": bp,
        "bcubed_recall": br,
        "bcubed_f1": bf,
        "adjusted_rand_index": adjusted_rand_index(tv, pv),
        "over": "the records of clusters.csv; records absent from the truth are truth singletons",
    }
    return pairwise, clusters_section


#: most output sources for which ``per_source_pair`` is computed (a table of labels x sources is counted)
SOURCE_PAIR_MAX = 10


class _BySourcePair:
    """Pair counts per pair of sources ``(s, t)``, ``s <= t``, of the universe records (source ``k`` = not in the output)."""

    def __init__(self, usrc: Int64Array, k: int) -> None:
        self.usrc, self.k = usrc, k

    def of_pairs(self, lo: Int64Array, hi: Int64Array) -> Int64Array:
        """A ``(k + 1) x (k + 1)`` table (upper triangle) of listed pairs of universe records."""
        w = self.k + 1
        a, b = self.usrc[lo], self.usrc[hi]
        return np.bincount(np.minimum(a, b) * w + np.maximum(a, b), minlength=w * w).reshape(w, w)

    def of_labels(self, labels: Int64Array) -> Int64Array:
        """The same table of the pairs inside the clusters of ``labels`` (one per universe record)."""
        w = self.k + 1
        lab = _compact(labels)
        table = np.bincount(lab * w + self.usrc, minlength=(int(lab.max()) + 1 if len(lab) else 0) * w).reshape(-1, w)
        out = np.zeros((w, w), dtype=np.int64)
        for s in range(w):
            out[s, s] = int((table[:, s] * (table[:, s] - 1) // 2).sum())
            for t in range(s + 1, w):
                out[s, t] = int((table[:, s] * table[:, t]).sum())
        return out


def _per_source_pair(
    recs: _Records, uni: _Universe, labels: _TruthLabels, P: Int64Array, pred_keys: Int64Array, notes: list[str]
) -> list[dict[str, Any]] | None:
    """Step 6: the ``per_source_pair`` section: precision, recall and F1 of the listed and the cluster pairs
    per pair of output sources (A–B, A–C, B–C, …; pairs within one source too when any are predicted or
    true). ``None`` with fewer than two or more than :data:`SOURCE_PAIR_MAX` output sources."""
    k = len(recs.names)
    if k < 2:
        return None
    if k > SOURCE_PAIR_MAX:
        notes.append(f"the output has {k} sources: metrics per pair of sources are given for at most {SOURCE_PAIR_MAX}")
        return None
    U, n = uni.size, recs.n
    usrc = np.full(U, k, dtype=np.int64)
    usrc[:n] = recs.osrc
    if len(uni.extra_keys):
        extra = uni.extra_keys // np.int64(recs.n_ids)
        usrc[n:] = np.where((extra >= 0) & (extra < k), extra, k)
    by = _BySourcePair(usrc, k)
    lo, hi = np.divmod(pred_keys, np.int64(max(U, 1)))
    listed = by.of_pairs(lo, hi)
    if labels.true_pair_keys is not None:
        tlo, thi = np.divmod(labels.true_pair_keys, np.int64(max(U, 1)))
        listed_tp = by.of_pairs(lo[np.isin(pred_keys, labels.true_pair_keys)], hi[np.isin(pred_keys, labels.true_pair_keys)])
        true = by.of_pairs(tlo, thi)
        same = P[tlo] == P[thi]
        cluster_tp = by.of_pairs(tlo[same], thi[same])
    else:
        hit = labels.T[lo] == labels.T[hi]
        listed_tp = by.of_pairs(lo[hit], hi[hit])
        true = by.of_labels(labels.T)
        width = np.int64(int(P.max()) + 1 if len(P) else 1)
        cluster_tp = by.of_labels(_compact(labels.T) * width + P)
    cluster = by.of_labels(P)
    rows = []
    for s in range(k):
        for t in range(s, k):
            if s == t and not (listed[s, s] or true[s, s] or cluster[s, s]):
                continue
            rows.append(
                {
                    "sources": [recs.names[s], recs.names[t]],
                    "verified_pairs": _prf(int(listed_tp[s, t]), int(listed[s, t]), int(true[s, t])),
                    "cluster_pairs": _prf(int(cluster_tp[s, t]), int(cluster[s, t]), int(true[s, t])),
                }
            )
    return rows


def _blocking_metrics(files: _OutputFiles, recs: _Records, uni: _Universe, labels: _TruthLabels, pred_keys: Int64Array) -> dict[str, Any]:
    """Step 6: the ``blocking`` section (reduction ratio; pair completeness with a candidates file)."""
    report, cd, cand_path = files.report, files.cd, files.cand_path
    blocking: dict[str, Any] = {
        "mode": None,
        "candidate_pairs": None,
        "possible_pairs": None,
        "reduction_ratio": None,
        "pair_completeness": None,
        "pair_quality": None,
        "candidates_file": None,
    }
    if report is not None:
        blocking["mode"] = report.get("mode")
        cand = report.get("candidate_pairs")
        possible, how = _possible_pairs(report)
        blocking["candidate_pairs"] = cand
        blocking["possible_pairs"] = possible
        blocking["possible_pairs_from"] = how
        if isinstance(cand, int) and possible:
            blocking["reduction_ratio"] = 1.0 - cand / possible
    if cd is not None and cand_path is not None:
        ckeys = _pairs_to_universe(recs, uni.size, files.clusters_path, cd, 4, cand_path.name, cand_path)
        union, _ = _sorted_runs(np.concatenate([ckeys, pred_keys]))
        tp = _true_positives(labels, uni.size, union)
        blocking["candidates_file"] = str(cand_path)
        blocking["candidates_considered"] = len(union)
        blocking["candidates_true"] = tp
        blocking["pair_completeness"] = _ratio(tp, labels.true_pairs)
        blocking["pair_quality"] = _ratio(tp, len(union))
        blocking["note"] = "candidates = the candidates file ∪ the written pairs (exact duplicates are found before blocking)"
    else:
        blocking["note"] = (
            "no candidates.csv in the output folder: the candidates are not written, so pair completeness is not computed (null)"
        )
    return blocking


def _records_section(recs: _Records, uni: _Universe, truth: Truth, notes: list[str]) -> dict[str, Any]:
    """Step 6: the ``records`` section (refuses a truth sharing no record with the output)."""
    n = recs.n
    m_extra = len(uni.extra_keys)
    truth_records = int(uni.in_truth.sum())
    matched = int(uni.in_truth[:n].sum())
    truth_only = [recs.label(*divmod(int(key), recs.n_ids)) for key in uni.extra_keys[:EXAMPLES]]
    out_only_idx = np.flatnonzero(~uni.in_truth[:n])
    output_only = [recs.label(int(recs.osrc[i]), recs.oid[i]) for i in out_only_idx[:EXAMPLES]]
    records = {
        "output": n,
        "truth": truth_records,
        "matched": matched,
        "truth_only": {"count": m_extra, "examples": truth_only},
        "output_only": {"count": len(out_only_idx), "examples": output_only},
    }
    if matched == 0 and truth_records:
        shown_t = ", ".join(repr(x) for x in truth_only[:3])
        shown_o = ", ".join(repr(x) for x in output_only[:3])
        raise InputError(
            Problem(
                where=truth.path,
                message=f"none of the {truth_records} truth records is in the output "
                f"(truth ids such as {shown_t}; output ids such as {shown_o})",
                fix="check that the truth belongs to this run and that the right id column is used (--id-column, or the pair id columns)",
            )
        )
    if m_extra:
        notes.append(
            f"{m_extra:,} truth record(s) are not in the output: they count as missed in the pairwise "
            "recall and are left out of the cluster metrics"
        )
    if len(out_only_idx):
        if truth.kind == "clusters":
            notes.append(f"{len(out_only_idx):,} output record(s) are not in the truth file: they are treated as truth singletons")
        else:
            notes.append(f"{len(out_only_idx):,} output record(s) are in no truth pair: they are truth singletons")
    return records


# --------------------------------------------------------------------------
# presentation
# --------------------------------------------------------------------------


def _num(v: Any, digits: int = 4) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def format_table(metrics: dict[str, Any]) -> str:
    """The metrics as a readable plain-text table."""
    t = metrics["truth"]
    r = metrics["records"]
    b = metrics["blocking"]
    cols = ", ".join(f"{k}={v}" for k, v in t["columns"].items())
    lines = [
        f"evaluation of {metrics['out_dir']}",
        f"truth: {t['path']} ({t['kind']}: {cols}; {t['true_pairs']:,} true pairs)",
        "",
        (
            f"records      output {r['output']:,}   truth {r['truth']:,}   matched {r['matched']:,}   "
            f"truth only {r['truth_only']['count']:,}   output only {r['output_only']['count']:,}"
        ),
    ]
    if r["truth_only"]["count"]:
        lines.append(f"             truth only, e.g. {', '.join(r['truth_only']['examples'])}")
    lines += [
        "",
        "blocking",
        f"  candidate pairs      {_num(b['candidate_pairs']):>16}",
        f"  possible pairs       {_num(b['possible_pairs']):>16}"
        + (f"   ({b['possible_pairs_from']})" if b.get("possible_pairs_from") else ""),
        f"  reduction ratio      {_num(b['reduction_ratio'], 6):>16}",
        f"  pair completeness    {_num(b['pair_completeness']):>16}" + ("   (no candidates file)" if b["candidates_file"] is None else ""),
        f"  pair quality         {_num(b['pair_quality']):>16}",
        "",
        f"{'pairwise':<32}{'predicted':>12}{'true':>12}{'TP':>12}{'precision':>11}{'recall':>9}{'F1':>9}",
    ]
    for key, label in (("verified_pairs", "  pairs listed (pairs.csv)"), ("cluster_pairs", "  cluster pairs (clusters.csv)")):
        m = metrics["pairwise"][key]
        lines.append(
            f"{label:<32}{_num(m['predicted']):>12}{_num(m['true']):>12}{_num(m['true_positives']):>12}"
            f"{_num(m['precision']):>11}{_num(m['recall']):>9}{_num(m['f1']):>9}"
        )
    for row in metrics.get("per_source_pair") or []:
        pair = " – ".join(row["sources"])
        for key, label in (("verified_pairs", "pairs listed"), ("cluster_pairs", "cluster pairs")):
            m = row[key]
            lines.append(
                f"{f'  {pair}: {label}':<32}{_num(m['predicted']):>12}{_num(m['true']):>12}{_num(m['true_positives']):>12}"
                f"{_num(m['precision']):>11}{_num(m['recall']):>9}{_num(m['f1']):>9}"
            )
    c = metrics["clusters"]
    lines += [
        "",
        (f"clusters ({c['records']:,} records: {c['predicted_clusters']:,} predicted, {c['true_clusters']:,} true)"),
        f"  B-cubed precision    {_num(c['bcubed_precision']):>10}",
        f"  B-cubed recall       {_num(c['bcubed_recall']):>10}",
        f"  B-cubed F1           {_num(c['bcubed_f1']):>10}",
        f"  adjusted Rand index  {_num(c['adjusted_rand_index']):>10}",
    ]
    if metrics["notes"]:
        lines += ["", "notes"] + [f"  - {n}" for n in metrics["notes"]]
    return "\n".join(lines)


def write_metrics(out_dir: str | Path, metrics: dict[str, Any]) -> Path:
    """Write ``out_dir/evaluation.json`` (swapped in under the output folder's lock); returns its path."""
    with OutputStage(out_dir) as stage:
        write_files(stage.path, {}, {"evaluation": metrics})
        return stage.commit(["evaluation.json"], replace_all=False)["evaluation.json"]
