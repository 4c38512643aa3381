"""YAML job files: parsed, validated and resolved into a :class:`~er_framework.config.resolve.Job`."""

from er_framework.config.resolve import Job, parse_job

__all__ = ["Job", "parse_job"]
