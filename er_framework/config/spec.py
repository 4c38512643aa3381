"""Pass 2 of reading a job: the job schema (pydantic models) and the data checked against it.

The models of the job file (:class:`JobSpec`, :class:`SourceSpec`,
:class:`OutputSpec`, …), numbers and booleans checked as written
(:func:`type_problems`), pydantic's errors turned into problems with file,
line, YAML path and fix (:func:`pydantic_problems`), and the pass itself
(:func:`validate_spec`): unknown keys with did-you-mean, wrong types,
out-of-range values.
"""

from __future__ import annotations

import collections.abc
import json
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from er_framework.components import FAMILIES
from er_framework.config.yaml_load import YamlPath, problem_at, render_path, where_of
from er_framework.errors import Problem, choices_text, did_you_mean
from er_framework.io.csv_dialect import CsvDialect
from er_framework.registry import executor_table

# ----------------------------------------------------------------------------
# pass 2: the job schema


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN and infinity are no setting's value


class HtmlSpec(_Strict):
    """Columns that hold HTML: replaced by their visible text before shingling."""

    fields: list[str] | None = Field(default=None, description="columns holding HTML (default: all the source's fields)")
    boilerplate: Literal["keep", "drop"] = Field(default="keep", description="drop: remove navigation, footers and other chrome (jusText)")
    language: str = Field(default="English", description="jusText stop list used to spot boilerplate")
    follow_symlinks: bool = Field(
        default=False,
        description="read pages that are symbolic links (default: skipped and counted; only regular files are read)",
    )


class CsvSpec(_Strict):
    """How a CSV or TSV source is written (its dialect); the defaults read what the extension says."""

    delimiter: str | None = Field(
        default=None,
        min_length=1,
        max_length=1,
        description="the field separator, one character (default: ',' for .csv, a tab for .tsv), e.g. ';' or '|'",
        examples=[";"],
    )
    quote: str = Field(default='"', min_length=1, max_length=1, description="the quote character, one character")
    encoding: str = Field(
        default="utf-8",
        min_length=1,
        description="the file's text encoding, a Python codec name (utf-8, utf-8-sig, latin-1, cp1252, utf-16 …); "
        "bytes that do not decode are an error naming the row",
    )


class SourceSpec(_Strict):
    """One input source: a file (``path``), a database query or table (``database`` with ``query`` or
    ``table``), or a DataFrame given in memory from Python."""

    name: str = Field(min_length=1, description="unique source name")
    path: str | None = Field(
        default=None,
        min_length=1,
        description="data file: .csv, .tsv, .jsonl, .parquet (relative to the YAML file), a glob, or a folder of "
        ".html pages; omit it only when the source is given as a DataFrame (er_framework.run(job, sources={name: df}))",
    )
    database: str | None = Field(
        default=None,
        min_length=1,
        description="a database URL to read the source from, with query: or table: (sqlite:///file.db and "
        "duckdb:///file.duckdb relative to the YAML file, postgresql://user@host:port/dbname; a password is "
        "best left to PGPASSWORD or ~/.pgpass, ${VAR} in the URL is replaced by the environment variable VAR)",
        examples=["sqlite:///customers.db"],
    )
    query: str | None = Field(default=None, min_length=1, description="with database: the SQL query whose rows are the records")
    table: str | None = Field(
        default=None, min_length=1, description="with database: the table (or view) whose rows are the records, e.g. crm.customers"
    )
    batch_rows: int = Field(default=50000, ge=1, description="with database: rows fetched per batch (bounds the driver's memory)")
    id: str = Field(default="id", min_length=1, description="id column; ids unique within the source")
    fields: list[str] = Field(min_length=1, description="the job's names of the columns it reads")
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="the source's own column names for the job's field names, e.g. {first_name: given_name, "
        "zip: postcode}: fields not listed are read from the column of the same name",
    )
    csv: CsvSpec | None = Field(default=None, description="a CSV/TSV source's dialect: {delimiter, quote, encoding}")
    layout: Literal["wide", "long"] = Field(
        default="wide",
        description="long: rows sharing an id form one record, each field a JSON list of its values (e.g. minutiae rows id,x,y)",
    )
    html: HtmlSpec | None = Field(
        default=None, description="extract visible text from HTML columns (a folder of .html files has the column 'html')"
    )
    max_record_mb: float = Field(
        default=16.0,
        gt=0,
        description="largest record accepted, in MB as written in the file (a JSONL line, a CSV row, a page file): "
        "a bigger one is refused, naming it",
    )

    @model_validator(mode="after")
    def _one_kind_of_source(self) -> SourceSpec:
        if self.database is not None and self.path is not None:
            raise ValueError("a source is read from a file (path:) or a database (database:), not both")
        if self.database is not None and (self.query is None) == (self.table is None):
            raise ValueError("a database source needs exactly one of query: (SQL) and table: (a table name)")
        if self.database is None and (self.query is not None or self.table is not None):
            raise ValueError("query: and table: are read only with database: URL")
        if self.database is not None and self.csv is not None:
            raise ValueError("csv: describes a CSV file; this source is read from a database")
        unknown = sorted(set(self.columns) - set(self.fields))
        if unknown:
            raise ValueError(f"columns: names {unknown}, which are not among the fields {self.fields}: list them under fields too")
        return self

    def column_of(self, fieldname: str) -> str:
        """The source's own column read for the job's field ``fieldname`` (``columns:``)."""
        return self.columns.get(fieldname, fieldname)

    def read_options(self) -> dict[str, Any]:
        """The readers' keyword arguments for this source (``io.source_files.read_source`` and friends)."""
        return {
            "id_column": self.id,
            "fields": self.fields,
            "name": self.name,
            "layout": self.layout,
            "max_record_mb": self.max_record_mb,
            "follow_symlinks": self.html.follow_symlinks if self.html is not None else False,
            "columns": dict(self.columns),
            "dialect": CsvDialect(self.csv.delimiter, self.csv.quote, self.csv.encoding) if self.csv is not None else None,
        }


