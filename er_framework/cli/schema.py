"""``er schema``: the JSON Schema of job files, for editor completion."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_parser", "cmd_schema"]


def cmd_schema(args: argparse.Namespace) -> int:
    from er_framework.config.schema import job_json_schema

    print(json.dumps(job_json_schema(), indent=2))
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of job files", description="JSON Schema of job files, for editor completion.")
    p.set_defaults(func=cmd_schema)
