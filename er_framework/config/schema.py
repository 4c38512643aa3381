"""JSON Schema of job files, built from the job model and the installed components.

``er schema > er-job.schema.json`` and point the editor's YAML language server
at it (``# yaml-language-server: $schema=er-job.schema.json``) for completion
of keys, component names and their parameters. The component sections come
from the family table (:data:`~er_framework.components.FAMILIES`), the
``executor`` section from each installed executor's options model
(:func:`~er_framework.registry.executor_params_model`).
"""

from __future__ import annotations

from typing import Any

from er_framework.components import FAMILIES, Params
from er_framework.config.spec import ExecutorSpec, JobSpec
from er_framework.registry import Registry, default_registry, executor_params_model, executor_table


def _component_schema(registry: Registry, family: str) -> dict[str, Any]:
    """``{type: NAME, ...params}`` for each installed component of ``family``, as ``anyOf``."""
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


def _per_field_schema(registry: Registry, family: str, description: str) -> dict[str, Any]:
    """``{field: step | [step, ...]}`` where a step is a member's name or its ``{type: NAME, ...options}``."""
    names = registry.names(family)
    step: dict[str, Any] = {"anyOf": [{"enum": names} if names else {"type": "string"}, _component_schema(registry, family)]}
    return {
        "type": "object",
        "description": description,
        "additionalProperties": {"anyOf": [step, {"type": "array", "items": step}]},
    }


def _executor_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``executor: {type: NAME, ...options}``: each installed executor's type and its own options, as ``anyOf``.

    The options' nested models join the document's ``$defs`` (where their ``$ref`` point).
    """
    default = ExecutorSpec.model_fields["type"].default
    options = []
    for name in sorted(executor_table()):
        model = executor_params_model(name)
        sub = model.model_json_schema()
        schema.setdefault("$defs", {}).update(sub.get("$defs", {}))
        doc = model.__dict__.get("__doc__") if model is not Params else None
        options.append(
            {
                "type": "object",
                "title": f"executor {name}",
                "properties": {"type": {"const": name, "description": (doc or "").strip()}, **sub.get("properties", {})},
                "required": ([] if name == default else ["type"]) + sub.get("required", []),
                "additionalProperties": False,
            }
        )
    return {"anyOf": options}


def job_json_schema(registry: Registry | None = None) -> dict[str, Any]:
    """The job file's JSON Schema (draft 2020-12)."""
    registry = registry or default_registry()
    schema = JobSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "er-framework job"
    props = schema["properties"]
    props["executor"] = {"description": props["executor"].get("description", ""), **_executor_schema(schema)}
    schema["$defs"].pop(ExecutorSpec.__name__, None)
    for fam in FAMILIES.values():
        if fam.shape is not None:
            continue  # named inside another section (output.golden's rules), described by that section's model
        if fam.per_field:
            props[fam.section] = _per_field_schema(registry, fam.name, props.get(fam.section, {}).get("description", ""))
            continue
        component = _component_schema(registry, fam.name)
        props[fam.section] = component
        if fam.many is not None:
            props[fam.many] = {"type": "array", "items": component}
    return schema