class ExactSpec(_Strict):
    """Exact-duplicate stage: one stable hash of the normalized content."""

    enabled: bool = True
    normalize: bool = Field(default=True, description="NFKC, lower-case and fold whitespace before hashing")


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
        default=10,
        ge=1,
        description="max_df as a share never drops a shingle held by this many records or fewer (on a small "
        "corpus 5% of the records is one or two: every shared shingle would go)",
    )

    @field_validator("max_df")
    @classmethod
    def _max_df(cls, v: int | float | None) -> int | float | None:
        if isinstance(v, bool) or (isinstance(v, int) and v < 1) or (isinstance(v, float) and not 0 < v <= 1):
            raise ValueError(f"max_df must be a share 0 < x <= 1 (e.g. 0.05) or a whole number of records >= 2, got {v!r}")
        if isinstance(v, int) and v == 1:
            # a shingle held by 2 records is dropped: no two records can share a shingle, so no pair is ever found
            raise ValueError(
                "max_df: 1 (a whole number: a count of records) drops every shingle that two records share, so no "
                "pair can be found; give a count of at least 2 (e.g. 50), or a share with a decimal point "
                "(max_df: 1.0 is every record, 0.05 is 5% of them)"
            )
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
        if isinstance(self.max_df, int) and isinstance(self.min_df, int) and self.min_df > self.max_df:
            raise ValueError(
                f"min_df = {self.min_df} is above max_df = {self.max_df}: a shingle is kept only when held by at least "
                "min_df and at most max_df records, so every shingle would be dropped; lower min_df or raise max_df"
            )
        return self


class AutoThresholdSpec(_Strict):
    """``threshold: auto``: the threshold is chosen from the candidates' scores (a density valley between two groups)."""

    low: float = Field(
        default=0.2,
        gt=0.0,
        lt=1.0,
        description="the lowest threshold it may choose; the blockers are designed for it (lsh_bands: recall at low)",
    )
    high: float = Field(default=0.95, gt=0.0, le=1.0, description="the highest threshold it may choose")
    method: Literal["mixture", "valley"] = Field(
        default="mixture",
        description="mixture: where a two-component mixture (Gaussians on logit(score)) makes the high group the "
        "likelier; valley: the lowest smoothed density between the two groups (benchmarks/README.md compares them)",
    )
    fallback: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="the threshold when the scores show no two groups (default: low)",
    )

    @model_validator(mode="after")
    def _ordered(self) -> AutoThresholdSpec:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        if self.fallback is not None and not self.low <= self.fallback <= self.high:
            raise ValueError(f"fallback ({self.fallback}) must lie between low ({self.low}) and high ({self.high})")
        return self


