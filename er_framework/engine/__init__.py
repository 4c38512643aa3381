"""The engine: a job's components built once (:class:`Engine`), one function per stage
(:mod:`er_framework.engine.stages`) and one report builder (:mod:`er_framework.engine.report`).

Executors (:mod:`er_framework.executors`) decide where the stages run; the
engine imports none of them.
"""

from er_framework.engine.engine import Engine
from er_framework.engine.log import STAGES, StageLog
from er_framework.engine.report import RunFacts, build_report
from er_framework.engine.result import Result

__all__ = ["STAGES", "Engine", "Result", "RunFacts", "StageLog", "build_report"]
