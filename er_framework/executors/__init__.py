"""Where a job's stages run. An executor is one module plus one registration.

An executor is a function ``run(job, out_dir, *, progress, write, model) -> Result``
(``progress``: a :data:`~er_framework.engine.log.ProgressCallback` or None, told by the run's
:class:`~er_framework.engine.log.StageLog`)
that drives the engine's stages (:mod:`er_framework.engine.stages`) and ends
with :func:`er_framework.engine.report.finish_run` (the one report builder
and writer). It is registered by name, as ``"module:function"``: the
built-ins in :data:`er_framework.registry.BUILTIN_EXECUTORS`, a third party's
through the entry-point group ``er_framework.executors``
(:func:`er_framework.registry.executor_table`), so that a heavy dependency
(Dask) is imported only when a job asks for it. The engine imports no
executor; the job's ``executor: {type: NAME, ...options}`` picks one (checked
when the job is validated). Each executor validates its own options with a
:class:`~er_framework.components.Params` model registered next to its run
function (:func:`er_framework.registry.executor_params_model`); the run
function finds them, validated, in ``job.executor_params``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Protocol

from er_framework.config.resolve import Job
from er_framework.engine.log import ProgressCallback
from er_framework.engine.model import Model
from er_framework.engine.result import Result
from er_framework.errors import ConfigError, PluginError, Problem, choices_text
from er_framework.io.outputs import OutputDir
from er_framework.registry import executor_table, load_executor_object

__all__ = ["Executor", "get_executor", "run_job"]


class Executor(Protocol):
    """What an executor is: runs a validated job, returns its :class:`Result`."""

    def __call__(
        self,
        job: Job,
        out_dir: str | Path | OutputDir | None = None,
        *,
        progress: ProgressCallback | None = None,
        write: bool = True,
        model: Model | None = None,
    ) -> Result: ...


def get_executor(name: str) -> Executor:
    """The executor registered as ``name``."""
    table = executor_table()
    target = table.get(name)
    if target is None:
        raise ConfigError(
            Problem(where="executor.type", message=f"no executor {name!r}", fix=f"installed executors: {choices_text(table)}")
        )
    run: Executor = load_executor_object(name, target)
    return run


def run_job(
    job: Job,
    out_dir: str | Path | OutputDir | None = None,
    *,
    progress: ProgressCallback | None = None,
    write: bool = True,
    force: bool = False,
    model: Model | None = None,
) -> Result:
    """Run a validated job on the executor it names (``executor.type``, default ``local``).

    The output folder (``out_dir``, else the job's ``output.dir``) is checked before any work
    (:func:`er_framework.engine.stages.require_out_dir`); ``force`` lets a run write into a folder that
    holds an input or files er did not write (never over an input). ``model``: a saved model to apply
    instead of fitting (checked against the job by the caller: :func:`er_framework.engine.model.check_model`).
    """
    if force and write and not isinstance(out_dir, OutputDir):
        target = out_dir if out_dir is not None else job.output_dir(None)
        if target is not None:
            out_dir = OutputDir(target, force=True)
    run = get_executor(job.spec.executor.type)
    if model is None:  # an executor written before models takes no model argument
        return run(job, out_dir, progress=progress, write=write)
    if "model" not in inspect.signature(run).parameters:
        raise PluginError(
            Problem(
                where=f"executor {job.spec.executor.type!r}",
                message="this executor cannot apply a saved model (its run function takes no model)",
                fix="run without --model (the job fits its model), or use executor: local or dask",
            )
        )
    return run(job, out_dir, progress=progress, write=write, model=model)
