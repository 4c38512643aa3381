"""The write stage: the run's tables (pairs, clusters …), report.json and report.html committed as one set, and
the checks of the output folder before any work."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.config.resolve import Job
from er_framework.data import Pairs, Records
from er_framework.engine.model import Model, model_text
from er_framework.engine.stages.clustering import Answer
from er_framework.errors import ErError, InputError, Problem
from er_framework.io.database import mask_url, write_tables
from er_framework.io.output_write import write_files
from er_framework.io.outputs import OutputDir, OutputStage, check_output_dir
from er_framework.report.page import RunData, render_report

__all__ = [
    "comparisons_table",
    "database_outputs",
    "job_inputs",
    "output_tables",
    "pairs_table",
    "require_out_dir",
    "write",
    "write_database",
]

Int64Array = npt.NDArray[np.int64]


def pairs_table(records: Records, pairs: Pairs) -> dict[str, Any]:
    """A pairs table: ``left_source, left_id, right_source, right_id, score``."""
    ids = np.asarray(records.ids, dtype=object)
    names = np.asarray(records.source_names, dtype=object)
    src = records.source
    return {
        "left_source": names[src[pairs.left]],
        "left_id": ids[pairs.left],
        "right_source": names[src[pairs.right]],
        "right_id": ids[pairs.right],
        "score": pairs.score if pairs.score is not None else np.ones(len(pairs)),
    }


def comparisons_table(records: Records, scored: Pairs, explain: Callable[[Pairs], dict[str, npt.NDArray[Any]]]) -> dict[str, Any]:
    """The ``comparisons`` table: the ids of each scored pair, the verifier's terms of its score
    (:meth:`Engine.comparisons` through :func:`~er_framework.engine.stages.verification.explainer`) and the score the run gave it, last."""
    table = pairs_table(records, scored)
    score = table.pop("score")
    table.update(explain(Pairs(scored.left, scored.right)))
    table["score"] = score
    return table


def output_tables(
    records: Records,
    found: Answer,
    labels: Int64Array,
    *,
    candidates: Pairs | None = None,
    comparisons: dict[str, Any] | None = None,
    golden: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """The tables of a run, by name: ``pairs`` and ``clusters`` (ids and source names), ``verified_pairs``
    with a pair-selecting clusterer, ``candidates``, ``comparisons`` and ``golden`` (the golden records of
    :func:`~er_framework.engine.stages.golden.golden_table`) when given."""
    tables = {
        "pairs": pairs_table(records, found.pairs),
        "clusters": {
            "source": np.asarray(records.source_names, dtype=object)[records.source],
            "id": np.asarray(records.ids, dtype=object),
            "cluster_id": labels,
        },
    }
    if found.verified is not None:
        tables["verified_pairs"] = pairs_table(records, found.verified)
    if candidates is not None:
        tables["candidates"] = pairs_table(records, candidates)
    if comparisons is not None:
        tables["comparisons"] = comparisons
    if golden is not None:
        tables["golden"] = golden
    return tables


def write(
    job: Job,
    out_path: Path,
    records: Records,
    pairs: Pairs,
    labels: Int64Array,
    report: dict[str, Any],
    *,
    tables: dict[str, dict[str, Any]],
    as_read: Records | None = None,
    html: bool = True,
    model: Model | None = None,
) -> dict[str, Path]:
    """The run's ``tables`` (:func:`output_tables`), report.json and report.html, committed as one set
    (``pairs``: the pairs of the pairs table, which report.html's cluster examples show), and ``model``
    (what the job learned) as model.json. With ``output.database`` the tables are also written to that
    database in one transaction (:func:`write_database`), after the files are staged and before they are
    committed: a failure there commits no file.

    Everything is written into a stage beside the outputs and swapped in
    under the folder's lock (:mod:`er_framework.io.outputs`); outputs of an
    earlier run that this one does not write (a candidates table, the other
    format) are removed in the same commit. ``records`` needs ids and
    sources only; ``as_read`` (the records with their fields as read) lets
    report.html show example records without reading the sources again. A
    failure drawing report.html keeps the other outputs and says how to draw
    it again.
    """
    fmt = job.spec.output.format
    names = (
        [f"{t}.{fmt}" for t in tables] + ["report.json"] + (["model.json"] if model is not None else []) + (["report.html"] if html else [])
    )
    report["outputs"] = names
    if job.spec.output.database is not None:
        report["outputs_database"] = database_outputs(job, {name: len(next(iter(t.values()), ())) for name, t in tables.items()})
    with OutputStage(out_path) as stage:
        write_files(stage.path, tables, {"report": report}, fmt=fmt)
        if model is not None:
            stage.write_text("model.json", model_text(model))
        if not html:
            write_database(job, tables)
            return {name.rsplit(".", 1)[0]: path for name, path in stage.commit(names, replace_all=True).items()}
        try:  # the visual report is derived from the outputs; a failure must not lose them
            run = RunData(as_read, pairs, labels) if as_read is not None else None
            stage.write_text("report.html", render_report(stage.path, config_path=job.config_path, run=run, shown_dir=out_path))
        except Exception as exc:  # noqa: BLE001 - reported, outputs kept
            names.remove("report.html")
            print(
                f"warning: report.html not written: {type(exc).__name__}: {exc} "
                f"(the other outputs are complete; retry with: er report {out_path})",
                file=sys.stderr,
            )
        write_database(job, tables)  # the files are committed only when the database holds the tables
        written = stage.commit(names, replace_all=True)
    # keys: the table names, "report" (report.json) and "report_html"
    return {("report_html" if name == "report.html" else name.rsplit(".", 1)[0]): path for name, path in written.items()}


def database_outputs(job: Job, rows: Mapping[str, int]) -> dict[str, Any]:
    """report.json's ``outputs_database``: the URL of ``output.database`` (its password masked) and the tables
    written there, ``[{name, rows}]`` (``rows``: each table's rows, by its name in the outputs)."""
    assert job.spec.output.database is not None
    prefix = job.spec.output.prefix
    return {"url": mask_url(job.spec.output.database), "tables": [{"name": prefix + name, "rows": int(n)} for name, n in rows.items()]}


def write_database(job: Job, tables: dict[str, dict[str, Any]]) -> None:
    """With ``output.database``: every table of ``tables`` written there as ``output.prefix`` + its name, in one
    transaction (:func:`~er_framework.io.database.write_tables`); nothing without it."""
    if job.spec.output.database is None:
        return
    write_tables(job.spec.output.database, job.base_dir, job.spec.output.prefix, tables, where=str(job.config_path), path="output.database")


def job_inputs(job: Job, model: Model | None = None) -> list[tuple[str, Path]]:
    """Every file a job reads: ``(what, path)`` of the job file, each source's files (or page folder), the
    training labels of ``training:`` and the saved model applied (``model``, loaded from a file)."""
    inputs: list[tuple[str, Path]] = [("the job file", job.config_path)]
    for i, spec in enumerate(job.spec.sources):
        try:
            paths = job.source_paths(i)
        except ErError:
            paths = [job.source_path(i)]
        inputs += [(f"sources[{i}] {spec.name!r}", p) for p in paths]
    labels = job.training_path()
    if labels is not None:
        inputs.append(("training.labels", labels))
    if model is not None and model.origin != "fitted" and Path(model.origin).is_file():
        inputs.append(("the model file (--model)", Path(model.origin)))
    return inputs


def require_out_dir(job: Job, out_dir: str | Path | OutputDir | None, write: bool, model: Model | None = None) -> Path | None:
    """The output folder of a run, checked before any work (:func:`er_framework.io.outputs.check_output_dir`):
    an error when the run writes and none is given, when it is an empty string, when an output name in it is
    an input of the job (:func:`job_inputs`: ``model`` is the saved model the run applies), when it holds an
    input or files er did not write (unless forced), or when it cannot be written."""
    force = False
    where = "--out"
    if isinstance(out_dir, OutputDir):
        force, out_dir = out_dir.force, out_dir.path
    if out_dir is None:
        where = f"{job.config_path}: output.dir"
    if out_dir is not None and str(out_dir).strip() == "" and write:
        return check_output_dir(out_dir, [], where=where)
    out_path = job.output_dir(out_dir)
    if not write:
        return out_path
    if out_path is None:
        raise InputError(
            Problem(
                where=str(job.config_path),
                path="output.dir",
                message="no output folder given",
                fix="pass --out DIR or set output: {dir: …} in the YAML",
            )
        )
    return check_output_dir(out_path, job_inputs(job, model), force=force, where=where)
