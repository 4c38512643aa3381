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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from er_framework.components import Blocker, Component, Context, Params, Verifier
from er_framework.io.html import check_boilerplate_options
from er_framework.errors import ConfigError, ErError, Problem, choices_text, did_you_mean
from er_framework.normalize import check_steps
from er_framework.kernels.parallel import resolve_workers
from er_framework.registry import Registry, build_registry, default_registry

YamlPath = tuple[str | int, ...]


# ----------------------------------------------------------------------------
# pass 1: YAML with duplicate-key detection and line numbers


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys and records where values are."""


def _render_path(path: YamlPath) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(top level)"


def load_yaml(text: str, filename: str) -> tuple[Any, dict[YamlPath, int], list[Problem]]:
    """Parse YAML text into Python data plus a map YAML path -> line number.

    Duplicate keys are problems (the later value is not silently taken).
    """
    problems: list[Problem] = []
    lines: dict[YamlPath, int] = {}
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        return None, lines, [
            Problem(
                where=f"{filename}{line}",
                message=f"not valid YAML: {exc.problem or exc}",
                fix="check indentation, colons and quotes around this line",
            )
        ]
    except yaml.YAMLError as exc:
        return None, lines, [Problem(where=filename, message=f"not valid YAML: {exc}")]
    finally:
        loader.dispose()
    if node is None:
        return None, lines, [
            Problem(where=filename, message="the file is empty", fix="write a job (see configs/documents.yaml)")
        ]

    def convert(n: yaml.Node, path: YamlPath) -> Any:
        lines[path] = n.start_mark.line + 1
        if isinstance(n, yaml.MappingNode):
            out: dict[Any, Any] = {}
            first_line: dict[Any, int] = {}
            loader.flatten_mapping(n)
            for key_node, value_node in n.value:
                key = loader.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    problems.append(
                        Problem(
                            where=f"{filename}:{key_node.start_mark.line + 1}",
                            path=_render_path(path),
                            message=f"keys must be plain scalars, got {key!r}",
                        )
                    )
                    continue
                if key in out:
                    problems.append(
                        Problem(
                            where=f"{filename}:{key_node.start_mark.line + 1}",
                            path=_render_path(path + (str(key),)),
                            message=(
                                f"duplicate key {key!r} (first defined on line {first_line[key]})"
                            ),
                            fix="keep one of the two; YAML would silently take the last one",
                        )
                    )
                    continue
                first_line[key] = key_node.start_mark.line + 1
                out[key] = convert(value_node, path + (str(key),))
            return out
        if isinstance(n, yaml.SequenceNode):
            return [convert(v, path + (i,)) for i, v in enumerate(n.value)]
        return loader.construct_object(n, deep=True)

    try:
        data = convert(node, ())
    except yaml.YAMLError as exc:
        return None, lines, [Problem(where=filename, message=f"not valid YAML: {exc}")]
    return data, lines, problems


# ----------------------------------------------------------------------------
# pass 2: the job schema


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HtmlSpec(_Strict):
    """Columns that hold HTML: replaced by their visible text before shingling."""

    fields: list[str] | None = Field(
        default=None, description="columns holding HTML (default: all the source's fields)"
    )
    boilerplate: Literal["keep", "drop"] = Field(
        default="keep", description="drop: remove navigation, footers and other chrome (jusText)"
    )
    language: str = Field(default="English", description="jusText stop list used to spot boilerplate")


class SourceSpec(_Strict):
    """One input source."""

    name: str = Field(min_length=1, description="unique source name")
    path: str = Field(min_length=1, description="data file: .csv, .tsv, .jsonl, .parquet (relative to the YAML file)")
    id: str = Field(default="id", min_length=1, description="id column; ids unique within the source")
    fields: list[str] = Field(min_length=1, description="columns the job reads")
    layout: Literal["wide", "long"] = Field(
        default="wide",
        description="long: rows sharing an id form one record, each field a JSON list of its values (e.g. minutiae rows id,x,y)",
    )
    html: HtmlSpec | None = Field(
        default=None, description="extract visible text from HTML columns (a folder of .html files has the column 'html')"
    )


class ExactSpec(_Strict):
    """Exact-duplicate stage: one stable hash of the normalized content."""

    enabled: bool = True
    normalize: bool = Field(
        default=True, description="NFKC, lower-case and fold whitespace before hashing"
    )


class OutputSpec(_Strict):
    dir: str | None = Field(default=None, description="output folder (relative to the YAML file); --out overrides")
    format: Literal["csv", "parquet"] = "csv"
    candidates: bool = Field(
        default=False,
        description="also write candidates.csv: every candidate pair with its score (for er evaluate's pair completeness)",
    )


class PluginsSpec(_Strict):
    block: list[str] = Field(default_factory=list, description="plugin names not to load")


class LocalClusterSpec(_Strict):
    n_workers: int = Field(default=2, ge=1, le=1024, description="worker processes")
    threads_per_worker: int = Field(default=1, ge=1, le=256, description="threads per worker process")
    memory_limit: str | None = Field(default=None, description="per worker, e.g. '4GB' (default: Dask's share of RAM)")


class ExecutorSpec(_Strict):
    """Where the job runs: in this process (default) or on a Dask cluster."""

    type: Literal["local", "dask"] = "local"
    address: str | None = Field(default=None, description="dask: the scheduler, e.g. tcp://host:8786")
    local_cluster: LocalClusterSpec | None = Field(
        default=None, description="dask: start a LocalCluster of worker processes on this machine instead"
    )
    partition_mb: float = Field(
        default=64.0, gt=0, description="dask: input bytes per partition (uncompressed JSONL/CSV files are split)"
    )

    cluster_on: Literal["client", "workers"] = Field(
        default="client",
        description="dask: 'client' gathers the verified pairs and runs the job's clusterer; 'workers' reduces "
        "them to a spanning forest on the workers first (connected_components only; same clusters)",
    )

    @model_validator(mode="after")
    def _where(self) -> "ExecutorSpec":
        if self.type == "dask" and (self.address is None) == (self.local_cluster is None):
            raise ValueError("a dask executor needs exactly one of 'address' (a running scheduler) or 'local_cluster'")
        if self.type == "local" and (self.address is not None or self.local_cluster is not None):
            raise ValueError("'address' and 'local_cluster' are for type: dask")
        return self


class JobSpec(_Strict):
    """The YAML job, before components are resolved."""

    name: str | None = None
    mode: Literal["dedup", "link", "link_and_dedup"] = "dedup"
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    threshold: float | None = Field(default=None, gt=0.0, le=1.0)
    sources: list[SourceSpec] = Field(min_length=1)
    exact_duplicates: ExactSpec | bool = True
    shingler: dict[str, Any] | None = None
    signature: dict[str, Any] | None = None
    blocker: dict[str, Any] | None = None
    blockers: list[dict[str, Any]] | None = None
    verifier: dict[str, Any]
    cluster: dict[str, Any] = Field(
        default_factory=lambda: {"type": "label_propagation"},
        description="clusterer (default label_propagation: best B-cubed F1 against connected components in benchmarks/README.md)",
    )
    workers: int | str = Field(
        default="auto",
        description="threads for shingling, signatures and verification ('auto': the available cores); "
        "results are identical for any value",
    )
    normalize: dict[str, Any] = Field(
        default_factory=dict,
        description="per field, a normalizer or a chain of them applied to every source before any other stage, "
        "e.g. {first_name: [name, nickname], phone: phone}; missing values stay missing (er plugins lists them)",
    )
    chunk_records: int = Field(
        default=10000,
        ge=1,
        description="records shingled and signed per step (bounds the memory of those stages); results are "
        "identical for any value",
    )
    token_memory_mb: float = Field(
        default=2048,
        ge=0,
        description="token sets kept in memory up to this size after signing (for verification); a larger "
        "corpus is streamed and the token sets of candidate records are recomputed (0: always stream)",
    )
    diagnostics: int = Field(
        default=2000, ge=0, description="records probed for the report's blocker diagnostics (0: off)"
    )
    output: OutputSpec = Field(default_factory=OutputSpec)
    plugins: PluginsSpec = Field(default_factory=PluginsSpec)
    executor: ExecutorSpec = Field(
        default_factory=ExecutorSpec,
        description="local (default) or dask: {type: dask, address: tcp://host:8786} or {type: dask, local_cluster: {n_workers: 2}}",
    )

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, v: Any) -> int | str:
        if v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1024):
            return v  # type: ignore[no-any-return]
        raise ValueError("workers must be a whole number from 1 to 1024 or 'auto'")

    @field_validator("exact_duplicates")
    @classmethod
    def _exact(cls, v: ExactSpec | bool) -> ExactSpec | bool:
        return ExactSpec(enabled=v) if isinstance(v, bool) else v


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
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def exact(self) -> ExactSpec:
        assert isinstance(self.spec.exact_duplicates, ExactSpec)
        return self.spec.exact_duplicates

    def source_path(self, i: int) -> Path:
        return (self.base_dir / self.spec.sources[i].path).resolve()

    def source_paths(self, i: int) -> list[Path]:
        """The files of source ``i``: its path, or the files its glob pattern matches, sorted by name."""
        return expand_source_path(self.base_dir, self.spec.sources[i].path)

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

        return {
            "name": self.spec.name,
            "mode": self.spec.mode,
            "seed": self.spec.seed,
            "threshold": self.spec.threshold,
            "sources": [s.model_dump() for s in self.spec.sources],
            "exact_duplicates": self.exact.model_dump(),
            "shingler": comp(self.shingler),
            "signature": comp(self.signature),
            "blockers": [comp(b) for b in self.blockers],
            "verifier": comp(self.verifier),
            "cluster": comp(self.clusterer),
        }


def is_glob(path: str) -> bool:
    """A source path with ``*``, ``?`` or ``[``: a pattern naming several files of one source."""
    return any(c in path for c in "*?[")


def expand_source_path(base_dir: Path, path: str) -> list[Path]:
    """``[base_dir / path]``, or for a glob pattern the matching files sorted by name (their records
    are read in that order, so a source's record order does not depend on the filesystem)."""
    if not is_glob(path):
        return [(base_dir / path).resolve()]
    import glob

    pattern = str(base_dir / path)
    return sorted(Path(p).resolve() for p in glob.glob(pattern, recursive=True) if Path(p).is_file())


def _line_of(lines: dict[YamlPath, int], path: YamlPath) -> int | None:
    p = tuple(path)
    while p:
        if p in lines:
            return lines[p]
        p = p[:-1]
    return lines.get(())


def _where(filename: str, lines: dict[YamlPath, int], path: YamlPath) -> str:
    line = _line_of(lines, path)
    return f"{filename}:{line}" if line else filename


def _at(filename: str, lines: dict[YamlPath, int], path: YamlPath, message: str, fix: str = "") -> Problem:
    """A problem at a YAML path: ``file:line``, the rendered path, the message and the fix."""
    return Problem(where=_where(filename, lines, path), path=_render_path(path), message=message, fix=fix)


_COMPONENT_SECTIONS = ("shingler", "signature", "blocker", "blockers", "verifier", "cluster")


def _pydantic_problems(
    exc: ValidationError,
    filename: str,
    lines: dict[YamlPath, int],
    prefix: YamlPath,
    known: list[str] | None = None,
    subject: str = "",
    model: type[BaseModel] | None = None,
) -> list[Problem]:
    """Map pydantic errors to problems with file:line, YAML path, value and fix.

    ``known`` lists the allowed keys (for unknown-key messages); ``subject``
    names the component ("blocker 'lsh_bands'") in messages.
    """
    out = []
    for err in exc.errors():
        raw_loc = tuple(err["loc"])
        if not prefix and raw_loc and raw_loc[0] in _COMPONENT_SECTIONS:
            continue  # component sections are checked (with better messages) when resolved
        if "bool" in raw_loc and isinstance(err.get("input"), dict):
            continue  # a mapping given for a `bool | mapping` key: only the mapping's errors matter
        # pydantic adds union member names ('ExactSpec', 'bool') to locations; drop them
        loc = tuple(x for x in raw_loc if not (isinstance(x, str) and x in ("ExactSpec", "bool")))
        path = prefix + loc
        etype = err["type"]
        key = str(path[-1]) if path else ""
        if etype == "extra_forbidden":
            allowed = (_nested_keys(model, loc[:-1]) if model is not None and len(loc) > 1 else None) or known or []
            out.append(
                _at(
                    filename, lines, path,
                    message=f"{subject + ' has no parameter' if subject else 'unknown key'} {key!r}",
                    fix=did_you_mean(key, allowed) + f"allowed: {choices_text(allowed)}",
                )
            )
        elif etype == "missing":
            out.append(
                Problem(
                    where=_where(filename, lines, path[:-1]),
                    path=_render_path(path),
                    message=f"{subject + ' needs' if subject else 'required key'} {key!r}"
                    + ("" if subject else " is missing"),
                    fix=f"add {key}: … here",
                )
            )
        else:
            value = err.get("input")
            shown = json.dumps(value, default=str) if not isinstance(value, dict) else "{…}"
            out.append(
                _at(
                    filename, lines, path,
                    message=f"{err['msg'].removeprefix('Value error, ')} (got {shown})",
                    fix=_fix_for(err),
                )
            )
    return out


def _nested_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """Field names of the pydantic model found at ``loc`` inside ``model`` (for nested sections)."""
    import typing

    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return None
        ann = fields[part].annotation
        candidates = [a for a in typing.get_args(ann) if isinstance(a, type) and issubclass(a, BaseModel)]
        current = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else (candidates[0] if candidates else None)
        if current is None:
            return None
    return list(current.model_fields)


def _fix_for(err: Any) -> str:
    ctx = err.get("ctx") or {}
    etype = err["type"]
    if "expected" in ctx:
        return f"use one of: {ctx['expected']}"
    if etype in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bounds = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in ctx.items())
        return f"use a value {bounds}"
    if etype.endswith("_type") or etype.endswith("_parsing"):
        return f"expected a {etype.split('_')[0]}"
    if etype == "too_short":
        return "add at least one entry"
    return ""


def _model_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _extra_key_problems(
    data: dict[str, Any], model: type[BaseModel], path: YamlPath, filename: str, lines: dict[YamlPath, int],
    ignore: tuple[str, ...] = (),
) -> list[Problem]:
    known = _model_keys(model)
    out = []
    for key in data:
        if key in known or key in ignore:
            continue
        fix = did_you_mean(str(key), known) + f"allowed keys: {choices_text(known + list(ignore))}"
        out.append(
            _at(
                filename, lines, path + (str(key),),
                message=f"unknown key {key!r}",
                fix=fix,
            )
        )
    return out


def parse_job(
    path: str | Path,
    registry: Registry | None = None,
    *,
    check_files: bool = True,
) -> Job:
    """Read and validate a job file; raise :class:`ConfigError` listing every problem."""
    path = Path(path)
    filename = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            Problem(where=filename, message="no such file", fix=f"looked at {path.resolve()}")
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(Problem(where=filename, message=f"cannot read the file: {exc}")) from None
    data, lines, problems = load_yaml(text, filename)
    if data is None:
        raise ConfigError(problems)
    if not isinstance(data, dict):
        raise ConfigError(
            problems
            + [Problem(where=filename, message=f"a job must be a mapping of keys, got {type(data).__name__}")]
        )
    return resolve_job(data, lines, filename, path.resolve().parent, problems, registry, check_files=check_files, config_path=path)


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
) -> Job:
    problems = list(problems or [])
    # unknown keys are reported by us (with the allowed list); other schema errors by pydantic
    problems += _extra_key_problems(data, JobSpec, (), filename, lines)
    sections: dict[str, type[BaseModel]] = {
        "output": OutputSpec, "plugins": PluginsSpec, "exact_duplicates": ExactSpec, "executor": ExecutorSpec,
    }
    for key, model in sections.items():  # unknown keys reported here (with did-you-mean), then dropped
        if isinstance(data.get(key), dict):
            problems += _extra_key_problems(data[key], model, (key,), filename, lines)
    if isinstance(data.get("sources"), list):
        for i, s in enumerate(data["sources"]):
            if isinstance(s, dict):
                problems += _extra_key_problems(s, SourceSpec, ("sources", i), filename, lines)
                if isinstance(s.get("html"), dict):
                    problems += _extra_key_problems(s["html"], HtmlSpec, ("sources", i, "html"), filename, lines)
    clean = {k: v for k, v in data.items() if k in JobSpec.model_fields}
    for key, model in sections.items():
        if isinstance(clean.get(key), dict):
            clean[key] = {k: v for k, v in clean[key].items() if k in model.model_fields}
    if isinstance(clean.get("sources"), list):
        clean["sources"] = [
            {k: v for k, v in s.items() if k in SourceSpec.model_fields} if isinstance(s, dict) else s
            for s in clean["sources"]
        ]
        for s in clean["sources"]:
            if isinstance(s, dict) and isinstance(s.get("html"), dict):
                s["html"] = {k: v for k, v in s["html"].items() if k in HtmlSpec.model_fields}
    spec: JobSpec | None = None
    try:
        spec = JobSpec.model_validate(clean)
    except ValidationError as exc:
        problems += _pydantic_problems(exc, filename, lines, ())

    if registry is None:
        block = []
        if isinstance(data.get("plugins"), dict) and isinstance(data["plugins"].get("block"), list):
            block = [str(b) for b in data["plugins"]["block"]]
        if block:
            try:
                registry = build_registry(block=block)
            except ErError as exc:
                raise ConfigError(problems + exc.problems) from None
        else:
            try:
                registry = default_registry()
            except ErError as exc:
                raise ConfigError(problems + exc.problems) from None

    if spec is None:
        # still resolve the component sections we can, so every problem is reported at once
        _resolve_components(data, lines, filename, registry, problems, Context())
        raise ConfigError(problems)

    # sources: names unique, mode vs count, files exist
    names = [s.name for s in spec.sources]
    for i, s in enumerate(spec.sources):
        if names.index(s.name) != i:
            problems.append(
                _at(
                    filename, lines, ("sources", i, "name"),
                    message=f"source name {s.name!r} is used twice",
                    fix="give every source a unique name",
                )
            )
        if s.html is not None:
            for j, fname in enumerate(s.html.fields or []):
                if fname not in s.fields:
                    problems.append(
                        _at(
                            filename, lines, ("sources", i, "html", "fields", j),
                            message=f"html field {fname!r} is not one of the source's fields {s.fields}",
                            fix=did_you_mean(fname, s.fields) + "list it under fields too",
                        )
                    )
            try:
                check_boilerplate_options(s.html.boilerplate, s.html.language)
            except ValueError as exc:
                problems.append(_at(filename, lines, ("sources", i, "html", "language"), message=str(exc)))
        if check_files and is_glob(s.path):
            if not expand_source_path(base_dir, s.path):
                problems.append(
                    _at(
                        filename, lines, ("sources", i, "path"),
                        message=f"the pattern {s.path!r} matches no file (looked in {(base_dir / s.path).parent.resolve()})",
                        fix="paths are relative to the YAML file's folder; check the pattern",
                    )
                )
        elif check_files:
            p = (base_dir / s.path).resolve()
            if not p.exists():
                problems.append(
                    _at(
                        filename, lines, ("sources", i, "path"),
                        message=f"data file {s.path!r} does not exist (looked at {p})",
                        fix="paths are relative to the YAML file's folder; check the path",
                    )
                )
    expected = {"dedup": (1, 1), "link": (2, 2), "link_and_dedup": (1, 1000)}[spec.mode]
    if not expected[0] <= len(spec.sources) <= expected[1]:
        want = "exactly one source" if spec.mode == "dedup" else (
            "exactly two sources" if spec.mode == "link" else "at least one source"
        )
        problems.append(
            Problem(
                where=_where(filename, lines, ("sources",)),
                path="sources",
                message=f"mode {spec.mode!r} needs {want}, got {len(spec.sources)}",
                fix="use mode: link for two sources, link_and_dedup for several, dedup for one",
            )
        )
    if spec.blocker is not None and spec.blockers is not None:
        problems.append(
            Problem(
                where=_where(filename, lines, ("blocker",)),
                path="blocker",
                message="both 'blocker' and 'blockers' are set",
                fix="use 'blockers:' with a list when you need several",
            )
        )

    declared_fields = [f for s in spec.sources for f in s.fields]
    for fname, steps in spec.normalize.items():
        if fname not in declared_fields:
            problems.append(
                _at(
                    filename, lines, ("normalize", fname),
                    message=f"field {fname!r} is not read by any source",
                    fix=did_you_mean(fname, declared_fields) + f"fields of the sources: {choices_text(set(declared_fields))}",
                )
            )
        for msg in check_steps(steps):
            problems.append(
                _at(filename, lines, ("normalize", fname), message=msg,
                    fix="a normalizer name, a {type: NAME, option: value} mapping, or a list of them")
            )

    context = Context(seed=spec.seed, threshold=spec.threshold, mode=spec.mode, workers=resolve_workers(spec.workers))
    comps = _resolve_components(data, lines, filename, registry, problems, context)
    # a component reading named fields may only name fields the sources declare
    declared = [f for s in spec.sources for f in s.fields]
    for comp in [comps["shingler"], comps["signature"], *comps["blockers"], comps["verifier"]]:
        if comp is None:
            continue
        base = tuple(comp.yaml_path.replace("[", ".").replace("]", "").split("."))
        base = tuple(int(x) if isinstance(x, str) and x.isdigit() else x for x in base)
        for rel, fname in _field_refs(comp.params):
            if fname not in declared:
                ypath = base + rel
                problems.append(
                    Problem(
                        where=_where(filename, lines, ypath),
                        path=_render_path(ypath),
                        message=f"field {fname!r} is not read by any source",
                        fix=did_you_mean(fname, declared) + f"fields of the sources: {choices_text(set(declared))}",
                    )
                )
    if problems:
        raise ConfigError(problems)
    assert comps["verifier"] is not None and comps["clusterer"] is not None
    if spec.exact_duplicates is True or spec.exact_duplicates is False:  # pragma: no cover
        spec.exact_duplicates = ExactSpec(enabled=bool(spec.exact_duplicates))
    return Job(
        spec=spec,
        config_path=config_path or Path(filename),
        base_dir=base_dir,
        registry=registry,
        context=context,
        shingler=comps["shingler"],
        signature=comps["signature"],
        blockers=comps["blockers"],
        verifier=comps["verifier"],
        clusterer=comps["clusterer"],
        raw=data,
    )