class GoldenFieldSpec(_Strict):
    """How one field of a golden record is chosen among its cluster's values."""

    rule: str = Field(
        description="most_frequent, most_recent (needs by:), longest, source_priority (needs order: or takes the "
        "sources' order), or a rule a plugin registers",
        examples=["most_recent"],
    )
    by: str | None = Field(default=None, description="most_recent: the field holding each record's date (ISO 8601 or a number)")
    order: list[str] | None = Field(default=None, description="source_priority: source names, most trusted first")


class GoldenSpec(_Strict):
    """Golden records: one merged record per cluster, each field chosen by a rule, with its provenance."""

    rule: str = Field(default="most_frequent", description="the rule of every field not listed under fields:")
    fields: dict[str, str | GoldenFieldSpec] = Field(
        default_factory=dict,
        description="per field, a rule name or {rule, by, order}, e.g. {email: {rule: most_recent, by: updated}, address: longest}",
    )
    singletons: bool = Field(default=True, description="false: golden records only for clusters of two or more records")


class OutputSpec(_Strict):
    dir: str | None = Field(default=None, description="output folder (relative to the YAML file); --out overrides")
    database: str | None = Field(
        default=None,
        min_length=1,
        description="also write the tables (pairs, clusters, golden …) to this database, in one transaction "
        "(a URL as for sources: sqlite:///, duckdb:///, postgresql://)",
        examples=["sqlite:///er.db"],
    )
    prefix: str = Field(
        default="er_",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="with database: table names are PREFIX + the table's name (er_pairs, er_clusters, er_golden …)",
    )
    golden: GoldenSpec | None = Field(
        default=None,
        description="write golden.csv: one merged record per cluster, each field chosen by a rule, with the source "
        "and id it came from ({rule: most_frequent, fields: {email: {rule: most_recent, by: updated}}})",
    )
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


class ExecutorSpec(_Strict):
    """Which executor runs the job: in this process (default), on a Dask cluster, or an installed one.

    The section's other keys are the executor's options, checked against the
    executor's own model when the job is resolved
    (:func:`er_framework.registry.executor_params_model`; the built-ins' in
    :mod:`er_framework.config.executor_params`): this pass sees ``type`` only.
    """

    type: str = Field(
        default="local", description="an executor name: local, dask, or one installed through the entry-point group er_framework.executors"
    )

    @field_validator("type")
    @classmethod
    def _known(cls, v: str) -> str:
        names = executor_table()
        if v not in names:
            raise ValueError(f"no executor {v!r}; {did_you_mean(v, names)}installed: {choices_text(names)}")
        return v


