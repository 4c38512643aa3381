"""``er train CONFIG --model FILE``: fit what a job learns and save it as a model, without writing outputs.

The job runs through the same stages as ``er run`` up to what it learns (the
verifier's fit, the pruned shingles, the ``auto`` threshold); the model is
written atomically to ``FILE``. ``er run CONFIG --model FILE`` then applies it
without fitting again, as does ``er index build CONFIG --model FILE``.
"""

from __future__ import annotations

import argparse
from typing import Any

from er_framework.cli.common import run_with_progress, workers_arg

__all__ = ["add_parser", "cmd_train"]


def cmd_train(args: argparse.Namespace) -> int:
    from er_framework.engine.stages.writing import job_inputs
    from er_framework.executors import run_job

    def fit(job: Any, update: Any) -> Any:
        model = run_job(job, None, progress=update, write=False).model
        assert model is not None  # every executor returns the model it used
        inputs = [path for _, path in job_inputs(job)]
        return model, model.save(args.model, inputs=inputs)

    model, path = run_with_progress(args, fit)
    if not args.quiet:
        print(model.summary())
        print(f"wrote {path}")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "train",
        help="fit a job's model and save it (no outputs)",
        description="Fit what a job learns (the verifier's weights, pruned shingles, the auto "
        "threshold) and save it as a model file; er run --model FILE applies it without fitting.",
    )
    p.add_argument("config", help="the job's YAML file")
    p.add_argument("--model", metavar="FILE", required=True, help="the model file to write (JSON)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.add_argument(
        "--workers",
        type=workers_arg,
        metavar="N|auto",
        help="threads (overrides workers: of the YAML; results are identical for any value)",
    )
    p.set_defaults(func=cmd_train)
