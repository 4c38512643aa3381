"""The checks of ``output.golden`` (golden records, issue 33): rules installed, ``by:`` and ``order:`` naming
what the job has, golden.csv's columns distinct (every executor builds them; the dask executor on its workers)."""

from __future__ import annotations

from dataclasses import dataclass, field

from er_framework.components import (
    Component,
    GoldenRule,
)
from er_framework.config.spec import (
    GoldenFieldSpec,
    JobSpec,
)
from er_framework.config.yaml_load import YamlPath, problem_at
from er_framework.errors import Problem, choices_text, did_you_mean
from er_framework.registry import Registry

__all__ = ["golden_problems"]


@dataclass
class _GoldenCheck:
    """What the checks of ``output.golden`` share: where problems go and what the job declares."""

    lines: dict[YamlPath, int]
    filename: str
    registry: Registry
    declared: list[str]
    sources: list[str]
    problems: list[Problem] = field(default_factory=list)

    def add(self, path: YamlPath, message: str, fix: str = "") -> None:
        self.problems.append(problem_at(self.filename, self.lines, path, message=message, fix=fix))

    def rule(self, name: str, path: YamlPath) -> type[Component] | None:
        """The installed rule ``name``, or None with a problem (did you mean, the installed list)."""
        installed = self.registry.names("golden_rule")
        if name in installed:
            return self.registry.get("golden_rule", name).cls
        self.add(
            path,
            f"no golden rule named {name!r}",
            f"{did_you_mean(name, installed)}installed: {choices_text(installed)} (er plugins describes them)",
        )
        return None


def golden_problems(spec: JobSpec, lines: dict[YamlPath, int], filename: str, registry: Registry) -> list[Problem]:
    """``output.golden``: every rule installed (did you mean, the installed list), a rule that reads dates given
    ``by:`` (a field some source reads), ``order:`` naming sources, ``fields:`` naming fields some source reads,
    golden.csv's columns distinct."""
    golden = spec.output.golden
    if golden is None:
        return []
    base: YamlPath = ("output", "golden")
    declared = [f for s in spec.sources for f in s.fields]
    check = _GoldenCheck(lines, filename, registry, declared, [s.name for s in spec.sources])
    _golden_column_clashes(check, base)
    default = check.rule(golden.rule, (*base, "rule"))
    if default is not None and issubclass(default, GoldenRule) and default.needs_by:
        unset = [f for f in dict.fromkeys(declared) if f not in golden.fields]
        if unset:
            check.add(
                (*base, "rule"),
                f"rule {golden.rule!r} needs by: (a date field), which only a field's own rule can give "
                f"(fields using this default: {', '.join(unset)})",
                f"use another default rule, and write e.g. fields: {{{unset[0]}: {{rule: {golden.rule}, by: FIELD}}}}",
            )
    for fname, entry in golden.fields.items():
        _golden_field_problems(check, (*base, "fields", fname), fname, entry)
    return check.problems


def _golden_column_clashes(check: _GoldenCheck, base: YamlPath) -> None:
    """golden.csv's columns (cluster_id, size, then FIELD, FIELD_source, FIELD_id per field) must be distinct."""
    columns = ["cluster_id", "size"]
    for f in dict.fromkeys(check.declared):
        for col in (f, f"{f}_source", f"{f}_id"):
            if col in columns:
                check.add(
                    base,
                    f"golden.csv would have two columns named {col!r} (field {f!r})",
                    "rename the field in the sources' fields: (and columns: {FIELD: COLUMN} to read it)",
                )
            columns.append(col)


def _golden_field_problems(check: _GoldenCheck, path: YamlPath, fname: str, entry: str | GoldenFieldSpec) -> None:
    """One entry of ``output.golden.fields``: the field, its rule, ``by:`` and ``order:``."""
    declared = check.declared
    if fname not in declared:
        check.add(
            path,
            f"field {fname!r} is not read by any source",
            did_you_mean(fname, declared) + f"fields of the sources: {choices_text(set(declared))}",
        )
    fs = entry if isinstance(entry, GoldenFieldSpec) else GoldenFieldSpec(rule=entry)
    cls = check.rule(fs.rule, (*path, "rule") if isinstance(entry, GoldenFieldSpec) else path)
    if fs.by is not None and fs.by not in declared:
        check.add(
            (*path, "by"),
            f"by: field {fs.by!r} is not read by any source",
            did_you_mean(fs.by, declared) + f"name a date field of the sources: {choices_text(set(declared))}",
        )
    if fs.by is None and cls is not None and issubclass(cls, GoldenRule) and cls.needs_by:
        check.add(
            path,
            f"rule {fs.rule!r} needs by: the field holding each record's date",
            f"write {fname}: {{rule: {fs.rule}, by: FIELD}} (an ISO 8601 date or a number)",
        )
    for i, name in enumerate(fs.order or []):
        if name not in check.sources:
            check.add(
                (*path, "order", i),
                f"order: {name!r} is not a source of the job",
                did_you_mean(name, check.sources) + f"sources: {choices_text(check.sources)}",
            )
        elif name in (fs.order or [])[:i]:
            check.add((*path, "order", i), f"order: source {name!r} is listed twice")
