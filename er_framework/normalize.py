"""Normalizers of fields: chains of steps over whole columns, missing values, counts.

Normalizers are a component family (:class:`~er_framework.components.Normalizer`):
a plugin registers them with the hook ``er_register_normalizers``; the
built-ins (``text``, ``name``, ``nickname``, ``phone``, ``address``,
``email``, ``date``, ``digits``, ``lower``, ``strip``) are the plugin
:mod:`er_plugins.normalizers`, loaded like any other. A job normalizes a
field by a chain of *steps*; each step names a normalizer and may carry
options, validated against the normalizer's ``Params``::

    normalize:
      first_name: [name, nickname]
      phone:      [{type: phone, default_region: US}]
      dob:        {type: date, dayfirst: true}

Python API
----------

* :func:`normalize_column` ``(values, steps)`` applies a chain of steps in
  order. A step is a name (``"name"``), a mapping with a ``type`` key and
  options (``{"type": "phone", "default_region": "US"}``) or a
  :class:`~er_framework.components.Normalizer` instance; a single step may be
  given instead of a list. Names are looked up in ``registry`` (default: the
  process's plugins). Unknown normalizers or options and bad option values
  raise :class:`ValueError` whose message names the step (``steps[1]``) and
  lists the valid choices.
* :func:`resolve_steps` returns the normalizer classes with their validated
  ``Params``, and every problem (:class:`StepProblem`: step, option, message,
  fix) without touching data; :func:`check_steps` the same problems as
  strings.
* :func:`normalize_column_with_stats` also returns counts for the report:
  missing before, placeholders, values that could not be normalized
  ("unparseable", their share of the present values and the first five
  examples) and missing after.

Missing values
--------------

A step never sees a missing value and the chain never returns ``""``:
``None`` comes out for

* ``None`` (and a float NaN), the empty string and whitespace-only strings;
* *placeholder* values (at most 24 characters): ignoring case,
  punctuation, symbols and whitespace, one of :data:`PLACEHOLDER_KEYS`
  (``""``, ``na``, ``nan``,
  ``null``, ``none``, ``nil``, ``unknown``, ``undefined``, ``missing``,
  ``not available``, ``not applicable``, and the other strings pandas reads as
  NA by default, such as ``#N/A``, ``<NA>``, ``-NaN``, ``-1.#IND``). So
  ``"-"``, ``"--"``, ``"?"``, ``"N/A"``, ``"n.a."``, ``"NULL"`` and
  ``"Unknown"`` are missing. (A person really named "Na" or "Nan" is lost:
  the price of reading the usual NA spellings as missing.) The check is made
  on the input and again on the output of each step;
* values a normalizer reduces to nothing (``None`` or ``""``): a phone with
  too few digits or made of one repeated digit, an email without exactly one
  ``@``, a date that does not parse, a name made only of titles, ...

Other values that are not strings (numbers read from a CSV or JSON) are
given to the steps as ``str(value)``: a float ``1999.0`` reaches them as
``"1999.0"``, which the built-in ``digits``, ``date``, ``phone`` and ``text``
read as the integer 1999 (see "Numbers written as floats" in
:mod:`er_plugins.normalizers`).

Unparsed values
---------------

A present value (neither missing nor a placeholder) that the chain turns
into ``None`` is *unparsed* (``unparseable`` in the stats of
:func:`normalize_column_keeping_input`: a date that does not parse, an email
without ``@``, ...). The run warns of a field whose chain could not read
more than :data:`UNPARSED_WARN_SHARE` of its present values
(:func:`unparsed_warning`: ``er run``'s summary and report.html), and a job
with ``normalize_strict: true`` stops on any (:func:`unparsed_problem`, raised
by the normalize stage before anything is written).

Speed
-----

Columns have up to millions of values with many repeats: a column's
*distinct* values are normalized once (a column of strings and ``None`` is
factorized by Arrow's hash table, others by a dict) and the results mapped
back by position. Consecutive steps that are functions of one value
(:meth:`~er_framework.components.Normalizer.per_value`) run as one guarded
function per distinct value; a batch step
(:meth:`~er_framework.components.Normalizer.normalize`) gets the distinct
non-missing strings reaching it in one list. A normalizer whose class says
``batch_first = True`` (the built-in ``text``, ``address``, ``email``,
``phone``, ``digits``: whole-batch passes over the joined text, equal to
their per-value functions) runs as a batch step although it offers
``per_value()``; the guard between steps is the same either way. The
report's counts look only at the distinct values that came out missing.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_, is_not
from typing import Any, Literal, get_args, get_origin

import numpy as np
from pydantic import ValidationError

from er_framework.components import Context, Normalizer, Params
from er_framework.errors import PluginError, Problem, choices_text, did_you_mean
from er_framework.kernels.arrow import ArrowValues, coded_strings, string_array, to_numpy
from er_framework.registry import ENV_BLOCK, Registry, default_registry

__all__ = [
    "PLACEHOLDER_KEYS",
    "UNPARSED_WARN_SHARE",
    "StepProblem",
    "check_steps",
    "is_missing",
    "json_list",
    "list_text",
    "normalize_column",
    "normalize_column_keeping_input",
    "normalize_column_with_stats",
    "normalize_column_with_stats_reference",
    "batch_first",
    "merge_stats",
    "resolve_steps",
    "step_list",
    "step_names",
    "unparsed_problem",
    "unparsed_text",
    "unparsed_warning",
]

Value = str | None
PerValue = Callable[[str], Value]
#: what a chain names: a normalizer's name, ``{type: name, **options}`` or an instance
Step = str | Mapping[str, Any] | Normalizer

# ---------------------------------------------------------------------------
# missing values and placeholders

#: Keys (casefolded, punctuation, symbols and whitespace removed) of values that
#: mean "missing": the empty key (blank or punctuation only: "-", "?", "--"),
#: the usual NA spellings, and pandas' default NA strings ("#N/A", "<NA>",
#: "-1.#IND", "1.#QNAN", "N/A N/A", ...).
PLACEHOLDER_KEYS: frozenset[str] = frozenset(
    {
        "", "na", "nan", "nana", "null", "nul", "none", "nil", "unknown", "undefined",
        "missing", "notavailable", "notapplicable", "ind", "1ind", "qnan", "1qnan",
    }
)  # fmt: skip

#: Longest string checked against :data:`PLACEHOLDER_KEYS` (no longer one can be a placeholder).
_PLACEHOLDER_MAX = 24
_SEP = r"[\W_]*"  # punctuation, symbols, whitespace
_PLACEHOLDER = re.compile(
    _SEP + "(?:" + "|".join(_SEP.join(map(re.escape, k)) for k in sorted(PLACEHOLDER_KEYS, key=len, reverse=True) if k) + ")?" + _SEP,
    re.IGNORECASE,
).fullmatch


#: First characters that rule a placeholder out (ASCII letters and digits no key starts with).
_NOT_PLACEHOLDER_START = frozenset(
    c for c in string.ascii_letters + string.digits if c.lower() not in {k[0] for k in PLACEHOLDER_KEYS if k}
)


#: ASCII letters and digits in no key (so never in a placeholder): a value holding one as its second
#: character needs no regex (``"123 Main St"``, ``"555-1234"``)
_NOT_IN_PLACEHOLDER = frozenset(c for c in string.ascii_letters + string.digits if c.lower() not in set("".join(PLACEHOLDER_KEYS)))


def _is_placeholder(s: str) -> bool:
    """Blank, or a placeholder: its letters and digits, casefolded, are a key of PLACEHOLDER_KEYS."""
    if s.isspace():
        return True
    return len(s) <= _PLACEHOLDER_MAX and not (s and s[0] in _NOT_PLACEHOLDER_START) and _PLACEHOLDER(s) is not None


def is_missing(value: Any) -> bool:
    """``None``, NaN, blank, or a placeholder ("N/A", "null", "-", ...): what the chains turn into ``None``."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value or _is_placeholder(value)
    return isinstance(value, float) and math.isnan(value)


