"""Seconds and peak memory per stage, with an optional progress display."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from er_framework.memory import peak_rss_mb, reset_peak_rss

__all__ = ["STAGES", "StageLog"]

#: the stages of a run, in order (the progress bar counts them)
STAGES = ["read", "normalize", "exact_duplicates", "shingle", "signatures", "block", "diagnostics", "fit", "verify", "cluster", "write"]


@dataclass
class StageLog:
    """Seconds and peak memory per stage, with an optional progress display."""

    progress: Callable[[str], None] | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    overall_peak_mb: float = 0.0

    @contextmanager
    def stage(self, name: str) -> Iterator[dict[str, Any]]:
        if self.progress is not None:
            self.progress(name)
        info: dict[str, Any] = {"stage": name}
        self.overall_peak_mb = max(self.overall_peak_mb, peak_rss_mb())
        per_stage = reset_peak_rss()
        t0 = time.perf_counter()
        yield info
        info["seconds"] = round(time.perf_counter() - t0, 4)
        info["peak_rss_mb"] = peak_rss_mb()
        info["peak_rss_scope"] = "stage" if per_stage else "process so far"
        self.overall_peak_mb = max(self.overall_peak_mb, info["peak_rss_mb"])
        self.stages.append(info)

    @contextmanager
    def interleaved(self, names: list[str]) -> Iterator[Callable[[str], Any]]:
        """Stages that alternate chunk by chunk (shingle, signatures, shingle, …).

        Yields ``timer(name)``, a context manager adding its wall time to stage
        ``name``; on exit one entry per stage is logged, in ``names`` order.
        Peak memory is measured over all of them together.
        """
        if self.progress is not None:
            self.progress("+".join(names))
        self.overall_peak_mb = max(self.overall_peak_mb, peak_rss_mb())
        per_stage = reset_peak_rss()
        infos: dict[str, dict[str, Any]] = {name: {"stage": name, "seconds": 0.0} for name in names}

        @contextmanager
        def timer(name: str) -> Iterator[None]:
            t0 = time.perf_counter()
            yield
            infos[name]["seconds"] += time.perf_counter() - t0

        yield timer
        peak = peak_rss_mb()
        for name in names:
            info = infos[name]
            info["seconds"] = round(info["seconds"], 4)
            info["peak_rss_mb"] = peak
            info["peak_rss_scope"] = ("stages " + "+".join(names)) if per_stage else "process so far"
            self.stages.append(info)
        self.overall_peak_mb = max(self.overall_peak_mb, peak)

    def peak_mb(self) -> float:
        """The largest peak seen so far (process peak included)."""
        return max(self.overall_peak_mb, peak_rss_mb())
