"""The Dask executor's outputs: the tables written by the workers in parts straight into the run's stage folder
(:mod:`er_framework.io.part_tables`), assembled and committed by the client with report.json, model.json and
report.html as one set (:class:`~er_framework.io.outputs.OutputStage`); and what report.html needs, summarized on
the workers (:class:`~er_framework.report.page.RunSummary`): the cluster sizes, the members and the values of
the few records it shows, the written pairs' score quartiles (exact, by a distributed selection).

The output folder must be one the workers can write (the same disk for a LocalCluster or a scheduler and workers
on this machine; a shared mount otherwise).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.engine.model import Model, model_text
from er_framework.engine.stages.writing import database_outputs
from er_framework.executors.dask_tasks import Int64Array, JobRef, Part, engine, read_as_read
from er_framework.io.database import write_table_parts
from er_framework.io.output_write import write_files
from er_framework.io.outputs import OutputStage
from er_framework.io.part_tables import assemble_tables, write_table_part
from er_framework.report.page import RunSummary, render_report
from er_framework.report.sections import QUARTILES, ClusterView, WrittenScores

__all__ = [
    "PAIR_COLUMNS",
    "TableParts",
    "clusters_part",
    "float_key",
    "quantiles_of_parts",
    "task_as_read",
    "write_run",
]

#: the columns of a pairs table (pairs, verified_pairs, candidates); comparisons put the terms before ``score``
PAIR_COLUMNS = ("left_source", "left_id", "right_source", "right_id", "score")


def clusters_part(ids: npt.NDArray[Any], labels: Int64Array, name: str) -> dict[str, Any]:
    """One partition's rows of the clusters table: ``source, id, cluster_id`` (every record once, in order)."""
    return {"source": np.full(len(ids), name, dtype=object), "id": ids, "cluster_id": labels}


@dataclass
class TableParts:
    """One output table as futures of column dicts (one per input partition, rows in partition order) and its columns."""

    name: str
    parts: list[Any]
    columns: list[str]