def _bad_output(name: str, value: Any, given: Any) -> str:
    """A step's result that is neither ``str`` nor ``None``: a ``str`` subclass is read as ``str``, else a plugin error."""
    if isinstance(value, str):
        return str(value)
    raise PluginError(
        Problem(
            where=f"normalizer {name!r}",
            message=f"returned {type(value).__name__} {value!r} for {given!r}; a normalizer returns a str or None",
            fix=f"fix the normalizer's plugin, or block the plugin ({ENV_BLOCK})",
        )
    )


def _guard_chain(fs: Sequence[PerValue], names: Sequence[str] = ()) -> Callable[[Any], Value]:
    """The steps ``fs`` made safe: missing/blank/placeholder in or out of any step -> ``None``, never ``""``."""
    steps = tuple(zip(fs, list(names) + ["?"] * (len(fs) - len(names))))
    ph = _PLACEHOLDER
    limit = _PLACEHOLDER_MAX
    safe_start = _NOT_PLACEHOLDER_START
    safe_inner = _NOT_IN_PLACEHOLDER

    def guarded(s: Any) -> Value:
        if s.__class__ is not str:
            if s is None or (isinstance(s, float) and math.isnan(s)):
                return None
            s = str(s)
        if not s or (s[0] not in safe_start and (s.isspace() or (len(s) <= limit and s[1:2] not in safe_inner and ph(s) is not None))):
            return None
        for f, name in steps:
            out = f(s)
            if out.__class__ is not str:
                if out is None:
                    return None
                out = _bad_output(name, out, s)
            s = out
            if not s or (s[0] not in safe_start and (s.isspace() or (len(s) <= limit and s[1:2] not in safe_inner and ph(s) is not None))):
                return None
        return s

    return guarded


