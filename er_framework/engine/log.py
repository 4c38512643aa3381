"""Seconds and peak memory per stage; the one place a run's progress is told.

Every executor (local, Dask) times its stages with one :class:`StageLog`. At each stage's start and end,
and at the batch boundaries where a stage has them (:meth:`StageLog.batch`), the log

* calls the run's progress callback (``progress=``, an argument passed down from ``er_framework.run`` or the
  ``er`` command; never state kept on the engine) with a small :class:`Progress` value, and
* writes a record on the ``er_framework`` logger (:data:`LOGGER_NAME`): the stage's start and end at INFO
  (with its counts, seconds and peak memory), batches at DEBUG. The package installs only a
  :class:`logging.NullHandler`: a library user sees nothing until they configure logging; ``er -v`` does.

:class:`ProgressLine` is the plain-text display both the ``er`` command (on a terminal) and
``er_framework.run(..., progress=True)`` (a notebook) use: one line, rewritten in place.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

from er_framework.memory import peak_rss_mb, reset_peak_rss

__all__ = ["LOGGER_NAME", "STAGES", "Progress", "ProgressCallback", "ProgressLine", "StageLog", "stage_counts"]

#: the stages of a run, in order
STAGES = ["read", "normalize", "exact_duplicates", "shingle", "signatures", "block", "diagnostics", "fit", "verify", "cluster", "write"]

#: the logger every record of a run goes to (its children: ``er_framework.stages``)
LOGGER_NAME = "er_framework"

logger = logging.getLogger(f"{LOGGER_NAME}.stages")


@dataclass(frozen=True)
class Progress:
    """What a progress callback is given: where the run is.

    ``event`` is ``"start"`` (``done`` 0), ``"batch"`` (``done`` of ``total`` batches finished; ``total`` None
    when the stage does not know it) or ``"end"``; ``seconds`` since the stage started.
    """

    stage: str
    done: int
    total: int | None
    seconds: float
    event: str = "batch"

    def __str__(self) -> str:
        if self.event == "start":
            return f"{self.stage}: started"
        if self.event == "end":
            return f"{self.stage}: done in {self.seconds:.1f} s"
        if self.total:
            return f"{self.stage}: {self.done:,}/{self.total:,} ({self.done / self.total:.0%}), {self.seconds:.1f} s"
        return f"{self.stage}: {self.done:,} done, {self.seconds:.1f} s"


#: a progress callback: called with a :class:`Progress` at every stage's start and end and at batch boundaries
ProgressCallback = Callable[[Progress], None]


def stage_counts(info: dict[str, Any]) -> str:
    """A stage's counts (its whole-number entries, ``records=10,000``) for its log record."""
    parts = [f"{k}={v:,}" for k, v in info.items() if isinstance(v, int) and not isinstance(v, bool)]
    return (", " + ", ".join(parts)) if parts else ""


