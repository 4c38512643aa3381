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

import collections.abc
import hashlib
import json
import re
import stat
import types
import typing
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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
from er_framework.errors import ConfigError, ErError, Problem, choices_text, did_you_mean
from er_framework.io.html import check_boilerplate_options
from er_framework.kernels.parallel import resolve_workers
from er_framework.normalize import resolve_steps
from er_framework.registry import Registry, build_registry, default_registry, executor_table

YamlPath = tuple[str | int, ...]
#: the outermost alias on the way to a value: (its line, its anchor's name), or None
Via = tuple[int, str] | None


# ----------------------------------------------------------------------------
# pass 1: YAML with duplicate-key detection and line numbers


#: deepest nesting of mappings and lists accepted (a job needs five or six levels)
MAX_DEPTH = 50
#: values (scalars, lists, mappings) a job file may hold as written: a job has a few dozen; a 4 MB list of
#: numbers would be two million, and PyYAML's nodes of them over a gigabyte
MAX_NODES = 100_000
#: values an alias may add when it is expanded, over the whole file (its own nodes and text count once)
MAX_ALIAS_NODES = 10_000
MAX_ALIAS_CHARS = 1_000_000

_CORE = "tag:yaml.org,2002:"
#: tags a job's values may carry: the plain YAML types (implicit, or spelled out as ``!!str`` etc.)
_SCALAR_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
_MERGE_TAG = _CORE + "merge"


class _TooDeep(Exception):
    def __init__(self, mark: yaml.Mark | None) -> None:
        super().__init__()
        self.mark = mark