# ---------------------------------------------------------------------------
# steps: names and options -> normalizer classes with validated params


@dataclass(frozen=True)
class StepProblem:
    """What is wrong with step ``index`` of a chain; ``key`` is the option (or ``"type"``) at fault, if one is."""

    index: int
    message: str
    fix: str = ""
    key: str | None = None

    def __str__(self) -> str:
        return f"steps[{self.index}]: {self.message}" + (f"; {self.fix}" if self.fix else "")


def step_list(steps: Any) -> list[Any] | None:
    """The steps of a chain as a list (one step given alone is a chain of one); ``None`` if not a chain."""
    if isinstance(steps, (str, Mapping, Normalizer)):
        return [steps]
    if isinstance(steps, Sequence):
        return list(steps)
    return None


_STEP_FIX = "a step is a normalizer name, a {type: NAME, option: value} mapping, or a list of them"


def resolve_steps(
    steps: Any, registry: Registry | None = None
) -> tuple[list[tuple[type[Normalizer], Params] | Normalizer], list[StepProblem]]:
    """The chain ``steps`` resolved: per step its class and validated params (or the instance given), and every problem.

    Nothing is resolved when a problem is found (the list is then incomplete).
    """
    items = step_list(steps)
    if items is None:
        return [], [StepProblem(0, f"steps must be a list of normalizer steps, got {steps!r}", _STEP_FIX)]
    installed: dict[str, type[Normalizer]] = {}
    if not all(isinstance(step, Normalizer) for step in items):
        reg = registry if registry is not None else default_registry()
        installed = {name: info.cls for name, info in reg.components["normalizer"].items()}  # type: ignore[misc]
    resolved: list[tuple[type[Normalizer], Params] | Normalizer] = []
    problems: list[StepProblem] = []
    for i, step in enumerate(items):
        if isinstance(step, Normalizer):
            resolved.append(step)
            continue
        one, found = _resolve_step(i, step, installed)
        problems += found
        if one is not None:
            resolved.append(one)
    return resolved, problems


def _resolve_step(
    i: int, step: Any, installed: Mapping[str, type[Normalizer]]
) -> tuple[tuple[type[Normalizer], Params] | None, list[StepProblem]]:
    valid = f"installed: {choices_text(installed)}"
    if isinstance(step, str):
        name, options = step, {}
    elif isinstance(step, Mapping):
        if "type" not in step:
            keys = [str(k) for k in step]
            hint = f"write {{type: {keys[0]}, ...options}}; " if len(keys) == 1 and keys[0] in installed else ""
            return None, [StepProblem(i, "a step mapping needs a 'type' key naming the normalizer", hint + valid)]
        name, options = step["type"], {str(k): v for k, v in step.items() if k != "type"}
        if not isinstance(name, str):
            return None, [StepProblem(i, f"'type' must be a normalizer name, got {name!r}", valid, key="type")]
    else:
        return None, [StepProblem(i, f"a step is a normalizer name or a mapping with 'type' and options, got {step!r}", valid)]
    cls = installed.get(name)
    if cls is None:
        key = "type" if isinstance(step, Mapping) else None
        return None, [StepProblem(i, f"unknown normalizer {name!r}", did_you_mean(name, installed) + valid, key=key)]
    missing = [m for m in cls.requires if importlib.util.find_spec(m) is None]
    if missing:
        return None, [StepProblem(i, f"normalizer {name!r} needs the Python package {m!r}", f"pip install {m}") for m in missing]
    try:
        return (cls, cls.Params.model_validate(options)), []
    except ValidationError as exc:
        return None, [_option_problem(i, cls, err) for err in exc.errors()]


def _option_problem(i: int, cls: type[Normalizer], err: Any) -> StepProblem:
    """A pydantic error of a normalizer's options as a :class:`StepProblem` (the value, what was expected, a fix)."""
    fields = cls.Params.model_fields
    loc = [str(x) for x in err.get("loc", ())]
    key = loc[0] if loc else None
    etype, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if etype == "extra_forbidden":
        known = list(fields)
        return StepProblem(
            i,
            f"normalizer {cls.name!r} has no option {key!r}",
            did_you_mean(str(key), known) + f"valid options: {choices_text(known) if known else 'none'}",
            key=key,
        )
    if etype == "missing":
        return StepProblem(i, f"normalizer {cls.name!r} needs the option {key!r}", f"add {key}: … to the step", key=key)
    ann = fields[key].annotation if key in fields else None
    nullable = type(None) in get_args(ann)
    or_null = " or null" if nullable else ""
    fix = f"er plugins lists the options of {cls.name!r}"
    kinds = {"bool": "a boolean (true/false)", "int": "an integer", "float": "a number", "string": "a string"}
    if etype.endswith(("_type", "_parsing")):
        what = f"must be {kinds.get(etype.split('_')[0], etype.split('_')[0])}{or_null}"
    elif etype in _BOUNDS:
        op, bound = _BOUNDS[etype]
        what = f"must be {op} {ctx.get(bound)}"
        fix = f"use a value {op} {ctx.get(bound)}"
    elif etype == "literal_error":
        choices = [str(a) for a in _literal_args(ann)]
        what = f"must be one of: {choices_text(choices)}{or_null}"
        fix = did_you_mean(str(value), choices).strip() or "no close match"
    elif etype == "value_error":
        what = str(ctx.get("error", err["msg"]))
    else:
        what = f"is not valid: {err['msg']}"
    subject = f"option {'.'.join(loc)!r} of normalizer {cls.name!r}" if loc else f"normalizer {cls.name!r}"
    got = "null" if value is None else repr(value)
    message = what if "got " in what else f"{what}, got {got}"
    return StepProblem(i, f"{subject} {message}", fix, key=key)