def _conform(table: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """The table's written columns in order (a part without rows may lack the terms a verifier gives)."""
    n = len(table["score"]) if "score" in table else len(next(iter(table.values()), ()))
    return {c: table[c] if c in table else np.zeros(n, dtype=object) for c in columns}


def _write_part(stage: str, name: str, part_no: int, table: dict[str, Any], columns: list[str], fmt: str) -> Any:
    return write_table_part(stage, name, part_no, _conform(table, columns), fmt)


def write_run(
    run: Any,
    out_path: Path,
    tables: list[TableParts],
    report: dict[str, Any],
    model: Model | None,
    summary: Callable[[], RunSummary] | None,
) -> dict[str, Path]:
    """Every table written by the workers into the stage, assembled there; report.json, model.json and report.html
    (drawn from ``summary()``, when given) beside them; then one commit of the whole set."""
    fmt = run.job.spec.output.format
    with OutputStage(out_path) as stage:
        infos = {
            t.name: run.client.gather(
                [run.submit(_write_part, str(stage.path), t.name, i, part, t.columns, fmt) for i, part in enumerate(t.parts)]
            )
            for t in tables
        }
        done = assemble_tables(stage, {t.name: t.columns for t in tables}, {t.name: len(t.parts) for t in tables}, fmt, parts=infos)
        if run.job.spec.output.database is not None:
            report["outputs_database"] = database_outputs(run.job, {t.name: sum(i.rows for i in infos[t.name]) for t in tables})
        names = [done[t.name].entry for t in tables] + ["report.json"] + (["model.json"] if model is not None else [])
        report["outputs"] = names + (["report.html"] if summary is not None else [])
        write_files(stage.path, {}, {"report": report}, fmt=fmt)  # the local run's writer of report.json
        if model is not None:
            stage.write_text("model.json", model_text(model))
        if summary is not None:
            try:  # the visual report is derived from the outputs; a failure must not lose them
                page = render_report(stage.path, config_path=run.job.config_path, shown_dir=out_path, summary=summary())
                stage.write_text("report.html", page)
                names.append("report.html")
            except Exception as exc:  # noqa: BLE001 - reported, outputs kept
                report["outputs"].remove("report.html")
                write_files(stage.path, {}, {"report": report}, fmt=fmt)
                print(
                    f"warning: report.html not written: {type(exc).__name__}: {exc} "
                    f"(the other outputs are complete; retry with: er report {out_path})",
                    file=sys.stderr,
                )
        write_database_parts(run, tables)  # the files are committed only when the database holds the tables
        written = stage.commit(names, replace_all=True)
    return {("report_html" if n == "report.html" else n.rsplit(".", 1)[0]): p for n, p in written.items()}


def _one_by_one(run: Any, table: TableParts) -> Iterator[dict[str, Any]]:
    """A table's parts brought to the client one at a time, in order (the client holds one part at most)."""
    for fut in table.parts:
        yield _conform(run.client.gather(fut), table.columns)


def write_database_parts(run: Any, tables: list[TableParts]) -> None:
    """With ``output.database``: every table written there as ``output.prefix`` + its name, in one transaction,
    its parts streamed through the client one at a time (:func:`~er_framework.io.database.write_table_parts`)."""
    out = run.job.spec.output
    if out.database is None:
        return
    parts = {t.name: _one_by_one(run, t) for t in tables}
    write_table_parts(out.database, run.job.base_dir, out.prefix, parts, where=str(run.job.config_path), path="output.database")


# ---------------------------------------------------------------- exact quantiles of values spread over parts


def float_key(values: npt.NDArray[np.float64]) -> Int64Array:
    """An int64 key per float64 ordered as the floats (``-0.0`` before ``0.0``; NaN last): a value's
    bits, with the negative ones' order reversed."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    out: Int64Array = np.where(bits < 0, np.int64(-(2**63)) - bits - 1, bits)
    return out


def _sorted_keys(table: dict[str, Any]) -> Int64Array:
    return np.sort(float_key(np.asarray(table["score"], dtype=np.float64)))


def _count_at_most(keys: Int64Array, probes: Int64Array) -> Int64Array:
    out: Int64Array = np.searchsorted(keys, probes, side="right").astype(np.int64)
    return out


def _key_value(key: int) -> float:
    bits = np.int64(key) if key >= 0 else np.int64(-(2**63)) - np.int64(key) - 1
    return float(np.array([bits], dtype=np.int64).view(np.float64)[0])


def quantiles_of_parts(run: Any, tables: list[Any]) -> WrittenScores | None:
    """The written pairs' count and :data:`QUARTILES` of their scores, as ``np.quantile`` gives them on all of
    them: the order statistics each quantile interpolates between, found by bisecting the 64-bit keys of the
    values with each round's counts per part (64 rounds at most; the client holds a few numbers per part)."""
    keys = [run.submit(_sorted_keys, t, retries=0) for t in tables]
    n = int(sum(run.client.gather([run.submit(len, k, retries=0) for k in keys])))
    if n == 0:
        return None
    pos = [q * (n - 1) for q in QUARTILES]
    ranks = sorted({int(np.floor(p)) for p in pos} | {min(int(np.ceil(p)), n - 1) for p in pos})
    lo = [-(2**63)] * len(ranks)  # Python ints: the midpoint of the whole int64 range overflows int64
    hi = [2**63 - 1] * len(ranks)
    want = [r + 1 for r in ranks]  # the smallest key with at least rank + 1 values at or below it
    while any(a < b for a, b in zip(lo, hi)):  # 64 rounds at most
        mid = [(a + b) // 2 for a, b in zip(lo, hi)]
        probes = np.array(mid, dtype=np.int64)
        counts = np.sum(run.client.gather([run.submit(_count_at_most, k, probes, retries=0) for k in keys]), axis=0).tolist()
        for i, c in enumerate(counts):
            if lo[i] < hi[i]:
                lo[i], hi[i] = (lo[i], mid[i]) if c >= want[i] else (mid[i] + 1, hi[i])
    value = {r: _key_value(k) for r, k in zip(ranks, lo)}
    out = []
    for p in pos:  # np.quantile's linear interpolation between the order statistics around each position
        a, b = int(np.floor(p)), min(int(np.ceil(p)), n - 1)
        out.append(float(np.quantile(np.array([value[a], value[b]]), p - a)) if b > a else value[a])
    return WrittenScores(n, tuple(out))


# ---------------------------------------------------------------- the records report.html shows


def task_as_read(ref: JobRef, part: Part, rows: Int64Array) -> tuple[list[str], dict[tuple[str, str], dict[str, Any]]]:
    """The values as read (before any ``normalize:`` step) of some records of a partition (``rows`` within it),
    by ``(source, id)``, and the field names."""
    spec = engine(ref).job.spec.sources[part.source]
    recs = read_as_read(ref, part)  # HTML as text, every field of the job, as the local report shows them
    fields = list(recs.fields)
    got = recs.take(np.asarray(rows, dtype=np.int64))
    values = {(spec.name, str(got.ids[i])): {f: got.fields[f][i] for f in fields} for i in range(len(got))}
    return fields, values


def cluster_view(
    histogram: dict[int, int], largest: list[tuple[str, list[tuple[str, str]]]], inside: dict[str, list[float]]
) -> ClusterView:
    """report.html's cluster view from the size histogram, the largest clusters' members and their pairs' scores."""
    sizes = np.array(sorted(histogram), dtype=np.int64)
    return ClusterView(sizes, np.array([histogram[int(s)] for s in sizes], dtype=np.int64), largest, inside)
