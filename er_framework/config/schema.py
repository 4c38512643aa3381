"""JSON Schema of job files, built from the job model and the installed components.

``er schema > er-job.schema.json`` and point the editor's YAML language server
at it (``# yaml-language-server: $schema=er-job.schema.json``) for completion
of keys, component names and their parameters.
"""

from __future__ import annotations

from typing import Any

from er_framework.config.job import JobSpec
from er_framework.registry import Registry, default_registry

_SECTIONS = {"shingler": "shingler", "signature": "signature", "verifier": "verifier", "cluster": "clusterer"}


def _component_schema(registry: Registry, family: str) -> dict[str, Any]:
    options = []
    for name in registry.names(family):
        cls = registry.components[family][name].cls
        schema = cls.Params.model_json_schema()
        props = dict(schema.get("properties", {}))
        props["type"] = {"const": name, "description": cls.summary or cls.__doc__ or ""}
        option = {
            "type": "object",
            "title": f"{family} {name}",
            "properties": props,
            "required": ["type", *schema.get("required", [])],
            "additionalProperties": False,
        }
        if "$defs" in schema:
            option["$defs"] = schema["$defs"]
        options.append(option)
    return {"anyOf": options} if options else {"type": "object"}


def job_json_schema(registry: Registry | None = None) -> dict[str, Any]:
    """The job file's JSON Schema (draft 2020-12)."""
    registry = registry or default_registry()
    schema = JobSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "er-framework job"
    props = schema["properties"]
    for key, family in _SECTIONS.items():
        props[key] = _component_schema(registry, family)
    blocker = _component_schema(registry, "blocker")
    props["blocker"] = blocker
    props["blockers"] = {"type": "array", "items": blocker}
    return schema
