"""YAML job file -> validated job spec; every problem reported at once.

Validation runs in passes, as the design asks:

1. **parse** – YAML syntax, duplicate keys (rejected, with both line numbers);
2. **structure** – the job schema (pydantic): unknown keys, wrong types,
   out-of-range values;
3. **resolve** – every component ``type`` exists among the installed plugins
   ("did you mean …? installed: …"), its parameters validate against the
   component's own model, cross-component rules hold (``bands * rows <=
   num_perm``), the stages a component needs are configured, source files exist.

Each :class:`~er_framework.errors.Problem` names the file and line, the YAML
path, the bad value, what was expected and a fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import types
import typing
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from er_framework.capabilities import Explainable, Trainable, has
from er_framework.components import (
    FAMILIES,
    FIELD_REF,
    Blocker,
    Component,
    Context,
    Family,
    Normalizer,
    Params,
    Verifier,
)
from er_framework.config.golden_checks import golden_problems
from er_framework.config.source_checks import (
    database_problems,
    expand_source_path,
    is_glob,
    source_column_problems,
    source_inputs,
    url_problems,
)
from er_framework.config.spec import (
    AutoThresholdSpec,
    ExactSpec,
    ExecutorSpec,
    JobSpec,
    pydantic_problems,
    type_problems,
    validate_spec,
    without_repeats,
)
from er_framework.config.yaml_load import YamlPath, fail, load_yaml, problem_at, read_job_text, render_path, where_of
from er_framework.errors import ConfigError, ErError, Problem, choices_text, did_you_mean
from er_framework.io.html import check_boilerplate_options
from er_framework.io.remote import local_path
from er_framework.kernels.parallel import resolve_workers
from er_framework.normalize import resolve_steps
from er_framework.registry import BUILTIN_EXECUTORS, Registry, build_registry, default_registry, executor_params_model

# ----------------------------------------------------------------------------
# pass 3: resolved job


@dataclass
class ComponentSpec:
    """A component chosen in the YAML, with validated params."""

    family: str
    cls: type[Component]
    params: Params
    yaml_path: str

    def instantiate(self, context: Context) -> Component:
        return self.cls(self.params, context)


@dataclass
class Job:
    """A validated, resolved job."""

    spec: JobSpec
    config_path: Path
    base_dir: Path
    registry: Registry
    context: Context
    shingler: ComponentSpec | None
    signature: ComponentSpec | None
    blockers: list[ComponentSpec]
    verifier: ComponentSpec
    clusterer: ComponentSpec
    #: the options of ``executor:`` (its keys besides ``type``), validated by the model of the executor
    #: ``spec.executor.type`` names (:func:`er_framework.registry.executor_params_model`)
    executor_params: Params
    raw: dict[str, Any] = field(default_factory=dict)
    #: per field of ``normalize:``, its chain of normalizers
    normalizers: dict[str, list[ComponentSpec]] = field(default_factory=dict)
    #: sources given in memory (``er_framework.run(job, sources={name: DataFrame})``), by source name:
    #: read from these objects instead of a file
    frames: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: the job file, its mode, sources, blockers, verifier and executor (never the settings' detail)."""
        sources = ", ".join(s.name for s in self.spec.sources)
        blockers = ", ".join(b.cls.name for b in self.blockers)
        return (
            f"<Job {self.config_path.name}: {self.spec.mode} of {sources}; blockers {blockers or '(none)'}, "
            f"verifier {self.verifier.cls.name}, executor {self.spec.executor.type}>"
        )

    @property
    def exact(self) -> ExactSpec:
        assert isinstance(self.spec.exact_duplicates, ExactSpec)
        return self.spec.exact_duplicates

    def normalizer_chains(self) -> dict[str, list[Normalizer]]:
        """Per normalized field, its chain of normalizers, instantiated (cheap: they hold their options)."""
        chains: dict[str, list[Normalizer]] = {}
        for fname, specs in self.normalizers.items():
            steps = [spec.instantiate(self.context) for spec in specs]
            chains[fname] = [s for s in steps if isinstance(s, Normalizer)]
        return chains

    def source_path(self, i: int) -> Path:
        path = self.spec.sources[i].path
        if path is None:
            raise ValueError(f"source {self.spec.sources[i].name!r} is given in memory, not as a file")
        return (self.base_dir / path).resolve()

    def source_paths(self, i: int) -> list[Path]:
        """The files of source ``i``: its path, or the files its glob pattern matches, sorted by name
        (none for a source given in memory: :attr:`frames`)."""
        path = self.spec.sources[i].path
        if path is None or self.spec.sources[i].name in self.frames:
            return []
        return expand_source_path(self.base_dir, path)

    def source_inputs(self, i: int) -> list[str]:
        """Every input of source ``i``: its local files (or folder: pages, a Parquet dataset) as absolute paths and
        its URLs read through fsspec (``s3://…``, ``memory://…``; a glob expanded), in reading order; none for a
        source given in memory. :meth:`source_paths` names the local ones only."""
        path = self.spec.sources[i].path
        if path is None or self.spec.sources[i].name in self.frames:
            return []
        return source_inputs(self.base_dir, path, f"{self.config_path}: sources[{i}].path")

    def training_path(self) -> Path | None:
        """The labels file of ``training:`` (relative to the job file's folder), or None
        (:func:`labels_path`: the one rule of ``training:`` and ``er review``)."""
        if self.spec.training is None:
            return None
        return labels_path(self.base_dir, self.spec.training.labels).path

    def output_dir(self, override: str | Path | None = None) -> Path | None:
        if override is not None:
            return Path(override)
        if self.spec.output.dir is not None:
            return (self.base_dir / self.spec.output.dir).resolve()
        return None

    def config_hash(self) -> str:
        """SHA-256 of the resolved job (component params included)."""
        blob = json.dumps(self.resolved(), sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()

    def resolved(self) -> dict[str, Any]:
        def comp(c: ComponentSpec | None) -> dict[str, Any] | None:
            if c is None:
                return None
            return {"type": c.cls.name, **c.params.model_dump(mode="json")}

        out: dict[str, Any] = {
            "name": self.spec.name,
            "mode": self.spec.mode,
            "seed": self.spec.seed,
            "threshold": self.spec.threshold,
            **({"auto_threshold": (self.spec.auto_threshold or AutoThresholdSpec()).model_dump()} if self.spec.threshold == "auto" else {}),
            "sources": [s.model_dump() for s in self.spec.sources],
            "exact_duplicates": self.exact.model_dump(),
            "shingler": comp(self.shingler),
            "signature": comp(self.signature),
            "blockers": [comp(b) for b in self.blockers],
            "verifier": comp(self.verifier),
            "cluster": comp(self.clusterer),
        }
        if self.spec.prune_shingles is not None:  # (absent when off: the hash of other jobs is unchanged)
            out["prune_shingles"] = self.spec.prune_shingles.model_dump()
        if self.normalizers:  # (absent when empty: the hash of a job without normalizers is unchanged)
            out["normalize"] = {f: [comp(s) for s in chain] for f, chain in self.normalizers.items()}
        return out


#: the labels file ``er review`` writes when neither ``--labels`` nor the job's ``training: {labels: ...}`` names one
DEFAULT_LABELS = "labels.csv"


@dataclass(frozen=True)
class LabelsPath:
    """A labels file: where it is, and how ``training: {labels: ...}`` of the job names it."""

    #: the file, absolute
    path: Path
    #: the path as written in the job's ``training: {labels: ...}``: relative to the job file's folder
    in_job: str


def labels_path(base_dir: Path, in_job: str | None = None, given: str | Path | None = None, cwd: Path | None = None) -> LabelsPath:
    """The one rule that places a labels file, for ``training:`` and ``er review`` alike.

    ``given`` (``er review --labels FILE``): relative to ``cwd`` (the current folder by default), as every
    path on the command line. Else ``in_job`` (the job's ``training: {labels: ...}``): relative to the job
    file's folder ``base_dir``. Else :data:`DEFAULT_LABELS` beside the job file. The answer also says how
    the job names the file (:attr:`LabelsPath.in_job`).
    """
    base = Path(base_dir).resolve()
    if given is not None:
        path = ((Path.cwd() if cwd is None else Path(cwd)) / Path(given)).resolve()
    else:
        path = (base / (in_job or DEFAULT_LABELS)).resolve()
    try:
        rel = os.path.relpath(path, base)
    except ValueError:  # another drive (Windows): only an absolute path names it
        rel = str(path)
    return LabelsPath(path=path, in_job=Path(rel).as_posix())


def job_labels_path(job: Job, given: str | Path | None = None, cwd: Path | None = None) -> LabelsPath:
    """:func:`labels_path` of ``job``: ``given`` (relative to ``cwd``), else its ``training: {labels: ...}``,
    else ``labels.csv`` beside the job file."""
    in_job = job.spec.training.labels if job.spec.training is not None else None
    return labels_path(job.base_dir, in_job, given, cwd)


def parse_job(
    path: str | Path,
    registry: Registry | None = None,
    *,
    check_files: bool = True,
) -> Job:
    """Read and validate a job file; raise :class:`ConfigError` listing every problem."""
    path = Path(path)
    filename = str(path)
    text = read_job_text(path)
    data, lines, problems = load_yaml(text, filename)
    if data is None:
        fail(problems)
    if isinstance(data, dict) and not looks_like_job(data):
        fail(
            [
                Problem(
                    where=filename,
                    message="this is not an er job file: none of its top-level keys is a job's (sources, blockers, verifier …)",
                    fix="give the job's YAML file (see configs/febrl3.yaml)",
                )
            ]
        )
    return resolve_job(data, lines, filename, path.resolve().parent, problems, registry, check_files=check_files, config_path=path)


def looks_like_job(data: dict[Any, Any]) -> bool:
    """One top-level key of ``data`` is a job's, or close to one (a typo): only then do the messages about the
    file quote its keys and lines. A file that merely parses as a YAML mapping (``/etc/shadow``'s
    ``root:*:…`` lines do) is not quoted back."""
    known = list(JobSpec.model_fields)
    return any(isinstance(k, str) and (k in known or did_you_mean(k, known)) for k in data)


#: the job's top-level settings a component's own checks read (through its :class:`Context`)
_SETTINGS = ("seed", "threshold", "mode")


def resolve_job(
    data: dict[str, Any],
    lines: dict[YamlPath, int],
    filename: str,
    base_dir: Path,
    problems: list[Problem] | None = None,
    registry: Registry | None = None,
    *,
    check_files: bool = True,
    config_path: Path | None = None,
    frames: Collection[str] = (),
) -> Job:
    """Passes 2 and 3 over parsed YAML: the job schema, then components, normalizers and fields resolved.

    ``frames`` names the sources whose data is given in memory (no file needed).

    Raises :class:`ConfigError` with every problem found (those of ``problems`` first).
    """
    problems = list(problems or [])
    if not isinstance(data, dict):
        fail(
            problems
            + [
                Problem(
                    where=filename,
                    message=f"a job must be a mapping of keys, got {type(data).__name__}",
                    fix="write key: value lines (see configs/documents.yaml)",
                )
            ]
        )
    spec = validate_spec(data, lines, filename, problems)
    registry = _job_registry(data, registry, problems)
    # the job-level settings components read in their own checks: when one of them is itself at fault
    # (reported already), those checks are skipped, or they would report a fault that is not there
    # ("no threshold" for a threshold written wrong)
    settings_ok = not any((p.path or "").split(".")[0].split("[")[0] in _SETTINGS for p in problems)
    if spec is None:
        # still resolve the sections we can, so every problem is reported at once
        _resolve_normalizers(data.get("normalize"), None, lines, filename, registry, problems)
        settings = {k: data.get(k, JobSpec.model_fields[k].default) for k in _SETTINGS} if settings_ok else {}
        if settings.get("threshold") == "auto":  # the components are built for the lowest threshold auto may choose
            settings["threshold"] = AutoThresholdSpec.model_fields["low"].default
            if isinstance(data.get("auto_threshold"), dict) and isinstance(data["auto_threshold"].get("low"), float):
                settings["threshold"] = data["auto_threshold"]["low"]
        _resolve_components(data, lines, filename, registry, problems, Context(**settings), checks=settings_ok)
        _resolve_executor(data, lines, filename, problems)
        fail(problems)
    problems += _source_problems(spec, lines, filename, base_dir, check_files, frames)
    problems += database_problems(spec, lines, filename, base_dir, check_files, frames)
    problems += source_column_problems(spec, lines, filename, base_dir, check_files, frames)
    problems += _shape_problems(spec, lines, filename)
    problems += golden_problems(spec, lines, filename, registry)
    declared = [f for s in spec.sources for f in s.fields]
    context = Context(seed=spec.seed, threshold=spec.design_threshold(), mode=spec.mode, workers=resolve_workers(spec.workers))
    normalizers = _resolve_normalizers(spec.normalize, declared, lines, filename, registry, problems)
    comps = _resolve_components(data, lines, filename, registry, problems, context, checks=settings_ok)
    resolved = [c for fam in comps.values() for c in (fam if isinstance(fam, list) else [fam]) if c is not None]
    for chain in normalizers.values():
        resolved += chain
    problems += _field_ref_problems(resolved, declared, lines, filename)
    executor_params = _resolve_executor(data, lines, filename, problems)
    if problems:
        fail(problems)
    assert comps["verifier"] is not None and comps["clusterer"] is not None and executor_params is not None
    if spec.exact_duplicates is True or spec.exact_duplicates is False:  # pragma: no cover
        spec.exact_duplicates = ExactSpec(enabled=bool(spec.exact_duplicates))
    shingler = comps["shingler"]
    if (
        shingler is not None
        and getattr(shingler.params, "preset", None) == "raw"
        and "normalize" not in spec.exact_duplicates.model_fields_set
    ):
        # the raw text is scored as written: copies are exact only as written too
        spec.exact_duplicates.normalize = False
    return Job(
        spec=spec,
        config_path=config_path or Path(filename),
        base_dir=base_dir,
        registry=registry,
        context=context,
        shingler=comps["shingler"],
        signature=comps["signature"],
        blockers=comps["blocker"],
        verifier=comps["verifier"],
        clusterer=comps["clusterer"],
        executor_params=executor_params,
        raw=data,
        normalizers=normalizers,
    )


def _job_registry(data: dict[str, Any], registry: Registry | None, problems: list[Problem]) -> Registry:
    """``registry``, or the plugins of this process without those the job's ``plugins.block`` names."""
    if registry is not None:
        return registry
    block = []
    if isinstance(data.get("plugins"), dict) and isinstance(data["plugins"].get("block"), list):
        block = [str(b) for b in data["plugins"]["block"]]
    try:
        return build_registry(block=block) if block else default_registry()
    except ErError as exc:
        fail(problems + exc.problems)


def _source_problems(
    spec: JobSpec,
    lines: dict[YamlPath, int],
    filename: str,
    base_dir: Path,
    check_files: bool,
    frames: Collection[str] = (),
) -> list[Problem]:
    """Source names unique, HTML options valid, data files present (or the source given in ``frames``),
    the training labels present."""
    problems: list[Problem] = []
    unknown = sorted(set(frames) - {s.name for s in spec.sources})
    if unknown:
        problems.append(
            Problem(
                where=filename,
                path="sources",
                message=f"data given for {unknown}, which the job has no source named",
                fix=f"the job's sources are {[s.name for s in spec.sources]}: name the DataFrames after them",
            )
        )
    if check_files and spec.training is not None and not (base_dir / spec.training.labels).resolve().is_file():
        problems.append(
            problem_at(
                filename,
                lines,
                ("training", "labels"),
                message=f"labels file {spec.training.labels!r} does not exist (looked at {(base_dir / spec.training.labels).resolve()})",
                fix="paths are relative to the YAML file's folder; er review OUT writes a labels file to edit",
            )
        )
    names = [s.name for s in spec.sources]
    for i, s in enumerate(spec.sources):
        if names.index(s.name) != i:
            problems.append(
                problem_at(
                    filename,
                    lines,
                    ("sources", i, "name"),
                    message=f"source name {s.name!r} is used twice",
                    fix="give every source a unique name",
                )
            )
        if s.html is not None:
            for j, fname in enumerate(s.html.fields or []):
                if fname not in s.fields:
                    problems.append(
                        problem_at(
                            filename,
                            lines,
                            ("sources", i, "html", "fields", j),
                            message=f"html field {fname!r} is not one of the source's fields {s.fields}",
                            fix=did_you_mean(fname, s.fields) + "list it under fields too",
                        )
                    )
            try:
                check_boilerplate_options(s.html.boilerplate, s.html.language)
            except ValueError as exc:
                problems.append(problem_at(filename, lines, ("sources", i, "html", "language"), message=str(exc)))
        if s.path is None or s.name in frames:
            if s.name not in frames and s.database is None:
                problems.append(
                    problem_at(
                        filename,
                        lines,
                        ("sources", i, "path"),
                        message=f"required key 'path' is missing: source {s.name!r} has no path",
                        fix="add path: FILE (a .csv, .tsv, .jsonl or .parquet file, relative to the YAML file), "
                        f"or from Python give the data: er_framework.run(job, sources={{{s.name!r}: dataframe}})",
                    )
                )
            continue
        if check_files:
            problems += _path_problems(s.path, i, base_dir, lines, filename)
    return problems


def _path_problems(path: str, i: int, base_dir: Path, lines: dict[YamlPath, int], filename: str) -> list[Problem]:
    """The file (or files, or URL) of source ``i``'s path is there: a path that is not a URL is relative to the job
    file's folder (``base_dir``), a URL never is (:func:`~er_framework.config.source_checks.expand_source_path`)."""
    problems: list[Problem] = []
    local = local_path(path)
    if local is None:
        return url_problems(path, ("sources", i, "path"), lines, filename)
    if is_glob(path) and not expand_source_path(base_dir, path):
        problems.append(
            problem_at(
                filename,
                lines,
                ("sources", i, "path"),
                message=f"the pattern {path!r} matches no file (looked in {(base_dir / local).parent.resolve()})",
                fix="paths are relative to the YAML file's folder; check the pattern",
            )
        )
    elif not is_glob(path) and not (base_dir / local).resolve().exists():
        problems.append(
            problem_at(
                filename,
                lines,
                ("sources", i, "path"),
                message=f"data file {path!r} does not exist (looked at {(base_dir / local).resolve()})",
                fix="paths are relative to the YAML file's folder; check the path",
            )
        )
    return problems


def _shape_problems(spec: JobSpec, lines: dict[YamlPath, int], filename: str) -> list[Problem]:
    """The mode's number of sources; one of 'blocker' and 'blockers'."""
    problems: list[Problem] = []
    expected = {"dedup": (1, 1), "link": (2, 1000), "link_and_dedup": (1, 1000)}[spec.mode]
    if not expected[0] <= len(spec.sources) <= expected[1]:
        want = "exactly one source" if spec.mode == "dedup" else ("at least two sources" if spec.mode == "link" else "at least one source")
        problems.append(
            Problem(
                where=where_of(filename, lines, ("sources",)),
                path="sources",
                message=f"mode {spec.mode!r} needs {want}, got {len(spec.sources)}",
                fix="use mode: link for two or more sources (pairs across sources only), link_and_dedup for pairs within "
                "and across sources, dedup for one",
            )
        )
    for fam in FAMILIES.values():
        if fam.many is not None and getattr(spec, fam.section) is not None and getattr(spec, fam.many) is not None:
            problems.append(
                Problem(
                    where=where_of(filename, lines, (fam.section,)),
                    path=fam.section,
                    message=f"both {fam.section!r} and {fam.many!r} are set",
                    fix=f"use '{fam.many}:' with a list when you need several",
                )
            )
    return problems


_STEPS_FIX = "a normalizer name, a {type: NAME, option: value} mapping, or a list of them"


def _resolve_normalizers(
    section: Any,
    declared: list[str] | None,
    lines: dict[YamlPath, int],
    filename: str,
    registry: Registry,
    problems: list[Problem],
) -> dict[str, list[ComponentSpec]]:
    """The ``normalize:`` section: per field, its chain of normalizers with validated options.

    ``declared``: the fields the sources read (``None``: unknown, not checked).
    """
    if not isinstance(section, dict):
        return {}  # the schema pass reports a section that is not a mapping
    out: dict[str, list[ComponentSpec]] = {}
    for fname, steps in section.items():
        base: YamlPath = ("normalize", str(fname))
        if declared is not None and fname not in declared:
            problems.append(
                problem_at(
                    filename,
                    lines,
                    base,
                    message=f"field {fname!r} is not read by any source",
                    fix=did_you_mean(str(fname), declared) + f"fields of the sources: {choices_text(set(declared))}",
                )
            )
        listed = isinstance(steps, list)
        resolved, found = resolve_steps(steps, registry)
        step_problems = [
            problem_at(
                filename,
                lines,
                base + ((p.index,) if listed else ()) + ((p.key,) if p.key else ()),
                message=p.message,
                fix=p.fix or _STEPS_FIX,
            )
            for p in found
        ]
        for i, step in enumerate(steps if listed else [steps]):
            name = step.get("type") if isinstance(step, dict) else None
            cls = registry.components["normalizer"].get(name) if isinstance(name, str) else None
            if cls is not None and isinstance(step, dict):
                options = {k: v for k, v in step.items() if k != "type"}
                step_problems += without_repeats(
                    type_problems(options, cls.cls.Params, base + ((i,) if listed else ()), filename, lines),
                    step_problems,
                )
        problems += step_problems
        if not step_problems:
            out[str(fname)] = [
                ComponentSpec("normalizer", step[0], step[1], render_path(base + ((i,) if listed else ())))
                for i, step in enumerate(resolved)
                if isinstance(step, tuple)
            ]
    return out


def field_references(params: BaseModel, path: YamlPath = ()) -> list[tuple[YamlPath, str]]:
    """Every source column a component's params name, with its YAML path below the component.

    Found by type, whatever the parameter is called: a value typed
    :data:`~er_framework.components.FieldRef` (also inside lists, tuples,
    unions, as dict keys or values, and in nested models).
    """
    out: list[tuple[YamlPath, str]] = []
    for name, info in type(params).model_fields.items():
        # a parameter's YAML key is its alias when it has one (``with``: a Python keyword)
        out += _refs_in(getattr(params, name), info.annotation, tuple(info.metadata), path + (info.alias or name,))
    return out


def _refs_in(value: Any, ann: Any, metadata: tuple[Any, ...], path: YamlPath) -> list[tuple[YamlPath, str]]:
    if any(m is FIELD_REF for m in metadata):
        return [(path, value)] if isinstance(value, str) else []
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Annotated:
        return _refs_in(value, args[0], tuple(ann.__metadata__), path)
    if origin in (typing.Union, types.UnionType):
        out: list[tuple[YamlPath, str]] = []
        for arm in args:
            out += [ref for ref in _refs_in(value, arm, (), path) if ref not in out]
        return out
    if isinstance(value, BaseModel):
        return field_references(value, path)
    if isinstance(value, (list, tuple)):
        if origin is tuple and args and args[-1] is not Ellipsis:
            items = list(args) + [typing.Any] * max(0, len(value) - len(args))
        else:
            items = [args[0] if args else typing.Any] * len(value)
        return [ref for i, v in enumerate(value) for ref in _refs_in(v, items[i], (), path + (i,))]
    if isinstance(value, dict):
        key_ann, value_ann = args if len(args) == 2 else (typing.Any, typing.Any)
        return [ref for k, v in value.items() for ref in _refs_in(k, key_ann, (), path + (k,)) + _refs_in(v, value_ann, (), path + (k,))]
    return []


def _parse_path(rendered: str) -> YamlPath:
    """The inverse of :func:`render_path`: ``"blockers[0].fields"`` -> ``("blockers", 0, "fields")``."""
    parts = rendered.replace("[", ".").replace("]", "").split(".")
    return tuple(int(x) if x.isdigit() else x for x in parts if x)


def _field_ref_problems(comps: list[ComponentSpec], declared: list[str], lines: dict[YamlPath, int], filename: str) -> list[Problem]:
    """A component may only name fields the sources declare."""
    problems: list[Problem] = []
    for comp in comps:
        base = _parse_path(comp.yaml_path)
        for rel, fname in field_references(comp.params):
            if fname not in declared:
                problems.append(
                    problem_at(
                        filename,
                        lines,
                        base + rel,
                        message=f"field {fname!r} is not read by any source",
                        fix=did_you_mean(fname, declared) + f"fields of the sources: {choices_text(set(declared))}",
                    )
                )
    return problems


def _resolve_one(
    family: str,
    section: Any,
    path: YamlPath,
    filename: str,
    lines: dict[YamlPath, int],
    registry: Registry,
    problems: list[Problem],
) -> ComponentSpec | None:
    where = where_of(filename, lines, path)
    if not isinstance(section, dict):
        problems.append(
            Problem(
                where=where,
                path=render_path(path),
                message=f"expected a mapping with 'type: …', got {json.dumps(section, default=str)}",
                fix=f"write e.g. {path[0]}: {{type: NAME, …}}; installed: {choices_text(registry.names(family))}",
            )
        )
        return None
    if "type" in section and "plugin" in section:
        problems.append(Problem(where=where, path=render_path(path), message="both 'type' and 'plugin' are set", fix="keep 'type'"))
        return None
    type_key = "type" if "type" in section else "plugin"
    name = section.get(type_key)
    installed = registry.names(family)
    if name is None:
        problems.append(
            Problem(
                where=where,
                path=render_path(path + ("type",)),
                message=f"no component chosen for {family}",
                fix=f"add type: NAME; installed: {choices_text(installed)}",
            )
        )
        return None
    if not isinstance(name, str) or name not in registry.components[family]:
        problems.append(
            problem_at(
                filename,
                lines,
                path + (type_key,),
                message=f"unknown {family} {name!r}",
                fix=f"{did_you_mean(str(name), installed)}installed: {choices_text(installed)}",
            )
        )
        return None
    cls = registry.components[family][name].cls
    params_data = {k: v for k, v in section.items() if k != type_key}
    strict = type_problems(params_data, cls.Params, path, filename, lines)
    problems += strict
    try:
        params = cls.Params.model_validate(params_data)
    except ValidationError as exc:
        problems += without_repeats(
            pydantic_problems(
                exc,
                filename,
                lines,
                path,
                known=list(cls.Params.model_fields),
                subject=f"{family} {name!r}",
                model=cls.Params,
            ),
            strict,
        )
        return None
    if strict:
        return None
    return ComponentSpec(family=family, cls=cls, params=params, yaml_path=render_path(path))


def _resolve_components(
    data: dict[str, Any],
    lines: dict[YamlPath, int],
    filename: str,
    registry: Registry,
    problems: list[Problem],
    context: Context,
    *,
    checks: bool = True,
) -> dict[str, Any]:
    """The component sections of the job, family by family (:data:`FAMILIES`), then the rules between them.

    Returns ``{family: ComponentSpec | None}`` (a list for a family allowing several). ``checks``: run
    each component's own rules (:meth:`Component.check`), which read the job settings of ``context``.
    A required section that is missing (or null) is a problem naming it, with an example.
    """
    out: dict[str, Any] = {}
    for fam in FAMILIES.values():
        if fam.per_field:
            continue
        if fam.many is not None:
            out[fam.name] = _resolve_many(fam, data, lines, filename, registry, problems)
            continue
        field = JobSpec.model_fields.get(fam.section)
        default = None if field is None or field.is_required() else field.get_default(call_default_factory=True)
        section = data.get(fam.section, default)
        if section is None and field is not None and (field.is_required() or default is not None):
            # required and absent, or written empty where the job has a default (cluster:)
            example = default.get("type") if isinstance(default, dict) else None
            problems.append(_missing_section(fam, data, lines, filename, registry, example))
        out[fam.name] = None if section is None else _resolve_one(fam.name, section, (fam.section,), filename, lines, registry, problems)
    # cross-component rules
    context.peers = {name: spec.params for name, spec in out.items() if isinstance(spec, ComponentSpec)}
    blockers = out.get("blocker")
    context.blocking_keys = [
        key
        for b in (blockers if isinstance(blockers, list) else [blockers])
        if isinstance(b, ComponentSpec) and issubclass(b.cls, Blocker)
        for key in b.cls.agreement_keys(b.params)
    ]
    problems += _rule_problems(out, data, lines, filename, registry, context, checks=checks)
    return out


#: the component named in the example of a missing required section (when installed)
_EXAMPLE = {"verifier": "jaccard"}


def _missing_section(
    fam: Family,
    data: dict[str, Any],
    lines: dict[YamlPath, int],
    filename: str,
    registry: Registry,
    default: str | None = None,
) -> Problem:
    """A component section absent or written empty where one is needed: named, with an example to copy.

    ``default``: the component used when the section is left out (then leaving it out is the other fix).
    """
    installed = registry.names(fam.name)
    example = default or _EXAMPLE.get(fam.name)
    if example not in installed:
        example = installed[0] if installed else "NAME"
    written = fam.section in data
    if default is not None:
        return Problem(
            where=where_of(filename, lines, (fam.section,)),
            path=fam.section,
            message=f"it is empty: the job must choose a {fam.name} here",
            fix=f"remove the line for the default ({default}), or write e.g. '{fam.section}: {{type: {example}}}' "
            f"(installed: {choices_text(installed)})",
        )
    return Problem(
        where=where_of(filename, lines, (fam.section,)) if written else filename,
        path=fam.section,
        message=f"required — {'it is empty' if written else 'the job has none'}: every job chooses a {fam.name}",
        fix=f"add e.g. '{fam.section}: {{type: {example}}}' (installed: {choices_text(installed)}; er plugins describes them)",
    )


def _resolve_many(
    fam: Family,
    data: dict[str, Any],
    lines: dict[YamlPath, int],
    filename: str,
    registry: Registry,
    problems: list[Problem],
) -> list[ComponentSpec]:
    """A family named by a list (``blockers: [...]``) or by its one-member key (``blocker: {...}``)."""
    assert fam.many is not None
    sections: list[tuple[YamlPath, Any]] = []
    if data.get(fam.many) is not None and not isinstance(data[fam.many], list):
        problems.append(
            problem_at(
                filename,
                lines,
                (fam.many,),
                message=f"{fam.many} must be a list, got {type(data[fam.many]).__name__}",
                fix=f"write {fam.many}: [{{type: NAME, …}}] (or {fam.section}: {{type: NAME}} for one)",
            )
        )
    if isinstance(data.get(fam.many), list):
        sections = [((fam.many, i), b) for i, b in enumerate(data[fam.many])]
    elif data.get(fam.section) is not None:
        sections = [((fam.section,), data[fam.section])]
    specs = [_resolve_one(fam.name, section, path, filename, lines, registry, problems) for path, section in sections]
    if not sections and fam.many not in data and fam.section not in data and fam.name == "blocker":
        problems.append(
            Problem(
                where=filename,
                path=fam.many,
                message="no blocker configured: comparing all pairs is what this framework avoids",
                fix=f"add {fam.many}: [{{type: NAME}}]; installed: {choices_text(registry.names(fam.name))}",
            )
        )
    return [s for s in specs if s is not None]


def _rule_problems(
    comps: dict[str, Any],
    data: dict[str, Any],
    lines: dict[YamlPath, int],
    filename: str,
    registry: Registry,
    context: Context,
    *,
    checks: bool = True,
) -> list[Problem]:
    """Each component's own rules (:meth:`Component.check`, when ``checks``) and the stages the blockers and
    verifier need."""
    problems: list[Problem] = []
    needs: dict[str, list[str]] = {}
    for fam in comps.values():
        for comp in fam if isinstance(fam, list) else [fam]:
            if comp is None:
                continue
            for msg in comp.cls.check(comp.params, context) if checks else []:
                problems.append(problem_at(filename, lines, _parse_path(comp.yaml_path), message=msg))
            if issubclass(comp.cls, (Blocker, Verifier)):
                for need in comp.cls.needs:
                    needs.setdefault(need, []).append(f"{comp.yaml_path} ({comp.cls.name})")
    if "signatures" in needs and data.get("signature") is None:
        problems.append(
            Problem(
                where=filename,
                path="signature",
                message=f"{', '.join(needs['signatures'])} needs signatures, but no 'signature' section is set",
                fix=f"add signature: {{type: NAME}}; installed: {choices_text(registry.names('signature'))}",
            )
        )
    if ("signatures" in needs or "tokens" in needs or data.get("signature") is not None) and data.get("shingler") is None:
        users = needs.get("tokens", []) + (["signature"] if data.get("signature") is not None else [])
        problems.append(
            Problem(
                where=filename,
                path="shingler",
                message=f"{', '.join(users) or 'the job'} needs token sets, but no 'shingler' section is set",
                fix=f"add shingler: {{type: NAME}}; installed: {choices_text(registry.names('shingler'))}",
            )
        )
    if data.get("prune_shingles") is not None and data.get("shingler") is None:
        problems.append(
            problem_at(
                filename,
                lines,
                ("prune_shingles",),
                message="prune_shingles drops shingles, but the job has no 'shingler' section",
                fix="remove prune_shingles, or add shingler: {type: NAME} (and a signature and verifier that read tokens)",
            )
        )
    verifier = comps.get("verifier")
    if verifier is not None:
        vname = verifier.cls.name
        if isinstance(data.get("training"), dict) and not has(verifier.cls, Trainable):
            learners = [n for n in registry.names("verifier") if has(registry.components["verifier"][n].cls, Trainable)]
            problems.append(
                problem_at(
                    filename,
                    lines,
                    ("training",),
                    message=f"verifier {vname!r} does not learn from labelled pairs",
                    fix=f"remove training:, or use a verifier that does: {choices_text(learners)}",
                )
            )
        out = data.get("output")
        if isinstance(out, dict) and out.get("comparisons") is True and not has(verifier.cls, Explainable):
            able = [n for n in registry.names("verifier") if has(registry.components["verifier"][n].cls, Explainable)]
            problems.append(
                problem_at(
                    filename,
                    lines,
                    ("output", "comparisons"),
                    message=f"verifier {vname!r} cannot break its scores into terms",
                    fix=f"remove comparisons: true, or use a verifier that can: {choices_text(able)}",
                )
            )
    return problems


# ----------------------------------------------------------------------------
# the executor's options, checked by the executor's own model


def _resolve_executor(data: dict[str, Any], lines: dict[YamlPath, int], filename: str, problems: list[Problem]) -> Params | None:
    """The options of ``executor: {type: NAME, ...}``, validated by executor NAME's own model.

    Unknown keys are reported with did-you-mean (and, for a key another
    built-in executor takes, its name), wrong types and bad values with their
    YAML path and line. ``None`` when there is a problem; a section that is
    not a mapping or names no installed executor was reported by the schema
    pass. An executor whose model cannot be loaded is a :class:`PluginError`.
    """
    section = data.get("executor", {})
    if not isinstance(section, dict):
        return None
    name = section.get("type", ExecutorSpec.model_fields["type"].default)
    if not isinstance(name, str):
        return None
    try:
        model = executor_params_model(name)
    except ConfigError:
        return None  # no such executor: reported by the schema pass
    path: YamlPath = ("executor",)
    options = {k: v for k, v in section.items() if k != "type"}
    allowed = ["type", *model.model_fields]
    unknown = []
    for key in options:
        if key in model.model_fields:
            continue
        takers = [other for other in BUILTIN_EXECUTORS if other != name and key in executor_params_model(other).model_fields]
        elsewhere = f"{key!r} is an option of executor {' and '.join(takers)}, not of {name!r}; " if takers else ""
        unknown.append(
            problem_at(
                filename,
                lines,
                path + (str(key),),
                message=f"unknown key {key!r}",
                fix=elsewhere + did_you_mean(str(key), allowed) + f"allowed keys of executor {name!r}: {choices_text(allowed)}",
            )
        )
    known = {k: v for k, v in options.items() if k in model.model_fields}
    strict = type_problems(known, model, path, filename, lines)
    problems += unknown + strict
    try:
        params = model.model_validate(known)
    except ValidationError as exc:
        problems += without_repeats(pydantic_problems(exc, filename, lines, path, known=list(model.model_fields), model=model), strict)
        return None
    return None if unknown or strict else params