class _TooMany(_TooDeep):
    pass


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses mappings and lists nested deeper than :data:`MAX_DEPTH`
    (PyYAML's composer recurses once per level: 10,000 ``[`` would overflow the stack) and more than
    :data:`MAX_NODES` values."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        #: where each alias is used: (id of its parent node, list index or id of its key node) -> (line, name)
        self.alias_uses: dict[tuple[int, int, bool], tuple[int, str]] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent) and parent is not None and index is not None:
            event = self.peek_event()
            self.alias_uses[_child_key(parent, index)] = (event.start_mark.line + 1, str(event.anchor))
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)
            if self._nodes > MAX_NODES:
                raise _TooMany(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _child_key(parent: yaml.Node, index: Any) -> tuple[int, int, bool]:
    """A child's place in its parent: a list index, or the key node of a mapping value."""
    return (id(parent), index, True) if isinstance(index, int) else (id(parent), id(index), False)


def _render_path(path: YamlPath) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(top level)"


def _render_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag


def _too_deep(filename: str, line: int | None) -> Problem:
    return Problem(
        where=f"{filename}:{line}" if line else filename,
        message=f"mappings and lists nested more than {MAX_DEPTH} levels deep; a job file needs at most a few",
        fix="this is not a job file, or a generated one gone wrong: write the job out by hand (see configs/)",
    )


class _Refused(Exception):
    """A value the job loader will not build: stops the conversion with its problem."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def load_yaml(text: str, filename: str) -> tuple[Any, dict[YamlPath, int], list[Problem]]:
    """Parse YAML text into Python data plus a map YAML path -> line number.

    Duplicate keys are problems (the later value is not silently taken). The
    file is someone's text, possibly a stranger's (a job stored in an index
    is parsed again when the index is opened), so it is built with bounds:

    * only plain YAML values: a tag other than ``!!str``, ``!!int``,
      ``!!float``, ``!!bool``, ``!!null``, ``!!timestamp`` (e.g.
      ``!!python/object/apply``, ``!!binary``, ``!!set``, ``!custom``) is a
      problem naming the tag and its line, never silently dropped;
    * mappings and lists nested at most :data:`MAX_DEPTH` levels, at most
      :data:`MAX_NODES` values written;
    * anchors and aliases are kept for small re-use (``defaults: &d {...}``
      then ``<<: *d`` or ``*d``), since that is ordinary YAML a user may
      write, but what aliases add when expanded is capped
      (:data:`MAX_ALIAS_NODES` values, :data:`MAX_ALIAS_CHARS` characters
      over the file): a "billion laughs" file of nested aliases, which this
      line-tracking conversion would otherwise expand in full (gigabytes from
      a kilobyte), is refused after a few thousand values. Merge keys are
      expanded here, under the same count (PyYAML's own merge copies the
      merged entries at every level, exponential in the nesting of merges);
      an alias inside its own anchor is refused.
    """
    problems: list[Problem] = []
    lines: dict[YamlPath, int] = {}
    loader: _LineLoader | None = None
    try:
        loader = _LineLoader(text)
        node = loader.get_single_node()
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = ord(exc.character) if isinstance(exc.character, str) else int(exc.character)
        char = "NUL" if code == 0 else f"#x{code:04x}"
        return None, lines, [
            Problem(
                where=f"{filename}:{line}",
                message=f"the file holds a character YAML does not allow: {char} (column {column})",
                fix="a job file is plain text: remove the character (is this the right file?)",
            )
        ]
    except _TooMany as exc:
        return None, lines, [
            Problem(
                where=f"{filename}:{exc.mark.line + 1}" if exc.mark is not None else filename,
                message=f"more than {MAX_NODES:,} values (a job holds a few dozen): not a job file",
                fix="give the job's YAML file; data belongs in the sources' files",
            )
        ]
    except _TooDeep as exc:
        return None, lines, [_too_deep(filename, exc.mark.line + 1 if exc.mark is not None else None)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line_text = f":{mark.line + 1}" if mark is not None else ""
        return None, lines, [
            Problem(
                where=f"{filename}{line_text}",
                message=f"not valid YAML: {exc.problem or exc}",
                fix="check indentation, colons and quotes around this line",
            )
        ]
    except yaml.YAMLError as exc:
        return None, lines, [Problem(where=filename, message=f"not valid YAML: {exc}")]
    except RecursionError:  # pragma: no cover - the depth limit comes first
        return None, lines, [_too_deep(filename, None)]
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        return None, lines, [
            Problem(where=filename, message="the file is empty", fix="write a job (see configs/documents.yaml)")
        ]
    assert loader is not None

    seen: set[int] = set()  # nodes converted once (a second visit is an alias being expanded)
    active: list[yaml.Node] = []  # the nodes being converted, outermost first
    budget = {"nodes": 0, "chars": 0}

    def at(n: yaml.Node) -> str:
        return f"{filename}:{n.start_mark.line + 1}"

    refused: list[Problem] = []  # values not built (the data is not returned; every one is reported)

    def refuse_tag(n: yaml.Node, path: YamlPath) -> None:
        refused.append(
            Problem(
                where=at(n),
                path=_render_path(path),
                message=f"tag {_render_tag(n.tag)} is not allowed in a job file",
                fix="remove the tag: a job holds plain strings, numbers, booleans, lists and mappings",
            )
        )

    def scalar(n: yaml.ScalarNode, path: YamlPath) -> Any:
        if n.tag not in _SCALAR_TAGS:
            refuse_tag(n, path)
            return None
        try:
            return loader.construct_object(n, deep=True)
        except (ValueError, OverflowError, yaml.YAMLError) as exc:
            refused.append(
                Problem(
                    where=at(n), path=_render_path(path), message=f"cannot read the value {n.value!r}: {exc}",
                    fix="quote it to keep it as text, or correct it",
                )
            )
            return None

    def count(n: yaml.Node, expanding: bool, via: Via) -> bool:
        """Count the node when it is reached through an alias; whether what is under it is too."""
        expanding = expanding or id(n) in seen
        seen.add(id(n))
        if expanding:
            budget["nodes"] += 1
            if isinstance(n, yaml.ScalarNode):
                budget["chars"] += len(n.value)
            if budget["nodes"] > MAX_ALIAS_NODES or budget["chars"] > MAX_ALIAS_CHARS:
                alias = f"the alias *{via[1]}" if via else "aliases (*name)"
                raise _Refused(
                    Problem(
                        where=f"{filename}:{via[0]}" if via else at(n),
                        message=f"{alias} expand{'s' if via else ''} to more than {MAX_ALIAS_NODES:,} values "
                        f"or {MAX_ALIAS_CHARS:,} characters in all (aliases of aliases: a 'billion laughs' file)",
                        fix="write the values out; aliases in a job file are for small re-use",
                    )
                )
        return expanding

    def child(parent: yaml.Node, index: Any, via: Via) -> Via:
        """The outermost alias on the way to a child (for messages)."""
        return via or loader.alias_uses.get(_child_key(parent, index))

    def merged(n: yaml.MappingNode, key_node: yaml.Node, value_node: yaml.Node, path: YamlPath, expanding: bool,
               via: Via) -> dict[Any, Any]:
        """The entries a merge key ``<<: *a`` or ``<<: [*a, *b]`` brings (earlier mappings win)."""
        if isinstance(value_node, yaml.SequenceNode):
            via = child(n, key_node, via)
            count(value_node, expanding, via)
            sources = [(sub, child(value_node, i, via)) for i, sub in enumerate(value_node.value)]
        else:
            sources = [(value_node, child(n, key_node, via))]
        out: dict[Any, Any] = {}
        for sub, sub_via in reversed(sources):
            if not isinstance(sub, yaml.MappingNode):
                raise _Refused(
                    Problem(
                        where=at(sub), path=_render_path(path + ("<<",)),
                        message="a merge key '<<' takes a mapping or a list of mappings",
                        fix="write <<: *name where name anchors a mapping (&name {…})",
                    )
                )
            out.update(convert(sub, path, expanding, sub_via))
        return out

    def convert(n: yaml.Node, path: YamlPath, expanding: bool = False, via: Via = None) -> Any:
        if any(a is n for a in active):
            raise _Refused(
                Problem(
                    where=at(n), path=_render_path(path),
                    message="an alias refers to the mapping or list that holds it (a value that contains itself)",
                    fix="write the values out",
                )
            )
        if len(active) >= MAX_DEPTH:
            raise _Refused(_too_deep(filename, n.start_mark.line + 1))
        expanding = count(n, expanding, via)
        lines[path] = n.start_mark.line + 1
        active.append(n)
        try:
            if isinstance(n, yaml.MappingNode):
                if n.tag != _CORE + "map":
                    refuse_tag(n, path)
                return mapping(n, path, expanding, via)
            if isinstance(n, yaml.SequenceNode):
                if n.tag != _CORE + "seq":
                    refuse_tag(n, path)
                return [convert(v, path + (i,), expanding, child(n, i, via)) for i, v in enumerate(n.value)]
            assert isinstance(n, yaml.ScalarNode)
            return scalar(n, path)
        finally:
            active.pop()

    def mapping(n: yaml.MappingNode, path: YamlPath, expanding: bool, via: Via) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        explicit: dict[Any, int] = {}  # key -> line of its first definition
        for key_node, value_node in n.value:  # merged entries first: this mapping's own keys win
            if key_node.tag == _MERGE_TAG:
                out.update(merged(n, key_node, value_node, path, expanding, via))
        for key_node, value_node in n.value:
            if key_node.tag == _MERGE_TAG:
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(
                    Problem(
                        where=at(key_node),
                        path=_render_path(path),
                        message=f"keys must be plain scalars, got a {'mapping' if isinstance(key_node, yaml.MappingNode) else 'list'}",
                    )
                )
                continue
            before = len(refused)
            key = scalar(key_node, path)
            if len(refused) > before:
                continue  # its tag is reported
            if not isinstance(key, (str, int, float, bool)):
                problems.append(
                    Problem(where=at(key_node), path=_render_path(path), message=f"keys must be plain scalars, got {key!r}")
                )
                continue
            if key in explicit:
                problems.append(
                    Problem(
                        where=at(key_node),
                        path=_render_path(path + (str(key),)),
                        message=(
                            f"duplicate key {key!r} (first defined on line {explicit[key]})"
                        ),
                        fix="keep one of the two; YAML would silently take the last one",
                    )
                )
                continue
            explicit[key] = key_node.start_mark.line + 1
            out[key] = convert(value_node, path + (str(key),), expanding, child(n, key_node, via))
        return out

    try:
        data = convert(node, ())
    except _Refused as exc:
        return None, lines, problems + refused + [exc.problem]
    except yaml.YAMLError as exc:
        return None, lines, [Problem(where=filename, message=f"not valid YAML: {exc}")]
    if refused:
        return None, lines, problems + refused
    if data is None:
        return None, lines, [
            Problem(where=filename, message="the file holds no job: its only value is null",
                    fix="write a job (see configs/documents.yaml)")
        ]
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
    follow_symlinks: bool = Field(
        default=False,
        description="read pages that are symbolic links (default: skipped and counted; only regular files are read)",
    )


class SourceSpec(_Strict):
    """One input source."""

    name: str = Field(min_length=1, description="unique source name")
    path: str | None = Field(
        default=None, min_length=1,
        description="data file: .csv, .tsv, .jsonl, .parquet (relative to the YAML file), a glob, or a folder of "
        ".html pages; omit it only when the source is given as a DataFrame (er_framework.run(job, sources={name: df}))")
    id: str = Field(default="id", min_length=1, description="id column; ids unique within the source")
    fields: list[str] = Field(min_length=1, description="columns the job reads")
    layout: Literal["wide", "long"] = Field(
        default="wide",
        description="long: rows sharing an id form one record, each field a JSON list of its values (e.g. minutiae rows id,x,y)",
    )
    html: HtmlSpec | None = Field(
        default=None, description="extract visible text from HTML columns (a folder of .html files has the column 'html')"
    )
    max_record_mb: float = Field(
        default=16.0, gt=0,
        description="largest record accepted, in MB as written in the file (a JSONL line, a CSV row, a page file): "
        "a bigger one is refused, naming it",
    )

    def read_options(self) -> dict[str, Any]:
        """The readers' keyword arguments for this source (``io.tables.read_source`` and friends)."""
        return {"id_column": self.id, "fields": self.fields, "name": self.name, "layout": self.layout,
                "max_record_mb": self.max_record_mb,
                "follow_symlinks": self.html.follow_symlinks if self.html is not None else False}


class ExactSpec(_Strict):
    """Exact-duplicate stage: one stable hash of the normalized content."""

    enabled: bool = True
    normalize: bool = Field(
        default=True, description="NFKC, lower-case and fold whitespace before hashing"
    )


class PruneSpec(_Strict):
    """Corpus-frequency pruning of shingles: tokens in too many (or too few) records are dropped from every set."""

    max_df: int | float | None = Field(
        default=None,
        description="drop shingles present in more records than this: a share of the records (0 < x <= 1, "
        "e.g. 0.05) or a count (a whole number >= 1, e.g. 50); boilerplate, disclaimers and navigation",
    )
    min_df: int | float | None = Field(
        default=None,
        description="drop shingles present in fewer records than this: a share (0 < x < 1) or a count (>= 1)",
    )
    max_df_floor: int = Field(
        default=10, ge=1,
        description="max_df as a share never drops a shingle held by this many records or fewer (on a small "
        "corpus 5% of the records is one or two: every shared shingle would go)",
    )

    @field_validator("max_df")
    @classmethod
    def _max_df(cls, v: int | float | None) -> int | float | None:
        if isinstance(v, bool) or (isinstance(v, int) and v < 1) or (isinstance(v, float) and not 0 < v <= 1):
            raise ValueError(f"max_df must be a share 0 < x <= 1 (e.g. 0.05) or a whole number of records >= 1, got {v!r}")
        return v

    @field_validator("min_df")
    @classmethod
    def _min_df(cls, v: int | float | None) -> int | float | None:
        if isinstance(v, bool) or (isinstance(v, int) and v < 1) or (isinstance(v, float) and not 0 < v < 1):
            raise ValueError(f"min_df must be a share 0 < x < 1 or a whole number of records >= 1, got {v!r}")
        return v

    @model_validator(mode="after")
    def _something(self) -> PruneSpec:
        if self.max_df is None and self.min_df is None:
            raise ValueError("prune_shingles needs max_df or min_df (or remove the section)")
        return self


class AutoThresholdSpec(_Strict):
    """``threshold: auto``: the threshold is chosen from the candidates' scores (a density valley between two groups)."""

    low: float = Field(
        default=0.2, gt=0.0, lt=1.0,
        description="the lowest threshold it may choose; the blockers are designed for it (lsh_bands: recall at low)",
    )
    high: float = Field(default=0.95, gt=0.0, le=1.0, description="the highest threshold it may choose")
    method: Literal["mixture", "valley"] = Field(
        default="mixture",
        description="mixture: where a two-component mixture (Gaussians on logit(score)) makes the high group the "
        "likelier; valley: the lowest smoothed density between the two groups (benchmarks/README.md compares them)",
    )
    fallback: float | None = Field(
        default=None, gt=0.0, le=1.0,
        description="the threshold when the scores show no two groups (default: low)",
    )

    @model_validator(mode="after")
    def _ordered(self) -> AutoThresholdSpec:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        if self.fallback is not None and not self.low <= self.fallback <= self.high:
            raise ValueError(f"fallback ({self.fallback}) must lie between low ({self.low}) and high ({self.high})")
        return self


class OutputSpec(_Strict):
    dir: str | None = Field(default=None, description="output folder (relative to the YAML file); --out overrides")
    format: Literal["csv", "parquet"] = "csv"
    candidates: bool = Field(
        default=False,
        description="also write candidates.csv: every candidate pair with its score (for er evaluate's pair completeness)",
    )
    comparisons: bool = Field(
        default=False,
        description="also write comparisons.csv: every candidate pair's score broken into its terms (per field the "
        "comparison level and its weight for fellegi_sunter, per field similarity and points for field_score, "
        "shared and differing shingles for jaccard)",
    )
    exact_pairs: Literal["all", "star"] = Field(
        default="all",
        description="all: pairs.csv lists every pair of a group of exact copies and pairs a near-duplicate with every "
        "copy; star: each group as a star around its first record (for groups too large to list; the report counts "
        "the pairs either way)",
    )
    report: bool = Field(
        default=True,
        description="write report.html, the visual report of the run (false: skip it; report.json, which er evaluate, "
        "er explain and er review read, is written either way; er report OUT_DIR draws the page later); "
        "er run --report / --no-report overrides",
    )


class TrainingSpec(_Strict):
    """Labelled pairs a trainable verifier (fellegi_sunter) learns from."""

    labels: str = Field(
        min_length=1,
        description="CSV of labelled pairs (relative to the YAML file): left_source,left_id,right_source,right_id,match "
        "with match 1/0, yes/no, true/false or match/non-match; rows with an empty match are skipped (er review writes one)",
    )
    prior: Literal["em", "labels"] = Field(
        default="em",
        description="the share of matches among the candidates: em (fitted by EM on the candidates; for pairs chosen "
        "near the threshold, as er review does) or labels (the labelled pairs' own share; for a random sample of the "
        "candidates)",
    )


class PluginsSpec(_Strict):
    block: list[str] = Field(default_factory=list, description="plugin names not to load")


class LocalClusterSpec(_Strict):
    n_workers: int = Field(default=2, ge=1, le=1024, description="worker processes")
    threads_per_worker: int = Field(default=1, ge=1, le=256, description="threads per worker process")
    memory_limit: str | None = Field(default=None, description="per worker, e.g. '4GB' (default: Dask's share of RAM)")


#: what a scheduler's address looks like: [SCHEME://]HOST:PORT (HOST a name, an IPv4 or a [bracketed IPv6])
ADDRESS_RE = re.compile(r"(?:(tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})")


def address_problem(address: str) -> str | None:
    """Why ``address`` cannot be a Dask scheduler's address (``None``: it has the shape of one)."""
    m = ADDRESS_RE.fullmatch(address)
    if m is None:
        return "not an address of the form [tcp://]HOST:PORT"
    if not 0 < int(m.group(3)) < 65536:
        return f"the port {m.group(3)} is not a port number (1-65535)"
    return None


class ExecutorSpec(_Strict):
    """Where the job runs: in this process (default), on a Dask cluster, or on an installed executor."""

    type: str = Field(default="local", description="an executor name: local, dask, or one installed through the "
                      "entry-point group er_framework.executors")
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

    @field_validator("address")
    @classmethod
    def _address_shape(cls, v: str | None) -> str | None:
        why = None if v is None else address_problem(v)
        if why is not None:
            raise ValueError(f"{v!r} is {why}, e.g. tcp://10.0.0.5:8786")
        return v

    @field_validator("type")
    @classmethod
    def _known(cls, v: str) -> str:
        names = executor_table()
        if v not in names:
            raise ValueError(f"no executor {v!r}; {did_you_mean(v, names)}installed: {choices_text(names)}")
        return v

    @model_validator(mode="after")
    def _where(self) -> ExecutorSpec:
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
    threshold: float | Literal["auto"] | None = Field(
        default=None, description="pairs scoring at least this are kept (0 < t <= 1), or 'auto': chosen from the "
        "candidates' scores (auto_threshold:)")
    auto_threshold: AutoThresholdSpec | None = Field(
        default=None, description="with threshold: auto: {low, high, method, fallback} (defaults: 0.2, 0.95, mixture, low)")
    sources: list[SourceSpec] = Field(min_length=1)
    exact_duplicates: ExactSpec | bool = True
    shingler: dict[str, Any] | None = None
    prune_shingles: PruneSpec | None = Field(
        default=None,
        description="corpus-frequency pruning: {max_df: share or count, min_df: share or count}; shingles in "
        "more than max_df (fewer than min_df) records are dropped before signing and verification",
    )
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
        description="token sets kept in memory up to this size after signing (for verification), and at most "
        "40% of the memory available when shingling starts; a larger corpus is streamed and the token sets of "
        "candidate records are recomputed, in blocks of 64-256 MB (0: always stream; builders that sign "
        "multisets, such as minhash, oph and fss, keep the sets made from each step's multisets within the "
        "same budget)",
    )
    diagnostics: int = Field(
        default=2000, ge=0, description="records probed for the report's blocker diagnostics (0: off)"
    )
    output: OutputSpec = Field(default_factory=OutputSpec)
    training: TrainingSpec | None = Field(
        default=None, description="{labels: FILE, prior: em|labels}: the verifier learns from labelled pairs")
    plugins: PluginsSpec = Field(default_factory=PluginsSpec)
    executor: ExecutorSpec = Field(
        default_factory=ExecutorSpec,
        description="local (default) or dask: {type: dask, address: tcp://host:8786} or {type: dask, local_cluster: {n_workers: 2}}",
    )

    @field_validator("threshold")
    @classmethod
    def _threshold(cls, v: float | str | None) -> float | str | None:
        if isinstance(v, float) and not 0.0 < v <= 1.0:
            raise ValueError("threshold must be above 0 and at most 1 (or 'auto')")
        return v

    @model_validator(mode="after")
    def _auto_only_with_auto(self) -> JobSpec:
        if self.auto_threshold is not None and self.threshold != "auto":
            raise ValueError("auto_threshold is read only with threshold: auto")
        return self

    def design_threshold(self) -> float | None:
        """The threshold the components are built for: the number given, or with ``auto`` the lowest it may choose."""
        if self.threshold == "auto":
            return (self.auto_threshold or AutoThresholdSpec()).low
        return self.threshold if not isinstance(self.threshold, str) else None

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, v: Any) -> int | str:
        if v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1024):
            return v
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
    #: per field of ``normalize:``, its chain of normalizers
    normalizers: dict[str, list[ComponentSpec]] = field(default_factory=dict)
    #: sources given in memory (``er_framework.run(job, sources={name: DataFrame})``), by source name:
    #: read from these objects instead of a file
    frames: dict[str, Any] = field(default_factory=dict)

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

    def training_path(self) -> Path | None:
        """The labels file of ``training:`` (relative to the job file's folder), or None."""
        if self.spec.training is None:
            return None
        return (self.base_dir / self.spec.training.labels).resolve()

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
            **({"auto_threshold": (self.spec.auto_threshold or AutoThresholdSpec()).model_dump()}
               if self.spec.threshold == "auto" else {}),
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


