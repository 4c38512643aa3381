"""``er plugins [--json]``: the installed plugins, their components with abilities, parameters and defaults."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_parser", "cmd_plugins"]


def cmd_plugins(args: argparse.Namespace) -> int:
    from er_framework.capabilities import capabilities_of
    from er_framework.components import FAMILIES
    from er_framework.registry import default_registry, describe_params, iter_components

    reg = default_registry()
    if args.json:
        out: dict[str, Any] = {
            "plugins": [p.__dict__ for p in reg.plugins],
            "blocked": reg.blocked,
            "components": [
                {
                    "family": c.family,
                    "name": c.name,
                    "class": f"{c.cls.__module__}.{c.cls.__qualname__}",
                    "plugin": c.plugin.name,
                    "distribution": c.plugin.distribution,
                    "version": c.plugin.version,
                    "summary": c.cls.summary,
                    # the abilities of er_framework.capabilities the class declares, in pipeline order
                    "capabilities": capabilities_of(c.cls),
                    "params": describe_params(c.cls),
                }
                for c in iter_components(reg)
            ],
            # the normalizer family again, its params as "options" (the word of a job's normalize: steps)
            "normalizers": [
                {"name": c.name, "description": c.cls.summary, "plugin": c.plugin.name, "options": describe_params(c.cls)}
                for c in iter_components(reg)
                if c.family == "normalizer"
            ],
        }
        print(json.dumps(out, indent=2, default=str))
        return 0
    print("plugins:")
    for p in reg.plugins:
        print(f"  {p.name:<14} {p.module:<28} {p.distribution} {p.version}")
    if reg.blocked:
        print(f"  blocked: {', '.join(reg.blocked)}")
    family = None
    for c in iter_components(reg):
        if c.family != family:
            family = c.family
            fam = FAMILIES[family]
            if fam.shape is not None:
                where = fam.shape
            elif fam.per_field:
                where = f"{fam.section}: {{FIELD: NAME or [NAME, {{type: NAME, option: value}}, …]}}"
            else:
                where = f"{fam.many}: [{{type: NAME}}, …]" if fam.many else f"{fam.section}: {{type: NAME}}"
            print(f"\n{family}s ({where}):")
        print(f"  {c.name:<22} {c.cls.summary}  [{c.plugin.name}: {c.plugin.distribution} {c.plugin.version}]")
        abilities = capabilities_of(c.cls)
        if abilities:
            print(f"      {'abilities':<20} {', '.join(abilities)}")
        for prm in describe_params(c.cls):
            default = "required" if prm["required"] else f"default {json.dumps(prm['default'], default=str)}"
            desc = f"  {prm['description']}" if prm["description"] else ""
            print(f"      {prm['name']:<20} {prm['type']:<14} {default}{desc}")
            _print_nested(c.cls.Params.model_fields[prm["name"]].annotation, "        ", set())
    return 0


def _print_nested(annotation: Any, indent: str, seen: set[type]) -> None:
    """The keys of the models a parameter's type holds (``fields: list[FSField]``: every key of an FSField), indented."""
    import typing

    from pydantic import BaseModel

    from er_framework.registry import type_text

    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        print(f"{indent}{annotation.__name__}:")
        for name, f in annotation.model_fields.items():
            key = f.alias or name
            default = "required" if f.is_required() else f"default {json.dumps(f.get_default(call_default_factory=True), default=str)}"
            desc = f"  {f.description}" if f.description else ""
            print(f"{indent}  {key:<18} {type_text(f.annotation, f.metadata):<14} {default}{desc}")
            _print_nested(f.annotation, indent + "    ", seen)
        return
    for arg in args:
        _print_nested(arg, indent, seen)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plugins",
        help="list installed plugins and components",
        description="List plugins, components, their abilities (er_framework.capabilities), parameters and defaults.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plugins)