#: parameter names that hold field names (a name, a list of names, lists of lists, or models with ``field``)
_FIELD_PARAMS = ("fields", "field", "key", "keys")


def _field_refs(value: Any, path: YamlPath = ()) -> list[tuple[YamlPath, str]]:
    """Every field name a component's params refer to, with its YAML path below the component."""
    out: list[tuple[YamlPath, str]] = []
    if isinstance(value, BaseModel):
        for name in _FIELD_PARAMS:
            if name in type(value).model_fields:
                out += _field_names(getattr(value, name), path + (name,))
        for name in type(value).model_fields:  # nested models (e.g. one rule per field)
            v = getattr(value, name)
            if name not in _FIELD_PARAMS and isinstance(v, (list, BaseModel)):
                out += _field_refs(v, path + (name,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, BaseModel):
                out += _field_refs(v, path + (i,))
    return out


def _field_names(value: Any, path: YamlPath) -> list[tuple[YamlPath, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, list):
        return [ref for i, v in enumerate(value) for ref in _field_names(v, path + (i,))]
    if isinstance(value, BaseModel):
        return _field_refs(value, path)
    return []


def _resolve_one(
    family: str,
    section: Any,
    path: YamlPath,
    filename: str,
    lines: dict[YamlPath, int],
    registry: Registry,
    problems: list[Problem],
) -> ComponentSpec | None:
    where = _where(filename, lines, path)
    if not isinstance(section, dict):
        problems.append(
            Problem(
                where=where,
                path=_render_path(path),
                message=f"expected a mapping with 'type: …', got {json.dumps(section, default=str)}",
                fix=f"write e.g. {path[0]}: {{type: NAME, …}}; installed: {choices_text(registry.names(family))}",
            )
        )
        return None
    if "type" in section and "plugin" in section:
        problems.append(
            Problem(where=where, path=_render_path(path), message="both 'type' and 'plugin' are set", fix="keep 'type'")
        )
        return None
    type_key = "type" if "type" in section else "plugin"
    name = section.get(type_key)
    installed = registry.names(family)
    if name is None:
        problems.append(
            Problem(
                where=where,
                path=_render_path(path + ("type",)),
                message=f"no component chosen for {family}",
                fix=f"add type: NAME; installed: {choices_text(installed)}",
            )
        )
        return None
    if not isinstance(name, str) or name not in registry.components[family]:
        problems.append(
            _at(
                filename, lines, path + (type_key,),
                message=f"unknown {family} {name!r}",
                fix=f"{did_you_mean(str(name), installed)}installed: {choices_text(installed)}",
            )
        )
        return None
    cls = registry.components[family][name].cls
    params_data = {k: v for k, v in section.items() if k != type_key}
    try:
        params = cls.Params.model_validate(params_data)
    except ValidationError as exc:
        problems += _pydantic_problems(
            exc, filename, lines, path, known=list(cls.Params.model_fields), subject=f"{family} {name!r}",
            model=cls.Params,
        )
        return None
    return ComponentSpec(family=family, cls=cls, params=params, yaml_path=_render_path(path))


def _resolve_components(
    data: dict[str, Any],
    lines: dict[YamlPath, int],
    filename: str,
    registry: Registry,
    problems: list[Problem],
    context: Context,
) -> dict[str, Any]:
    out: dict[str, Any] = {"shingler": None, "signature": None, "blockers": [], "verifier": None, "clusterer": None}
    if data.get("shingler") is not None:
        out["shingler"] = _resolve_one("shingler", data["shingler"], ("shingler",), filename, lines, registry, problems)
    if data.get("signature") is not None:
        out["signature"] = _resolve_one("signature", data["signature"], ("signature",), filename, lines, registry, problems)
    blocker_sections: list[tuple[YamlPath, Any]] = []
    if data.get("blockers") is not None and not isinstance(data["blockers"], list):
        problems.append(
            _at(
                filename, lines, ("blockers",),
                message=f"blockers must be a list, got {type(data['blockers']).__name__}",
                fix="write blockers: [{type: NAME, …}] (or blocker: {type: NAME} for one)",
            )
        )
    if isinstance(data.get("blockers"), list):
        blocker_sections = [(("blockers", i), b) for i, b in enumerate(data["blockers"])]
    elif data.get("blocker") is not None:
        blocker_sections = [(("blocker",), data["blocker"])]
    for path, section in blocker_sections:
        spec = _resolve_one("blocker", section, path, filename, lines, registry, problems)
        if spec is not None:
            out["blockers"].append(spec)
    if data.get("verifier") is not None:
        out["verifier"] = _resolve_one("verifier", data["verifier"], ("verifier",), filename, lines, registry, problems)
    cluster = data.get("cluster", {"type": "label_propagation"})
    out["clusterer"] = _resolve_one("clusterer", cluster, ("cluster",), filename, lines, registry, problems)

    if not blocker_sections and "blockers" not in data and "blocker" not in data:
        problems.append(
            Problem(
                where=filename,
                path="blockers",
                message="no blocker configured: comparing all pairs is what this framework avoids",
                fix=f"add blockers: [{{type: NAME}}]; installed: {choices_text(registry.names('blocker'))}",
            )
        )

    # cross-component rules
    peers: dict[str, Params] = {}
    for fam in ("shingler", "signature", "verifier", "clusterer"):
        if out[fam] is not None:
            peers[fam] = out[fam].params
    context.peers = peers
    needs: dict[str, list[str]] = {}
    for comp, path in [(c, c.yaml_path) for c in out["blockers"]] + (
        [(out["verifier"], "verifier")] if out["verifier"] is not None else []
    ):
        for msg in comp.cls.check(comp.params, context):
            problems.append(Problem(where=filename, path=path, message=msg, fix=""))
        if issubclass(comp.cls, (Blocker, Verifier)):
            for need in comp.cls.needs:
                needs.setdefault(need, []).append(f"{path} ({comp.cls.name})")
    if out["shingler"] is not None:
        for msg in out["shingler"].cls.check(out["shingler"].params, context):
            problems.append(Problem(where=filename, path="shingler", message=msg))
    if out["signature"] is not None:
        for msg in out["signature"].cls.check(out["signature"].params, context):
            problems.append(Problem(where=filename, path="signature", message=msg))
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
    return out