@dataclass
class StageLog:
    """Seconds and peak memory per stage, told to the progress callback and the ``er_framework`` logger."""

    progress: ProgressCallback | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    overall_peak_mb: float = 0.0
    #: the stage running now and when it started (for :meth:`batch`)
    current: tuple[str, float] | None = None

    def tell(self, stage: str, done: int, total: int | None, seconds: float, event: str) -> None:
        """Give the progress callback a :class:`Progress` (when there is one)."""
        if self.progress is not None:
            self.progress(Progress(stage, done, total, round(seconds, 4), event))

    def started(self, name: str) -> float:
        logger.info("stage %s started", name)
        t0 = time.perf_counter()
        self.current = (name, t0)
        self.tell(name, 0, None, 0.0, "start")
        return t0

    def ended(self, name: str, info: dict[str, Any], seconds: float) -> None:
        self.current = None
        peak = float(info.get("peak_rss_mb", 0.0))
        logger.info("stage %s done in %.2f s, peak memory %.0f MB%s", name, seconds, peak, stage_counts(info))
        self.tell(name, 1, 1, seconds, "end")

    def failed(self, name: str, t0: float, exc: BaseException) -> None:
        self.current = None
        logger.info("stage %s stopped after %.2f s: %s", name, time.perf_counter() - t0, type(exc).__name__)

    def batch(self, done: int, total: int | None = None) -> None:
        """A batch boundary of the running stage: ``done`` batches of ``total`` (None: not known) finished."""
        if self.current is None:
            return
        name, t0 = self.current
        seconds = time.perf_counter() - t0
        logger.debug("stage %s: %s of %s batches, %.2f s", name, done, "?" if total is None else total, seconds)
        self.tell(name, done, total, seconds, "batch")

    @contextmanager
    def stage(self, name: str) -> Iterator[dict[str, Any]]:
        info: dict[str, Any] = {"stage": name}
        self.overall_peak_mb = max(self.overall_peak_mb, peak_rss_mb())
        per_stage = reset_peak_rss()
        t0 = self.started(name)
        try:
            yield info
        except BaseException as exc:
            self.failed(name, t0, exc)
            raise
        info["seconds"] = round(time.perf_counter() - t0, 4)
        info["peak_rss_mb"] = peak_rss_mb()
        info["peak_rss_scope"] = "stage" if per_stage else "process so far"
        self.overall_peak_mb = max(self.overall_peak_mb, info["peak_rss_mb"])
        self.stages.append(info)
        self.ended(name, info, info["seconds"])

    @contextmanager
    def interleaved(self, names: list[str]) -> Iterator[Callable[[str], Any]]:
        """Stages that alternate chunk by chunk (shingle, signatures, shingle, …).

        Yields ``timer(name)``, a context manager adding its wall time to stage
        ``name``; on exit one entry per stage is logged, in ``names`` order.
        Peak memory is measured over all of them together. Progress is told once for all of them
        (``shingle+signatures``).
        """
        joined = "+".join(names)
        self.overall_peak_mb = max(self.overall_peak_mb, peak_rss_mb())
        per_stage = reset_peak_rss()
        infos: dict[str, dict[str, Any]] = {name: {"stage": name, "seconds": 0.0} for name in names}

        @contextmanager
        def timer(name: str) -> Iterator[None]:
            t = time.perf_counter()
            yield
            infos[name]["seconds"] += time.perf_counter() - t

        t0 = self.started(joined)
        try:
            yield timer
        except BaseException as exc:
            self.failed(joined, t0, exc)
            raise
        peak = peak_rss_mb()
        for name in names:
            info = infos[name]
            info["seconds"] = round(info["seconds"], 4)
            info["peak_rss_mb"] = peak
            info["peak_rss_scope"] = ("stages " + "+".join(names)) if per_stage else "process so far"
            self.stages.append(info)
        self.overall_peak_mb = max(self.overall_peak_mb, peak)
        self.ended(joined, {"peak_rss_mb": peak}, time.perf_counter() - t0)

    def peak_mb(self) -> float:
        """The largest peak seen so far (process peak included)."""
        return max(self.overall_peak_mb, peak_rss_mb())


class ProgressLine:
    """A progress callback showing one line on ``stream``, rewritten in place (``\\r``) at every call:
    ``er: [3] block: 2/8 (25%), 0.4 s``. ``close()`` ends it: the line is erased (``keep=False``: a
    terminal, where the command's output follows) or ended with a newline and the total time (``keep=True``:
    a notebook cell). Plain text: a terminal and Jupyter's output area both rewrite a line on ``\\r``. Batch
    updates closer than ``interval`` seconds are skipped (the last batch of a stage is always shown)."""

    def __init__(self, stream: TextIO, *, keep: bool = False, width: int | None = None, interval: float = 0.1) -> None:
        self.stream = stream
        self.keep = keep
        self.width = width
        self.interval = interval  # seconds between two batch updates shown (starts and ends are always shown)
        self.last = 0.0  # when the line was last written
        self.shown = 0  # characters of the line on screen
        self.count = 0  # stages started
        self.t0 = time.perf_counter()

    def columns(self) -> int:
        return self.width if self.width is not None else max(20, shutil.get_terminal_size((80, 24)).columns - 1)

    def show(self, text: str) -> None:
        text = text[: self.columns()]
        self.stream.write("\r" + text + " " * max(0, self.shown - len(text)))
        self.stream.flush()
        self.shown = len(text)

    def __call__(self, p: Progress) -> None:
        if p.event == "start":
            self.count += 1
        now = time.perf_counter()
        if p.event == "batch" and p.done != p.total and now - self.last < self.interval:
            return  # many small batches: a line a tenth of a second is enough
        self.last = now
        self.show(f"er: [{self.count}] {p}")

    def close(self) -> None:
        """End the line (see the class); nothing when nothing was shown."""
        if not self.shown:
            return
        if self.keep:
            self.show(f"er: {self.count} stages done in {time.perf_counter() - self.t0:.1f} s")
            self.stream.write("\n")
        else:
            self.stream.write("\r" + " " * self.shown + "\r")
        self.stream.flush()
        self.shown = 0