#: job keys naming components (checked, with better messages, when resolved)
_COMPONENT_SECTIONS = tuple(key for fam in FAMILIES.values() if not fam.per_field for key in fam.sections)


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
                    where=_where(filename, lines, path[:-1]) if len(path) > 1 else filename,
                    path=_render_path(path),
                    message=f"{subject + ' needs' if subject else 'required key'} {key!r}"
                    + ("" if subject else " is missing"),
                    fix=(_MISSING_FIX.get(key, "") if not prefix else "") or f"add {key}: … here",
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


#: how to add a required key of the job schema that is missing
_MISSING_FIX = {
    "sources": "add e.g. 'sources: [{name: docs, path: docs.jsonl, fields: [text]}]' (a CSV, TSV, JSONL or "
    "Parquet file, relative to the YAML file, and the columns the job reads)",
    "name": "add name: NAME (unique among the sources)",
    "path": "add path: FILE (.csv, .tsv, .jsonl, .parquet; relative to the YAML file)",
    "fields": "add fields: [COLUMN, …] (the columns the job reads)",
}


def _nested_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """Field names of the pydantic model found at ``loc`` inside ``model`` (for nested sections)."""
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
    if etype.endswith(("_type", "_parsing")):
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
    text = read_job_text(path)
    data, lines, problems = load_yaml(text, filename)
    if data is None:
        fail(problems)
    return resolve_job(data, lines, filename, path.resolve().parent, problems, registry, check_files=check_files, config_path=path)