_BOUNDS = {
    "greater_than_equal": (">=", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("<=", "le"),
    "less_than": ("<", "lt"),
}


def _literal_args(ann: Any) -> list[Any]:
    if get_origin(ann) is Literal:
        return list(get_args(ann))
    return [a for arg in get_args(ann) for a in _literal_args(arg)]


def check_steps(steps: Any, registry: Registry | None = None) -> list[str]:
    """Problems of a chain of steps (unknown normalizers or options, bad values) as strings; ``[]`` if fine."""
    return [str(p) for p in resolve_steps(steps, registry)[1]]


# ---------------------------------------------------------------------------
# running a chain


def _normalizers(steps: Any, registry: Registry | None) -> list[Normalizer]:
    resolved, problems = resolve_steps(steps, registry)
    if problems:
        raise ValueError("; ".join(map(str, problems)))
    context = Context()
    return [s if isinstance(s, Normalizer) else s[0](s[1], context) for s in resolved]


def json_list(value: Any) -> list[str] | None:
    """The elements of a value that is a JSON list (``'["a", "b"]'``: how a Parquet or DataFrame list column
    arrives, and what ``split`` makes), as text: ``null`` elements dropped, other non-strings as their JSON
    text; ``None`` for any other value (text that is not a JSON list)."""
    if value.__class__ is not str or value[:1] != "[":
        return None
    try:
        loaded = json.loads(value)
    except ValueError:
        return None
    if not isinstance(loaded, list):
        return None
    return [x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in loaded if x is not None]


def list_text(items: Iterable[Value]) -> Value:
    """A list's elements as a JSON list (:func:`json_list`'s form): missing elements dropped, each element
    once, in order of first appearance; ``None`` (missing) when none is left."""
    kept = list(dict.fromkeys(x for x in items if x is not None))
    return json.dumps(kept, ensure_ascii=False) if kept else None


def _flat(results: Iterable[Value]) -> Iterable[Value]:
    """Element results, an element a step made a list of (``split`` of ``"a;b"``) as its elements."""
    for r in results:
        items = json_list(r)
        if items is None:
            yield r
        else:
            yield from items


def _element_wise(run: Callable[[list[Any]], list[Value]]) -> Callable[[list[Any]], list[Value]]:
    """``run`` over distinct values, a JSON list (:func:`json_list`) element by element (:func:`list_text`
    of its elements' results), every other value whole."""

    def by_elements(keys: list[Any]) -> list[Value]:
        lists = {i: items for i, k in enumerate(keys) if k.__class__ is str and k[:1] == "[" and (items := json_list(k)) is not None}
        if not lists:
            return run(keys)
        whole = [k for i, k in enumerate(keys) if i not in lists]
        done = iter(run(whole))
        elements = list(dict.fromkeys(x for items in lists.values() for x in items))
        table = dict(zip(elements, run(elements)))
        return [list_text(_flat(table[x] for x in lists[i])) if i in lists else next(done) for i in range(len(keys))]

    return by_elements


def _chain(steps: Any, registry: Registry | None = None) -> Callable[[list[Any]], list[Value]]:
    """A function from a list of distinct raw values to their keys: the chain ``steps``, guarded.

    A value that is a JSON list (:func:`json_list`) goes through the steps element by element; a step that
    makes lists (:attr:`~er_framework.components.Normalizer.makes_lists`: ``split``) turns text into one, so
    the steps after it take its elements one by one.
    """
    ns = _normalizers(steps, registry)
    cut = next((i for i, n in enumerate(ns) if n.makes_lists), None)
    if cut is None:  # (no step at all: values as given, lists too)
        return _element_wise(_plain_chain(ns)) if ns else _plain_chain(ns)
    head = _element_wise(_plain_chain(ns[: cut + 1]))
    tail = _chain(ns[cut + 1 :], registry)

    def run(keys: list[Any]) -> list[Value]:
        made = head(keys)
        distinct = list(dict.fromkeys(x for x in made if x is not None))
        table = dict(zip(distinct, tail(distinct)))
        return [None if x is None else table[x] for x in made]

    return run


def _plain_chain(ns: Sequence[Normalizer]) -> Callable[[list[Any]], list[Value]]:
    """The steps ``ns`` over a list of distinct raw values, each value whole, guarded.

    Runs of per-value steps become one guarded function; a batch step gets the
    distinct strings that reach it.
    """
    parts: list[tuple[list[PerValue], list[str]] | Normalizer] = []
    for n in ns:
        f = None if batch_first(n) else n.per_value()
        if f is None:
            parts.append(n)
        elif parts and isinstance(parts[-1], tuple):
            parts[-1][0].append(f)
            parts[-1][1].append(n.name)
        else:
            parts.append(([f], [n.name]))
    if not parts or isinstance(parts[0], Normalizer):
        parts.insert(0, ([], []))  # inputs to str, missing -> None
    stages = [p if isinstance(p, Normalizer) else _guard_chain(*p) for p in parts]
    if len(stages) == 1:
        only = stages[0]
        assert not isinstance(only, Normalizer)
        return lambda keys: list(map(only, keys))
    # the empty guard before a batch step: whole lists (the same function as _CLEAN per value)
    empty_first = isinstance(parts[0], tuple) and not parts[0][0]

    def run(keys: list[Any]) -> list[Value]:  # keys: distinct values
        cur: list[Any] = keys
        for i, stage in enumerate(stages):
            if isinstance(stage, Normalizer):
                # right after the input guard the strings are the distinct keys themselves
                cur = _run_batch(stage, cur, distinct=i == 1 and empty_first)
            elif i == 0 and empty_first:
                cur = _clean_inputs(cur)
            else:
                cur = list(map(stage, cur))
        return cur

    return run


def batch_first(n: Normalizer) -> bool:
    """Whether chains run ``n`` as a batch step (:meth:`~Normalizer.normalize` on the distinct strings reaching
    it) although it offers a per-value function: a normalizer says so with the class attribute
    ``batch_first = True`` when its ``normalize()`` is a whole-batch fast path giving exactly the results of
    its ``per_value()`` (the built-in ``address``, ``email``, ``phone``, ``text``, ``digits``). Between two
    steps the same guard runs either way, so the chain's result is the same."""
    return bool(getattr(n, "batch_first", False))


_CLEAN = _guard_chain([])
_NONE_TYPE = type(None)


def _clean_strings(values: list[str | None]) -> list[Value]:
    """``_CLEAN`` of every value of a list of ``str`` and ``None``, in one comprehension (no call per value)."""
    ph = _PLACEHOLDER
    limit = _PLACEHOLDER_MAX
    safe_start = _NOT_PLACEHOLDER_START
    safe_inner = _NOT_IN_PLACEHOLDER
    return [
        None
        if not s or (s[0] not in safe_start and (s.isspace() or (len(s) <= limit and s[1:2] not in safe_inner and ph(s) is not None)))
        else s
        for s in values
    ]


def _clean_inputs(values: list[Any]) -> list[Value]:
    """``_CLEAN`` of every value: whole-list when every value is a ``str`` or ``None``, else value by value."""
    if set(map(type, values)) <= {str, _NONE_TYPE}:
        return _clean_strings(values)
    return list(map(_CLEAN, values))


def _run_batch(n: Normalizer, values: list[Value], distinct: bool = False) -> list[Value]:
    """A batch step over the distinct non-missing strings of ``values``; its results guarded.

    ``values`` are a guard's results: non-empty strings and ``None``;
    ``distinct``: no string is there twice (the results are then placed by
    position, without a table).
    """
    present: list[bool] | None = None
    todo: list[str]
    if distinct:
        present = list(map(is_not, values, repeat(None)))
        todo = list(compress(values, present)) if not all(present) else list(values)  # type: ignore[arg-type]
    else:
        todo = list(dict.fromkeys(filter(None, values)))
    out = n.normalize(todo) if todo else []
    if not isinstance(out, list) or len(out) != len(todo):
        got = f"{len(out)} values" if isinstance(out, Sequence) else type(out).__name__
        raise PluginError(
            Problem(
                where=f"normalizer {n.name!r}",
                message=f"normalize() returned {got} for {len(todo)} values; it returns one str or None per value",
                fix=f"fix the normalizer's plugin, or block the plugin ({ENV_BLOCK})",
            )
        )
    if not set(map(type, out)) <= {str, _NONE_TYPE}:
        out = [r if r is None or r.__class__ is str else _bad_output(n.name, r, v) for v, r in zip(todo, out)]
    cleaned = _clean_strings(out)
    if present is not None:
        if len(todo) == len(values):
            return cleaned
        placed = np.full(len(values), None, dtype=object)
        placed[np.asarray(present, dtype=bool)] = _object_array(cleaned)
        return list(placed.tolist())
    table: dict[str, Value] = dict(zip(todo, cleaned))
    return list(map(table.get, values))  # type: ignore[arg-type]  # None -> None: None is no key


def _object_array(items: list[Any]) -> Any:
    """A 1-D numpy object array of ``items`` (never an array of characters)."""
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def normalize_column(values: Iterable[Any], steps: Any, registry: Registry | None = None) -> list[Value]:
    """``values`` through the chain ``steps``, each distinct value normalized once.

    An empty chain only turns missing, blank and placeholder values into ``None``.
    Raises :class:`ValueError` (listing the valid choices) for bad steps.
    """
    if not isinstance(values, list):
        values = list(values)
    run = _chain(steps, registry)
    table: dict[Any, Value] = dict.fromkeys(values)
    keys = list(table)
    table.update(zip(keys, run(keys)))
    return list(map(table.__getitem__, values))


def normalize_column_with_stats(values: Iterable[Any], steps: Any, registry: Registry | None = None) -> tuple[list[Value], dict[str, Any]]:
    """:func:`normalize_column` and counts for the report (see :func:`normalize_column_keeping_input`)."""
    out, stats, _ = normalize_column_keeping_input(values, steps, registry)
    return out, stats


def normalize_column_keeping_input(
    values: Iterable[Any], steps: Any, registry: Registry | None = None
) -> tuple[list[Value], dict[str, Any], Sequence[Any]]:
    """``(out, stats, given)``: :func:`normalize_column` and counts for the report, and the values given in a
    compact form: an :class:`~er_framework.kernels.arrow.ArrowValues` of the Arrow dictionary array the
    factorization made (the same values, held in about their UTF-8 bytes) where there was one, else the
    values given themselves. A run keeps ``given`` (report.html's example records) and drops the list.

    ``stats``: ``steps`` (the chain's normalizer names), ``values`` (count),
    ``missing_before`` (``None``, NaN, blank), ``placeholders`` (non-blank
    values meaning missing, such as "N/A"), ``unparseable`` (the values the
    chain could not read: present values, neither blank nor a placeholder,
    that normalized to missing: a date that does not parse, a phone with too
    few digits, an email without one ``@``, a number with a fraction under
    ``digits``, ...), ``unparseable_share`` (``unparseable`` over the present
    values, those neither missing nor placeholders; 0.0 when there are none),
    ``unparseable_examples`` (the first five distinct such values, in input
    order, as text), ``missing_after`` (= the three counts added) and
    ``distinct_before`` / ``distinct_after`` (distinct non-missing values).

    Only the distinct values that came out missing are looked at one by one
    (a value with a key was neither missing nor a placeholder: the chain's
    guard gives those ``None``); the column itself is passed over by C-level
    maps. :func:`normalize_column_with_stats_reference` is the plain twin.
    """
    given: Sequence[Any]
    if isinstance(values, ArrowValues):  # a column kept as an Arrow array since it was read
        given, values = values, (values if len(values) >= FACTORIZE_MIN else list(values))
    else:
        if not isinstance(values, list):
            values = list(values)
        given = values
    run = _chain(steps, registry)
    coded = _factorized(values)
    if coded is None and not isinstance(values, list):
        values = list(values)
    if coded is not None:  # strings and None: Arrow's hash table, the column mapped back by position
        keys, codes, counts_of, encoded = coded
        given = ArrowValues(encoded)
        results = run(keys)
        # the column remembers its distinct results and codes: its Arrow form is then made from those
        out: list[Value] = coded_strings(results, codes.astype(np.int32 if len(keys) < 2**31 else np.int64, copy=False))
        lost = list(compress(keys, map(is_, results, repeat(None))))
        lost_at = list(compress(range(len(results)), map(is_, results, repeat(None)))) if lost else []
        counts = Counter(dict(zip(lost, counts_of(lost_at))))
    else:
        table: dict[Any, Value] = dict.fromkeys(values)
        keys = list(table)
        results = run(keys)
        table.update(zip(keys, results))
        out = list(map(table.__getitem__, values))
        lost = list(compress(keys, map(is_, results, repeat(None))))  # distinct values without a key
        counts = Counter(filter(set(lost).__contains__, values)) if lost else Counter()
    missing_before = placeholders = unparseable = unparseable_distinct = 0
    examples: list[Any] = []
    for k in lost:
        c = counts[k]
        if k is None or (isinstance(k, float) and math.isnan(k)) or (isinstance(k, str) and (not k or k.isspace())):
            missing_before += c
        elif is_missing(k):
            placeholders += c
        else:
            unparseable += c
            unparseable_distinct += 1
            if len(examples) < UNPARSED_EXAMPLES:
                examples.append(k)
    after = set(results)
    after.discard(None)
    stats = _stats(
        steps, len(values), missing_before, placeholders, unparseable, examples, len(keys) - len(lost) + unparseable_distinct, len(after)
    )
    return out, stats, given


def step_names(steps: Any) -> list[str]:
    """The normalizer names of a chain's steps (``["date"]``, ``["name", "nickname"]``), as the report names
    the chain; a step that names none is shown as ``"?"``."""
    names: list[str] = []
    for step in step_list(steps) or []:
        if isinstance(step, Normalizer):
            names.append(step.name)
        elif isinstance(step, str):
            names.append(step)
        elif isinstance(step, Mapping) and isinstance(step.get("type"), str):
            names.append(step["type"])
        else:
            names.append("?")
    return names


def _stats(
    steps: Any,
    n: int,
    missing_before: int,
    placeholders: int,
    unparseable: int,
    examples: list[Any],
    distinct_before: int,
    distinct_after: int,
) -> dict[str, Any]:
    """A field's counts for the report (see :func:`normalize_column_keeping_input`)."""
    present = n - missing_before - placeholders
    return {
        "steps": step_names(steps),
        "values": n,
        "missing_before": missing_before,
        "placeholders": placeholders,
        "unparseable": unparseable,
        "unparseable_share": round(unparseable / present, 6) if present else 0.0,
        "unparseable_examples": [e if isinstance(e, str) else str(e) for e in examples],
        "missing_after": missing_before + placeholders + unparseable,
        "distinct_before": distinct_before,
        "distinct_after": distinct_after,
    }


#: how many values a field's stats show that its chain could not read
UNPARSED_EXAMPLES = 5


def merge_stats(parts: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The per-field stats of several parts of the records (each :func:`normalize_column_keeping_input`'s,
    per field) as those of the whole: counts summed, the share recomputed, the first
    :data:`UNPARSED_EXAMPLES` distinct examples in the parts' order. ``distinct_before`` and
    ``distinct_after`` count within a part: a value in two parts would count twice, so the whole's are
    ``None`` (not known) when there are several parts."""
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        for name, st in part.items():
            got = out.get(name)
            if got is None:
                out[name] = {**st, "unparseable_examples": list(st.get("unparseable_examples") or [])}
                continue
            for k in ("values", "missing_before", "placeholders", "unparseable", "missing_after"):
                got[k] = int(got.get(k, 0)) + int(st.get(k, 0))
            shown = got["unparseable_examples"]
            shown += [e for e in st.get("unparseable_examples") or [] if e not in shown][: UNPARSED_EXAMPLES - len(shown)]
            got["distinct_before"] = got["distinct_after"] = None
    for st in out.values():
        present = int(st.get("values", 0)) - int(st.get("missing_before", 0)) - int(st.get("placeholders", 0))
        st["unparseable_share"] = round(int(st.get("unparseable", 0)) / present, 6) if present else 0.0
    return out


# ---------------------------------------------------------------------------
# values the chains could not read: the run's warning and ``normalize_strict``

#: a field whose chain could not read more than this share of its present values is warned about (the
#: console summary of ``er run``, report.html)
UNPARSED_WARN_SHARE = 0.01

#: what to do about values a chain could not read (the warning's and the strict error's fix)
_UNPARSED_FIX = "fix the values or the field's normalizers (er plugins lists their options)"


def _share_text(share: float) -> str:
    """``16.2%``; a share below 0.1% (but not zero) as ``<0.1%``."""
    return "<0.1%" if 0 < share < 0.001 else f"{share:.1%}"


def unparsed_text(field_name: str, stats: Mapping[str, Any]) -> str:
    """What a field's chain could not read, from its stats (:func:`normalize_column_keeping_input`):
    ``"dob: 812 of 5,000 values (16.2%) could not be read by [date] and became missing, e.g. '19151111.0x'"``
    (of the values present: neither missing nor placeholders)."""
    return f"{field_name}: {_unparsed_body(stats)}"


def _unparsed_body(stats: Mapping[str, Any]) -> str:
    """:func:`unparsed_text` without the field's name."""
    n, present = _unparsed_of(stats)
    share = n / present if present else 0.0
    chain = ", ".join(str(s) for s in stats.get("steps") or []) or "?"
    examples = ", ".join(repr(e if isinstance(e, str) else str(e)) for e in stats.get("unparseable_examples") or [])
    shown = f", e.g. {examples}" if examples else ""
    return f"{n:,} of {present:,} values ({_share_text(share)}) could not be read by [{chain}] and became missing{shown}"


def _unparsed_of(stats: Mapping[str, Any]) -> tuple[int, int]:
    """``(values not read, values present)`` of a field's stats."""
    present = int(stats.get("values", 0)) - int(stats.get("missing_before", 0)) - int(stats.get("placeholders", 0))
    return int(stats.get("unparseable", 0)), present


def unparsed_warning(field_name: str, stats: Mapping[str, Any]) -> str | None:
    """The warning line of a field whose chain could not read more than :data:`UNPARSED_WARN_SHARE` of its
    present values; ``None`` for any other field."""
    if not isinstance(stats, Mapping):
        return None
    n, present = _unparsed_of(stats)
    if not present or n / present <= UNPARSED_WARN_SHARE:
        return None
    return f"warning: {unparsed_text(field_name, stats)}; {_UNPARSED_FIX}, or set normalize_strict: true to stop on them"


def unparsed_problem(field_name: str, stats: Mapping[str, Any], where: str) -> Problem | None:
    """The error of ``normalize_strict: true`` for a field whose chain could not read some values (``None``
    when it read every present value)."""
    if not stats.get("unparseable"):
        return None
    return Problem(
        where=where,
        path=f"normalize.{field_name}",
        message=_unparsed_body(stats) + " (normalize_strict: true)",
        fix=f"{_UNPARSED_FIX}, or remove normalize_strict: true to run with them as missing",
    )


#: columns shorter than this are factorized with a dict (Arrow's conversion does not pay)
FACTORIZE_MIN = 10_000


def _factorized(values: list[Any] | ArrowValues) -> tuple[list[Any], Any, Callable[[list[int]], list[int]], Any] | None:
    """``(keys, codes, counts_of, encoded)`` of a column of strings and ``None`` (or of its Arrow string
    array): its distinct values in order of first appearance (``None`` among them if present), each value's
    position in ``keys`` (int64 array), a function giving the number of values of some keys (by position),
    and the column as an Arrow dictionary array; ``None`` for a short column or one holding anything else
    (or a string Arrow cannot hold, such as a lone surrogate)."""
    if len(values) < FACTORIZE_MIN:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, ArrowValues) and (pa.types.is_string(values.array.type) or pa.types.is_large_string(values.array.type)):
        arr = values.array
    else:
        try:  # TypeError for a value that is neither str nor None (a str subclass is read as its text)
            arr = string_array(values, large=None)
        except (pa.ArrowException, TypeError, ValueError, UnicodeError):
            return None
    enc = pc.dictionary_encode(arr, null_encoding="encode")  # None is a key too, where it first appears
    keys = enc.dictionary.to_pylist()
    codes = to_numpy(enc.indices).astype(np.int64)
    del arr
    pa.default_memory_pool().release_unused()  # the pool keeps what the strings and the hash table freed

    def counts_of(at: list[int]) -> list[int]:
        return np.bincount(codes, minlength=len(keys))[at].tolist() if at else []

    return keys, codes, counts_of, enc


def normalize_column_with_stats_reference(
    values: Iterable[Any], steps: Any, registry: Registry | None = None
) -> tuple[list[Value], dict[str, Any]]:
    """Plain twin of :func:`normalize_column_with_stats` (every distinct value counted and classified in
    Python; the chain's steps run per value): the tests' oracle."""
    if not isinstance(values, list):
        values = list(values)
    fs = [_reference_step(n) for n in _normalizers(steps, registry)]
    counts = Counter(values)
    table: dict[Any, Value] = {k: _reference_chain(fs, k) for k in counts}
    missing_before = placeholders = unparseable = present = 0
    examples: list[Any] = []
    for k, c in counts.items():
        if k is None or (isinstance(k, float) and math.isnan(k)) or (isinstance(k, str) and (not k or k.isspace())):
            missing_before += c
            continue
        if is_missing(k):
            placeholders += c
            continue
        present += 1
        if table[k] is None:
            unparseable += c
            if len(examples) < UNPARSED_EXAMPLES:
                examples.append(k)
    out = list(map(table.__getitem__, values))
    shown = [e if isinstance(e, str) else str(e) for e in examples]
    given = len(values) - missing_before - placeholders
    stats = {
        "steps": step_names(steps),
        "values": len(values),
        "missing_before": missing_before,
        "placeholders": placeholders,
        "unparseable": unparseable,
        "unparseable_share": round(unparseable / given, 6) if given else 0.0,
        "unparseable_examples": shown,
        "missing_after": missing_before + placeholders + unparseable,
        "distinct_before": present,
        "distinct_after": len({r for r in table.values() if r is not None}),
    }
    return out, stats


def _reference_step(n: Normalizer) -> tuple[str, Callable[[str], Any]]:
    """A step of the reference chain: its per-value function, else its batch on one value."""
    f = n.per_value()
    return n.name, f if f is not None else (lambda s: n.normalize([s])[0])


def _reference_chain(fs: Sequence[tuple[str, Callable[[str], Any]]], value: Any) -> Value:
    """One value through the steps ``fs``, missing in or out of any step -> ``None`` (the rules of the guard)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    s = value if isinstance(value, str) else str(value)
    if is_missing(s):
        return None
    for name, f in fs:
        items = json_list(s)
        if items is not None:  # a list: the step on each element, a list it makes of one flattened
            out: list[Value] = []
            for element in items:
                r = _reference_chain([(name, f)], element)
                if r is not None:
                    inner = json_list(r)
                    out.extend(inner if inner is not None else [r])
            kept = list_text(out)
            if kept is None:
                return None
            s = kept
            continue
        r = f(s)
        if r is None:
            return None
        s = _bad_output(name, r, s) if r.__class__ is not str else r
        if is_missing(s):
            return None
    return s