class JobSpec(_Strict):
    """The YAML job, before components are resolved."""

    name: str | None = None
    mode: Literal["dedup", "link", "link_and_dedup"] = "dedup"
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    threshold: float | Literal["auto"] | None = Field(
        default=None,
        description="pairs scoring at least this are kept (0 < t <= 1), or 'auto': chosen from the candidates' scores (auto_threshold:)",
    )
    auto_threshold: AutoThresholdSpec | None = Field(
        default=None, description="with threshold: auto: {low, high, method, fallback} (defaults: 0.2, 0.95, mixture, low)"
    )
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
        description="threads for shingling, signatures and verification ('auto': the available cores); results are identical for any value",
    )
    normalize: dict[str, Any] = Field(
        default_factory=dict,
        description="per field, a normalizer or a chain of them applied to every source before any other stage, "
        "e.g. {first_name: [name, nickname], phone: phone}; missing values stay missing (er plugins lists them)",
    )
    normalize_strict: bool = Field(
        default=False,
        description="true: a present value that a normalize: chain cannot read (a date that does not parse, an email "
        "without @, ...) is an error (exit 2, before any output is written) instead of becoming missing with a warning",
    )
    chunk_records: int = Field(
        default=10000,
        ge=1,
        description="records shingled and signed per step (bounds the memory of those stages); results are identical for any value",
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
    diagnostics: int = Field(default=2000, ge=0, description="records probed for the report's blocker diagnostics (0: off)")
    output: OutputSpec = Field(default_factory=OutputSpec)
    training: TrainingSpec | None = Field(
        default=None, description="{labels: FILE, prior: em|labels}: the verifier learns from labelled pairs"
    )
    plugins: PluginsSpec = Field(default_factory=PluginsSpec)
    fail_on_warnings: bool = Field(
        default=False,
        description="er run exits 3 (after writing the outputs) when the run's plausibility check warns (report.json "
        "warnings: one giant cluster, every candidate a match, a degenerate fitted model …); default: the warnings "
        "are printed and the run exits 0",
    )
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
    return {bool: "a boolean", str: "a string", int: "a whole number", float: "a number", list: "a list", dict: "a mapping"}.get(
        type(value), type(value).__name__
    )


def type_problems(value: Any, ann: Any, path: YamlPath, filename: str, lines: dict[YamlPath, int]) -> list[Problem]:
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
        return [
            problem_at(
                filename,
                lines,
                path,
                message=f"{json.dumps(value, default=str)[:60]} is {_kind(value)}; expected {expected}",
                fix=f"write {expected} here",
            )
        ]
    if value is None or isinstance(value, (bool, int, float, str)):
        if not arms or not all(a in _SCALAR_ANNOTATIONS for a in arms) or value is None:
            return []
        numeric = int in arms or float in arms
        wrong = isinstance(value, str) or (isinstance(value, bool) and bool not in arms) or (not isinstance(value, bool) and not numeric)
        if not wrong:
            return []
        shown = json.dumps(value)
        hint = numeric_text_hint(value) if isinstance(value, str) and _looks_numeric(value) else ""
        expected = _expected(arms) + "".join(f" or {w!r}" for w in words)
        return [
            problem_at(
                filename,
                lines,
                path,
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


def numeric_text_hint(text: str) -> str:
    """The fix for a number YAML read as text: quotes removed, or (YAML 1.1 reads ``1e-6`` and ``1.0e9`` as
    text, not as numbers) a dot before the exponent and a sign in it: ``1.0e-6``, ``1.0e+9``."""
    mantissa, e, exponent = text.strip().lower().partition("e")
    if e and ("." not in mantissa or exponent[:1] not in ("+", "-")):
        number = mantissa if "." in mantissa else f"{mantissa}.0"
        signed = exponent if exponent[:1] in ("+", "-") else f"+{exponent}"
        return f"write {number}e{signed} (YAML reads {text.strip()} as text: an exponent needs a dot before it and a sign), without quotes"
    return f"write {text} without quotes"


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------
# pass 2 itself: unknown keys with did-you-mean, pydantic's errors as problems


#: job keys naming components (checked, with better messages, when resolved)
_COMPONENT_SECTIONS = tuple(key for fam in FAMILIES.values() if not fam.per_field for key in fam.sections)


def pydantic_problems(
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
                problem_at(
                    filename,
                    lines,
                    path,
                    message=f"{subject + ' has no parameter' if subject else 'unknown key'} {key!r}",
                    fix=did_you_mean(key, allowed) + f"allowed: {choices_text(allowed)}",
                )
            )
        elif etype == "missing":
            out.append(
                Problem(
                    where=where_of(filename, lines, path[:-1]) if len(path) > 1 else filename,
                    path=render_path(path),
                    message=f"{subject + ' needs' if subject else 'required key'} {key!r}" + ("" if subject else " is missing"),
                    fix=(_MISSING_FIX.get(key, "") if not prefix else "") or _example_fix(model, loc) or f"add {key}: … here",
                )
            )
        else:
            value = err.get("input")
            shown = json.dumps(value, default=str) if not isinstance(value, dict) else "{…}"
            out.append(
                problem_at(
                    filename,
                    lines,
                    path,
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


def _example_fix(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> str:
    """How to add the required key at ``loc`` of ``model``, from the first of the field's ``examples``
    (``Field(examples=[...])``), written as one line of YAML; "" when it declares none."""
    if model is None or not loc or not isinstance(loc[-1], str):
        return ""
    names = _nested_keys(model, loc[:-1]) if len(loc) > 1 else list(model.model_fields)
    if not names or loc[-1] not in names:
        return ""
    owner: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        ann = owner.model_fields[part].annotation
        subs = [a for a in typing.get_args(ann) if isinstance(a, type) and issubclass(a, BaseModel)]
        owner = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else subs[0]
    examples = owner.model_fields[loc[-1]].examples
    if not examples:
        return ""
    return f"add e.g. {loc[-1]}: {flow_yaml(examples[0])}"


def flow_yaml(value: Any) -> str:
    """``value`` (JSON-like) as one line of YAML flow style: ``[{field: a, levels: [100, 90]}, b]``."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow_yaml(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    text = str(value)
    plain = text and all(c.isalnum() or c in "_-." for c in text) and not text[0].isdigit() and text not in ("true", "false", "null")
    return text if plain else json.dumps(text)


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
    data: dict[str, Any],
    model: type[BaseModel],
    path: YamlPath,
    filename: str,
    lines: dict[YamlPath, int],
    ignore: tuple[str, ...] = (),
) -> list[Problem]:
    known = _model_keys(model)
    out = []
    for key in data:
        if key in known or key in ignore:
            continue
        fix = did_you_mean(str(key), known) + f"allowed keys: {choices_text(known + list(ignore))}"
        out.append(
            problem_at(
                filename,
                lines,
                path + (str(key),),
                message=f"unknown key {key!r}",
                fix=fix,
            )
        )
    return out


def without_repeats(found: list[Problem], already: list[Problem]) -> list[Problem]:
    """``found`` without the problems at a place ``already`` names (one message per bad value)."""
    places = {(p.where, p.path) for p in already}
    # pydantic names each arm of a union that refused the value (``threshold.float``): the same place
    return [
        p
        for p in found
        if (p.where, p.path) not in places and not any(p.where == w and (p.path or "").startswith(f"{q}.") for w, q in places if q)
    ]


#: the job's nested sections of fixed keys (their unknown keys reported with did-you-mean, then dropped)
_NESTED_SECTIONS: dict[str, type[BaseModel]] = {
    "output": OutputSpec,
    "plugins": PluginsSpec,
    "exact_duplicates": ExactSpec,
}


def validate_spec(data: dict[str, Any], lines: dict[YamlPath, int], filename: str, problems: list[Problem]) -> JobSpec | None:
    """Pass 2: unknown keys (reported by us, with the allowed list), then the rest of the schema by pydantic."""
    problems += _unknown_keys(data, lines, filename)
    known = _known_keys(data)
    strict = type_problems(known, JobSpec, (), filename, lines)
    problems += strict
    try:
        return JobSpec.model_validate(known)
    except ValidationError as exc:
        problems += without_repeats(pydantic_problems(exc, filename, lines, ()), strict)
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
            if isinstance(s.get("csv"), dict):
                problems += _extra_key_problems(s["csv"], CsvSpec, ("sources", i, "csv"), filename, lines)
    return problems


def _known_keys(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the unknown keys (reported already), for the schema's other checks."""

    def only(section: Any, model: type[BaseModel]) -> Any:
        return {k: v for k, v in section.items() if k in model.model_fields} if isinstance(section, dict) else section

    clean = only(data, JobSpec)
    for key, model in _NESTED_SECTIONS.items():
        if key in clean:
            clean[key] = only(clean[key], model)
    if "executor" in clean:  # its options are checked against the executor's own model when the job is resolved
        clean["executor"] = only(clean["executor"], ExecutorSpec)
    if isinstance(clean.get("sources"), list):
        clean["sources"] = [only(s, SourceSpec) for s in clean["sources"]]
        for s in clean["sources"]:
            if isinstance(s, dict) and "html" in s:
                s["html"] = only(s["html"], HtmlSpec)
            if isinstance(s, dict) and "csv" in s:
                s["csv"] = only(s["csv"], CsvSpec)
    return clean