#: the largest job file read (a job is a few kilobytes; this keeps a wrong path, e.g. a data file, cheap to refuse)
MAX_JOB_BYTES = 4 << 20


def read_job_text(path: Path) -> str:
    """The text of a job file: UTF-8, at most :data:`MAX_JOB_BYTES`, not a device (``/dev/zero`` never ends)."""
    filename = str(path)
    try:
        if stat.S_ISCHR(path.stat().st_mode) or stat.S_ISBLK(path.stat().st_mode):
            fail([Problem(where=filename, message="this is a device, not a job file", fix="give the job's YAML file")])
        with path.open("rb") as fh:
            raw = fh.read(MAX_JOB_BYTES + 1)
    except FileNotFoundError:
        fail([Problem(where=filename, message="no such file", fix=f"looked at {path.resolve()}")])
    except OSError as exc:
        fail([Problem(where=filename, message=f"cannot read the file: {exc.strerror or exc}")])
    if len(raw) > MAX_JOB_BYTES:
        fail([Problem(where=filename, message=f"larger than {MAX_JOB_BYTES >> 20} MB: not a job file",
                      fix="give the job's YAML file (a job is a few kilobytes)")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        fail([Problem(where=f"{filename}:{line}", message=f"not UTF-8 text (byte {raw[exc.start]:#04x})",
                      fix="save the job as UTF-8 (is this the right file?)")])


#: the job's top-level settings a component's own checks read (through its :class:`Context`)
_SETTINGS = ("seed", "threshold", "mode")


def fail(problems: list[Problem]) -> typing.NoReturn:
    """Raise the :class:`ConfigError` listing ``problems``: never an error of no problem.

    Every path that finds the job invalid must have said why; "invalid config:
    0 problems found" would be a bug here (the fuzz tests check it).
    """
    assert problems, "a job was found invalid without a problem to report"
    raise ConfigError(problems)


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
        fail(problems + [Problem(where=filename, message=f"a job must be a mapping of keys, got {type(data).__name__}",
                                 fix="write key: value lines (see configs/documents.yaml)")])
    spec = _validate_spec(data, lines, filename, problems)
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
        fail(problems)
    problems += _source_problems(spec, lines, filename, base_dir, check_files, frames)
    problems += _shape_problems(spec, lines, filename)
    declared = [f for s in spec.sources for f in s.fields]
    context = Context(seed=spec.seed, threshold=spec.design_threshold(), mode=spec.mode,
                      workers=resolve_workers(spec.workers))
    normalizers = _resolve_normalizers(spec.normalize, declared, lines, filename, registry, problems)
    comps = _resolve_components(data, lines, filename, registry, problems, context, checks=settings_ok)
    resolved = [c for fam in comps.values() for c in (fam if isinstance(fam, list) else [fam]) if c is not None]
    for chain in normalizers.values():
        resolved += chain
    problems += _field_ref_problems(resolved, declared, lines, filename)
    if problems:
        fail(problems)
    assert comps["verifier"] is not None and comps["clusterer"] is not None
    if spec.exact_duplicates is True or spec.exact_duplicates is False:  # pragma: no cover
        spec.exact_duplicates = ExactSpec(enabled=bool(spec.exact_duplicates))
    shingler = comps["shingler"]
    if (shingler is not None and getattr(shingler.params, "preset", None) == "raw"
            and "normalize" not in spec.exact_duplicates.model_fields_set):
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
        raw=data,
        normalizers=normalizers,
    )


# ----------------------------------------------------------------------------
# numbers and booleans as written: pydantic's lax mode would take `true` for 1.0 and '64' for 64


_SCALAR_ANNOTATIONS = (int, float, bool, type(None))


def _arms(ann: Any) -> list[Any]:
    """The alternatives of an annotation (``Annotated`` unwrapped, unions flattened)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _arms(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return [a for arm in typing.get_args(ann) for a in _arms(arm)]
    return [ann]


def _expected(arms: list[Any]) -> str:
    words = []
    if float in arms:
        words.append("a number")
    elif int in arms:
        words.append("a whole number")
    if bool in arms:
        words.append("true or false")
    return " or ".join(words) or "null"


def _kind(value: Any) -> str:
    return {bool: "a boolean", str: "a string", int: "a whole number", float: "a number", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def type_problems(
    value: Any, ann: Any, path: YamlPath, filename: str, lines: dict[YamlPath, int]
) -> list[Problem]:
    """Values of the wrong YAML type where the model wants a number or a boolean.

    pydantic (lax mode) would take ``threshold: true`` for 1.0, ``num_perm:
    '64'`` for 64 and ``enabled: 1`` for true; in a job file those are
    mistakes. Only annotations made of ``int``, ``float``, ``bool`` and
    ``None`` are checked (a union with ``str``, a ``Literal`` or any other type
    keeps its own validation); an ``int`` is a number for a ``float`` field;
    mappings, lists and nested models are walked.
    """
    arms = _arms(ann)
    # a Literal of words beside numbers (threshold: float | 'auto'): the words are accepted as written,
    # anything else must be one of the numbers
    words = [v for a in arms if typing.get_origin(a) is typing.Literal for v in typing.get_args(a) if isinstance(v, str)]
    if words and len(words) == sum(len(typing.get_args(a)) for a in arms if typing.get_origin(a) is typing.Literal):
        if isinstance(value, str) and value in words:
            return []
        arms = [a for a in arms if typing.get_origin(a) is not typing.Literal]
    if words and isinstance(value, (list, dict)) and arms and all(a in _SCALAR_ANNOTATIONS for a in arms):
        expected = _expected(arms) + "".join(f" or {w!r}" for w in words)
        return [_at(filename, lines, path, message=f"{json.dumps(value, default=str)[:60]} is {_kind(value)}; "
                    f"expected {expected}", fix=f"write {expected} here")]
    if value is None or isinstance(value, (bool, int, float, str)):
        if not arms or not all(a in _SCALAR_ANNOTATIONS for a in arms) or value is None:
            return []
        numeric = int in arms or float in arms
        wrong = (
            isinstance(value, str)
            or (isinstance(value, bool) and bool not in arms)
            or (not isinstance(value, bool) and not numeric)
        )
        if not wrong:
            return []
        shown = json.dumps(value)
        hint = f"write {value} without quotes" if isinstance(value, str) and _looks_numeric(value) else ""
        expected = _expected(arms) + "".join(f" or {w!r}" for w in words)
        return [
            _at(
                filename, lines, path,
                message=f"{shown} is {_kind(value)}; expected {expected}",
                fix=hint or f"write {expected} here",
            )
        ]
    out: list[Problem] = []
    models = [a for a in arms if isinstance(a, type) and issubclass(a, BaseModel)]
    if isinstance(value, dict):
        if len(models) == 1:
            fields = models[0].model_fields
            for k, v in value.items():
                if isinstance(k, str) and k in fields:
                    out += type_problems(v, fields[k].annotation, path + (k,), filename, lines)
            return out
        maps = [a for a in arms if typing.get_origin(a) in (dict, typing.Mapping, collections.abc.Mapping)]
        if len(maps) == 1 and len(typing.get_args(maps[0])) == 2:
            inner = typing.get_args(maps[0])[1]
            for k, v in value.items():
                out += type_problems(v, inner, path + (str(k),), filename, lines)
        return out
    if isinstance(value, list):
        seqs = [a for a in arms if typing.get_origin(a) in (list, tuple, set, frozenset, collections.abc.Sequence)]
        if len(seqs) != 1:
            return out
        args = typing.get_args(seqs[0])
        if typing.get_origin(seqs[0]) is tuple and args and args[-1] is not Ellipsis:
            items = list(args)[: len(value)]
        else:
            items = [args[0] if args else Any] * len(value)
        for i, (v, a) in enumerate(zip(value, items)):
            out += type_problems(v, a, path + (i,), filename, lines)
    return out


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _without(found: list[Problem], already: list[Problem]) -> list[Problem]:
    """``found`` without the problems at a place ``already`` names (one message per bad value)."""
    places = {(p.where, p.path) for p in already}
    # pydantic names each arm of a union that refused the value (``threshold.float``): the same place
    return [p for p in found if (p.where, p.path) not in places
            and not any(p.where == w and (p.path or "").startswith(f"{q}.") for w, q in places if q)]


#: the job's nested sections of fixed keys (their unknown keys reported with did-you-mean, then dropped)
_NESTED_SECTIONS: dict[str, type[BaseModel]] = {
    "output": OutputSpec, "plugins": PluginsSpec, "exact_duplicates": ExactSpec, "executor": ExecutorSpec,
}


def _validate_spec(
    data: dict[str, Any], lines: dict[YamlPath, int], filename: str, problems: list[Problem]
) -> JobSpec | None:
    """Pass 2: unknown keys (reported by us, with the allowed list), then the rest of the schema by pydantic."""
    problems += _unknown_keys(data, lines, filename)
    known = _known_keys(data)
    strict = type_problems(known, JobSpec, (), filename, lines)
    problems += strict
    try:
        return JobSpec.model_validate(known)
    except ValidationError as exc:
        problems += _without(_pydantic_problems(exc, filename, lines, ()), strict)
        return None


def _unknown_keys(data: dict[str, Any], lines: dict[YamlPath, int], filename: str) -> list[Problem]:
    """Unknown keys of the job, of its nested sections and of each source, with did-you-mean."""
    problems = _extra_key_problems(data, JobSpec, (), filename, lines)
    for key, model in _NESTED_SECTIONS.items():
        if isinstance(data.get(key), dict):
            problems += _extra_key_problems(data[key], model, (key,), filename, lines)
    for i, s in enumerate(data["sources"] if isinstance(data.get("sources"), list) else []):
        if isinstance(s, dict):
            problems += _extra_key_problems(s, SourceSpec, ("sources", i), filename, lines)
            if isinstance(s.get("html"), dict):
                problems += _extra_key_problems(s["html"], HtmlSpec, ("sources", i, "html"), filename, lines)
    return problems


def _known_keys(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the unknown keys (reported already), for the schema's other checks."""
    def only(section: Any, model: type[BaseModel]) -> Any:
        return {k: v for k, v in section.items() if k in model.model_fields} if isinstance(section, dict) else section

    clean = only(data, JobSpec)
    for key, model in _NESTED_SECTIONS.items():
        if key in clean:
            clean[key] = only(clean[key], model)
    if isinstance(clean.get("sources"), list):
        clean["sources"] = [only(s, SourceSpec) for s in clean["sources"]]
        for s in clean["sources"]:
            if isinstance(s, dict) and "html" in s:
                s["html"] = only(s["html"], HtmlSpec)
    return clean


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
    spec: JobSpec, lines: dict[YamlPath, int], filename: str, base_dir: Path, check_files: bool,
    frames: Collection[str] = (),
) -> list[Problem]:
    """Source names unique, HTML options valid, data files present (or the source given in ``frames``),
    the training labels present."""
    problems: list[Problem] = []
    unknown = sorted(set(frames) - {s.name for s in spec.sources})
    if unknown:
        problems.append(Problem(
            where=filename, path="sources", message=f"data given for {unknown}, which the job has no source named",
            fix=f"the job's sources are {[s.name for s in spec.sources]}: name the DataFrames after them"))
    if check_files and spec.training is not None and not (base_dir / spec.training.labels).resolve().is_file():
        problems.append(_at(
            filename, lines, ("training", "labels"),
            message=f"labels file {spec.training.labels!r} does not exist (looked at {(base_dir / spec.training.labels).resolve()})",
            fix="paths are relative to the YAML file's folder; er review OUT writes a labels file to edit"))
    names = [s.name for s in spec.sources]
    for i, s in enumerate(spec.sources):
        if names.index(s.name) != i:
            problems.append(_at(filename, lines, ("sources", i, "name"), message=f"source name {s.name!r} is used twice",
                                fix="give every source a unique name"))
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
        if s.path is None or s.name in frames:
            if s.name not in frames:
                problems.append(_at(
                    filename, lines, ("sources", i, "path"),
                    message=f"required key 'path' is missing: source {s.name!r} has no path",
                    fix="add path: FILE (a .csv, .tsv, .jsonl or .parquet file, relative to the YAML file), "
                    f"or from Python give the data: er_framework.run(job, sources={{{s.name!r}: dataframe}})"))
            continue
        if check_files and is_glob(s.path) and not expand_source_path(base_dir, s.path):
            problems.append(
                _at(
                    filename, lines, ("sources", i, "path"),
                    message=f"the pattern {s.path!r} matches no file (looked in {(base_dir / s.path).parent.resolve()})",
                    fix="paths are relative to the YAML file's folder; check the pattern",
                )
            )
        elif check_files and not is_glob(s.path) and not (base_dir / s.path).resolve().exists():
            problems.append(
                _at(
                    filename, lines, ("sources", i, "path"),
                    message=f"data file {s.path!r} does not exist (looked at {(base_dir / s.path).resolve()})",
                    fix="paths are relative to the YAML file's folder; check the path",
                )
            )
    return problems


