"""The Python API: run a job from a notebook, DataFrames in and out.

.. code-block:: python

    import er_framework as er

    result = er.run("configs/customers.yaml")                     # a job file, YAML text or a dict
    result = er.run(job_dict, sources={"A": df_a, "B": df_b})     # pandas / polars DataFrames, Arrow tables
    result.pairs          # the pairs pairs.csv holds, in the kind of the input (pandas in, pandas out)
    result.clusters       # every record once, with its cluster id
    result.explain("rec-1070-org", "rec-1070-dup-0")              # why that pair scored what it scored
    result.write("out/")  # pairs.csv, clusters.csv, report.json, report.html, as `er run` writes them

The job runs on the executor it names, through the same stages as ``er run``
(:func:`er_framework.executors.run_job`); the tables of the result are the
tables ``er run`` writes, built by the same function.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.config.resolve import Job, parse_job, resolve_job
from er_framework.config.yaml_load import load_yaml, read_job_text
from er_framework.data import Pairs
from er_framework.engine.explain import Explanation, among_candidates, explanation, find_record, row_of_terms
from er_framework.engine.log import ProgressCallback, ProgressLine
from er_framework.engine.model import Model, check_model
from er_framework.engine.result import Result as RunResult
from er_framework.engine.stages.exact import exact_groups
from er_framework.engine.stages.writing import comparisons_table, pairs_table, require_out_dir, write
from er_framework.errors import ConfigError, InputError, Problem
from er_framework.executors import run_job
from er_framework.io.frames import arrow_table, as_kind, frame_kind
from er_framework.io.output_read import read_written_table
from er_framework.io.outputs import OutputDir

__all__ = ["Model", "Result", "fit", "run", "validate", "load_job", "progress_callback"]


def _is_path(job: str | Path) -> bool:
    if isinstance(job, Path):
        return True
    text = job.strip()
    # one line without a "key: value" is a path too (a missing file is then named as such)
    return "\n" not in text and (text.endswith((".yaml", ".yml")) or Path(text).is_file() or ":" not in text)


def load_job(job: str | Path | Mapping[str, Any], sources: Mapping[str, Any] | None = None) -> Job:
    """A validated job from a path, YAML text or a dict; ``sources`` names the sources given in memory.

    Raises :class:`ConfigError` listing every problem. Relative paths in YAML text or a dict are
    relative to the current folder; in a file, to the file's folder.
    """
    frames = dict(sources or {})
    if isinstance(job, (str, Path)) and _is_path(job):
        if frames:
            path = Path(job)
            text = read_job_text(path)
            data, lines, problems = load_yaml(text, str(path))
            if data is None:
                raise ConfigError(problems)
            parsed = resolve_job(data, lines, str(path), path.resolve().parent, problems, config_path=path, frames=list(frames))
        else:
            parsed = parse_job(job)
    elif isinstance(job, str):
        data, lines, problems = load_yaml(job, "<job text>")
        if data is None:
            raise ConfigError(problems)
        parsed = resolve_job(data, lines, "<job text>", Path.cwd(), problems, config_path=Path.cwd() / "<job text>", frames=list(frames))
    elif isinstance(job, Mapping):
        parsed = resolve_job(dict(job), {}, "<job dict>", Path.cwd(), config_path=Path.cwd() / "<job dict>", frames=list(frames))
    else:
        raise ConfigError(
            [
                Problem(
                    where="job",
                    message=f"a job is a path, YAML text or a dict, not {type(job).__name__}",
                    fix="er_framework.run('job.yaml'), er_framework.run(yaml_text) or er_framework.run({...})",
                )
            ]
        )
    parsed.frames = frames
    return parsed


def validate(job: str | Path | Mapping[str, Any], sources: Mapping[str, Any] | None = None) -> list[Problem]:
    """Every problem of a job (as ``er validate`` finds them, data files checked), or ``[]`` when it is valid.

    ``sources`` names the sources that will be given as DataFrames (their ``path`` may be left out).
    """
    try:
        load_job(job, sources)
    except ConfigError as exc:
        return list(exc.problems)
    return []


def run(
    job: str | Path | Mapping[str, Any],
    sources: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    report: bool | None = None,
    *,
    force: bool = False,
    progress: bool | ProgressCallback | None = None,
    model: Model | str | Path | None = None,
) -> Result:
    """Run a job and return its :class:`Result`.

    ``model``: a :class:`~er_framework.engine.model.Model` (or the path of a saved one) to apply instead of
    fitting what the job learns (refused with what changed when it was fitted for another job);
    :attr:`Result.model` is the model the run used.

    ``job`` is a job file's path, YAML text or a dict (the YAML's structure). ``sources`` maps a source
    name to its data: a pandas or polars DataFrame, a pyarrow Table (or anything with
    ``__arrow_c_stream__``); such a source needs no ``path``. ``out``: write the outputs there as
    ``er run --out`` does (``report``: draw report.html too, default ``output.report`` of the job, true
    unless it says false; report.json is always written), with
    ``force`` as ``--force``; ``None`` (default) writes nothing — :meth:`Result.write` can later.
    Bad input raises :class:`~er_framework.errors.ConfigError` or
    :class:`~er_framework.errors.InputError` (both :class:`~er_framework.errors.ErError`), whose
    ``problems`` say what is wrong, where, and how to fix it.

    ``progress``: ``True`` shows a progress line on stderr (rewritten in place; in a notebook, under the
    cell); a callable is called with a :class:`~er_framework.engine.log.Progress` (``stage``, ``done``,
    ``total`` or None, ``seconds``, ``event``) at every stage's start and end and at batch boundaries; ``None``
    or ``False`` (default): silent. Stage records also go to the ``er_framework`` logger (INFO).
    """
    parsed = load_job(job, sources)
    given = Model.load(model) if isinstance(model, (str, Path)) else model
    if given is not None:
        check_model(given, parsed)
    target: OutputDir | None = OutputDir(Path(out), force=force) if out is not None else None
    # the dask executor writes its tables on the workers (its client holds none of them): straight into out
    on_workers = parsed.spec.executor.type == "dask"
    with progress_callback(progress) as callback:
        inner = run_job(parsed, target, progress=callback, write=on_workers, model=given)
    result = Result(parsed, inner, _kind_of(sources), outputs=dict(inner.outputs))
    if out is not None and not on_workers:
        result.write(out, force=force, report=report)
    return result


def fit(
    job: str | Path | Mapping[str, Any],
    sources: Mapping[str, Any] | None = None,
    *,
    progress: bool | ProgressCallback | None = None,
) -> Model:
    """Fit what a job learns (``er train``) and return it as a :class:`~er_framework.engine.model.Model`:
    ``model.save(path)`` writes it, ``Model.load(path)`` reads it back, ``run(job, model=model)`` applies it.
    ``job``, ``sources`` and ``progress`` as for :func:`run`."""
    parsed = load_job(job, sources)
    with progress_callback(progress) as callback:
        model = run_job(parsed, None, progress=callback, write=False).model
    assert model is not None  # every executor returns the model it used
    return model


@contextmanager
def progress_callback(progress: bool | ProgressCallback | None) -> Iterator[ProgressCallback | None]:
    """The callback of ``progress=`` (:func:`run`): ``True``, a :class:`~er_framework.engine.log.ProgressLine`
    on stderr, ended (with a newline) when the run ends or fails; a callable, itself; else None."""
    if progress is None or progress is False:
        yield None
        return
    if progress is True:
        line = ProgressLine(sys.stderr, keep=True)
        try:
            yield line
        finally:
            line.close()
        return
    if not callable(progress):
        raise ValueError(
            f"progress={progress!r}: expected True (a progress line on stderr), False/None (silent) or a callable taking "
            "a Progress value (er_framework.engine.log.Progress)"
        )
    yield progress


def _kind_of(sources: Mapping[str, Any] | None) -> str:
    kinds = {frame_kind(v) for v in (sources or {}).values()}
    return kinds.pop() if len(kinds) == 1 else "arrow"


@dataclass
class Result:
    """What a run found: its tables (as written by ``er run``), its report, and explanations of its pairs.

    The tables come as pyarrow Tables, or as pandas / polars DataFrames when the sources were given
    as such (``kind``); :meth:`table` gives any table in any kind.
    """

    job: Job
    run: RunResult
    kind: str = "arrow"
    outputs: dict[str, Path] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: the counts, the verifier and the threshold (never the data; ``summary()`` says more)."""
        return repr(self.run).replace("<Result:", f"<Result ({self.kind} tables):", 1)

    def _repr_html_(self) -> str:
        """A notebook's view: the counts, the first rows of the pairs and the clusters, the warnings."""
        return self.run._repr_html_()

    # ---------------------------------------------------------------- tables

    def table(self, name: str, kind: str | None = None) -> Any:
        """The output table ``name`` (``pairs``, ``clusters``, ``verified_pairs``, ``candidates``,
        ``comparisons``, ``golden``) as ``kind`` (``arrow``, ``pandas``, ``polars``; default: the kind of the input)."""
        tables = self.run.tables
        if name == "candidates" and name not in tables and self.run.candidates is not None:
            cols = pairs_table(self.run.records, self.run.candidates)
        elif name == "comparisons" and name not in tables:
            cols = self._comparisons()
        elif name == "golden" and name not in tables:
            raise KeyError("no golden records: the job has no output.golden (e.g. output: {golden: {rule: most_frequent}})")
        elif name not in tables and name in self.outputs:  # written by the workers of a dask run: read back
            return as_kind(read_written_table(self.outputs[name]), kind or self.kind)
        elif name not in tables:
            raise KeyError(f"no table {name!r}; this run has {sorted(tables)}")
        else:
            cols = tables[name]
        return as_kind(arrow_table(cols), kind or self.kind)

    @property
    def pairs(self) -> Any:
        """Every pair at or above the threshold after the job's last step (pairs.csv):
        ``left_source, left_id, right_source, right_id, score``."""
        return self.table("pairs")

    @property
    def clusters(self) -> Any:
        """Every input record exactly once: ``source, id, cluster_id`` (clusters.csv)."""
        return self.table("clusters")

    @property
    def verified_pairs(self) -> Any:
        """With a clusterer that selects pairs (``one_to_one``): the verified pairs before it (else the pairs)."""
        return self.table("verified_pairs" if "verified_pairs" in {**self.run.tables, **self.outputs} else "pairs")

    @property
    def candidates(self) -> Any:
        """Every candidate pair of the blockers with its score (candidates.csv)."""
        return self.table("candidates")

    @property
    def comparisons(self) -> Any:
        """Every candidate pair's score broken into its terms (comparisons.csv; see ``output: {comparisons: true}``)."""
        return self.table("comparisons")

    @property
    def golden(self) -> Any:
        """One golden record per cluster (golden.csv; the job's ``output.golden``): ``cluster_id, size``, then per
        field the chosen value, ``<field>_source`` and ``<field>_id`` (the record it came from)."""
        return self.table("golden")

    @property
    def report(self) -> dict[str, Any]:
        """report.json, as a dict."""
        return self.run.report

    @property
    def model(self) -> Model:
        """What the job learned (fitted by this run, or the model it was given): model.json."""
        assert self.run.model is not None  # every executor returns the model it used
        return self.run.model

    def summary(self) -> str:
        """The summary ``er run`` prints."""
        return self.run.summary()

    def _comparisons(self) -> dict[str, Any]:
        cand = self.run.candidates
        if self.run.explain_terms is None or cand is None:
            raise KeyError(
                f"this run cannot break its scores into terms (verifier {self.job.verifier.cls.name!r}, "
                f"executor {self.job.spec.executor.type!r})"
            )
        return comparisons_table(self.run.records, cand, self.run.explain_terms)

    # ---------------------------------------------------------------- writing

    def write(self, out: str | Path, *, force: bool = False, report: bool | None = None) -> dict[str, Path]:
        """Write the outputs to the folder ``out`` as ``er run --out`` does (one transaction; ``force`` as
        ``--force``; ``report``: draw report.html, default ``output.report`` of the job, as ``er run
        --report / --no-report``; report.json is always written). Returns the written paths by table name."""
        if self.job.spec.executor.type == "dask":
            raise InputError(
                Problem(
                    where=str(out),
                    message=f"a dask run's tables were written by its workers ({', '.join(sorted(self.outputs)) or 'none'}) "
                    "and are not held in this process to write again",
                    fix="copy the output folder, or run the job again with out=DIR",
                )
            )
        html = self.job.spec.output.report if report is None else report
        out_path = require_out_dir(self.job, OutputDir(Path(out), force=force), True)
        assert out_path is not None
        r = self.run
        pairs = r.answer.pairs if r.answer is not None else r.pairs
        self.outputs = write(
            self.job, out_path, r.records, pairs, r.labels, r.report, tables=r.tables, as_read=r.as_read, html=html, model=r.model
        )
        return self.outputs

    # ---------------------------------------------------------------- explanations

    def explain(self, left: str, right: str, *, left_source: str | None = None, right_source: str | None = None) -> Explanation:
        """Why the pair (``left``, ``right``) scored what it scored: its terms (per field: the values as
        compared, the comparison level and its weight; for document jobs the shared and differing
        shingles), their total and the score against the threshold. ``print()`` shows the waterfall as text;
        a notebook shows it as a chart (``_repr_html_``)."""
        a = find_record(self.run.records, left, left_source, "explain: left")
        b = find_record(self.run.records, right, right_source, "explain: right")
        r = self.run
        threshold = float(r.report.get("threshold", {}).get("value", 0.0))
        described = {**r.report.get("verifier", {})}
        described.setdefault("name", self.job.verifier.cls.name)
        if r.exact is not None:
            group_of = exact_groups(r.exact, len(r.records))[0]
            if group_of[a] == group_of[b] and r.exact.stats.get("records_collapsed", 0):
                return explanation(r.records, a, b, {}, described, threshold, exact_copies=True)
        if r.explain_terms is None:
            raise InputError(
                Problem(
                    where="explain",
                    message=f"verifier {self.job.verifier.cls.name!r} cannot break its scores into terms",
                    fix="use a verifier that can (er plugins lists them)",
                )
            )
        terms = r.explain_terms(Pairs(np.array([a]), np.array([b])))
        found = explanation(r.records, a, b, row_of_terms(terms, 0), described, threshold)
        if r.candidates is not None:  # a pair no blocker made was never scored: not verified, whatever its score
            found.candidate = among_candidates(r.candidates, r.exact, a, b)
        return found