def _shape_problems(spec: JobSpec, lines: dict[YamlPath, int], filename: str) -> list[Problem]:
    """The mode's number of sources; one of 'blocker' and 'blockers'."""
    problems: list[Problem] = []
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
    for fam in FAMILIES.values():
        if fam.many is not None and getattr(spec, fam.section) is not None and getattr(spec, fam.many) is not None:
            problems.append(
                Problem(
                    where=_where(filename, lines, (fam.section,)),
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
                _at(
                    filename, lines, base,
                    message=f"field {fname!r} is not read by any source",
                    fix=did_you_mean(str(fname), declared) + f"fields of the sources: {choices_text(set(declared))}",
                )
            )
        listed = isinstance(steps, list)
        resolved, found = resolve_steps(steps, registry)
        step_problems = [
            _at(filename, lines, base + ((p.index,) if listed else ()) + ((p.key,) if p.key else ()),
                message=p.message, fix=p.fix or _STEPS_FIX)
            for p in found
        ]
        for i, step in enumerate(steps if listed else [steps]):
            name = step.get("type") if isinstance(step, dict) else None
            cls = registry.components["normalizer"].get(name) if isinstance(name, str) else None
            if cls is not None and isinstance(step, dict):
                options = {k: v for k, v in step.items() if k != "type"}
                step_problems += _without(
                    type_problems(options, cls.cls.Params, base + ((i,) if listed else ()), filename, lines),
                    step_problems,
                )
        problems += step_problems
        if not step_problems:
            out[str(fname)] = [
                ComponentSpec("normalizer", step[0], step[1], _render_path(base + ((i,) if listed else ())))
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
        out += _refs_in(getattr(params, name), info.annotation, tuple(info.metadata), path + (name,))
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
        return [
            ref
            for k, v in value.items()
            for ref in _refs_in(k, key_ann, (), path + (k,)) + _refs_in(v, value_ann, (), path + (k,))
        ]
    return []


def _parse_path(rendered: str) -> YamlPath:
    """The inverse of :func:`_render_path`: ``"blockers[0].fields"`` -> ``("blockers", 0, "fields")``."""
    parts = rendered.replace("[", ".").replace("]", "").split(".")
    return tuple(int(x) if x.isdigit() else x for x in parts if x)


def _field_ref_problems(
    comps: list[ComponentSpec], declared: list[str], lines: dict[YamlPath, int], filename: str
) -> list[Problem]:
    """A component may only name fields the sources declare."""
    problems: list[Problem] = []
    for comp in comps:
        base = _parse_path(comp.yaml_path)
        for rel, fname in field_references(comp.params):
            if fname not in declared:
                problems.append(
                    _at(
                        filename, lines, base + rel,
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
    strict = type_problems(params_data, cls.Params, path, filename, lines)
    problems += strict
    try:
        params = cls.Params.model_validate(params_data)
    except ValidationError as exc:
        problems += _without(
            _pydantic_problems(
                exc, filename, lines, path, known=list(cls.Params.model_fields), subject=f"{family} {name!r}",
                model=cls.Params,
            ),
            strict,
        )
        return None
    if strict:
        return None
    return ComponentSpec(family=family, cls=cls, params=params, yaml_path=_render_path(path))


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
        out[fam.name] = (
            None if section is None
            else _resolve_one(fam.name, section, (fam.section,), filename, lines, registry, problems)
        )
    # cross-component rules
    context.peers = {
        name: spec.params for name, spec in out.items() if isinstance(spec, ComponentSpec)
    }
    problems += _rule_problems(out, data, lines, filename, registry, context, checks=checks)
    return out


#: the component named in the example of a missing required section (when installed)
_EXAMPLE = {"verifier": "jaccard"}


def _missing_section(
    fam: Family, data: dict[str, Any], lines: dict[YamlPath, int], filename: str, registry: Registry,
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
            where=_where(filename, lines, (fam.section,)),
            path=fam.section,
            message=f"it is empty: the job must choose a {fam.name} here",
            fix=f"remove the line for the default ({default}), or write e.g. '{fam.section}: {{type: {example}}}' "
            f"(installed: {choices_text(installed)})",
        )
    return Problem(
        where=_where(filename, lines, (fam.section,)) if written else filename,
        path=fam.section,
        message=f"required — {'it is empty' if written else 'the job has none'}: every job chooses a {fam.name}",
        fix=f"add e.g. '{fam.section}: {{type: {example}}}' (installed: {choices_text(installed)}; "
        f"er plugins describes them)",
    )


def _resolve_many(
    fam: Family, data: dict[str, Any], lines: dict[YamlPath, int], filename: str, registry: Registry,
    problems: list[Problem],
) -> list[ComponentSpec]:
    """A family named by a list (``blockers: [...]``) or by its one-member key (``blocker: {...}``)."""
    assert fam.many is not None
    sections: list[tuple[YamlPath, Any]] = []
    if data.get(fam.many) is not None and not isinstance(data[fam.many], list):
        problems.append(
            _at(
                filename, lines, (fam.many,),
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
    comps: dict[str, Any], data: dict[str, Any], lines: dict[YamlPath, int], filename: str, registry: Registry,
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
                problems.append(_at(filename, lines, _parse_path(comp.yaml_path), message=msg))
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
        problems.append(_at(filename, lines, ("prune_shingles",),
                            message="prune_shingles drops shingles, but the job has no 'shingler' section",
                            fix="remove prune_shingles, or add shingler: {type: NAME} (and a signature and verifier that read tokens)"))
    verifier = comps.get("verifier")
    if verifier is not None:
        vname = verifier.cls.name
        if isinstance(data.get("training"), dict) and not has(verifier.cls, Trainable):
            learners = [n for n in registry.names("verifier") if has(registry.components["verifier"][n].cls, Trainable)]
            problems.append(_at(filename, lines, ("training",),
                                message=f"verifier {vname!r} does not learn from labelled pairs",
                                fix=f"remove training:, or use a verifier that does: {choices_text(learners)}"))
        out = data.get("output")
        if isinstance(out, dict) and out.get("comparisons") is True and not has(verifier.cls, Explainable):
            able = [n for n in registry.names("verifier") if has(registry.components["verifier"][n].cls, Explainable)]
            problems.append(_at(filename, lines, ("output", "comparisons"),
                                message=f"verifier {vname!r} cannot break its scores into terms",
                                fix=f"remove comparisons: true, or use a verifier that can: {choices_text(able)}"))
    return problems
