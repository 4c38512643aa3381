"""report.json as er wrote it: the shape of the keys er's verbs read back (:data:`REPORT_SHAPE`,
:func:`check_report`), and whether a file report.json names is a job file (:func:`is_job_file`).

A report.json that is not er's - a list, a section of the wrong type, a number too large or not finite, a
job file named in it that is /etc/shadow - is an input error that says which key is wrong, never its value
or the other file's lines.
"""

from __future__ import annotations

import math
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from er_framework.errors import InputError, Problem

__all__ = ["MAX_JOB_FILE_BYTES", "MAX_REPORT_INT", "REPORT_SHAPE", "Each", "Obj", "check_report", "is_job_file"]


@dataclass(frozen=True)
class Obj:
    """A JSON object whose listed keys (when present) have the given shapes; ``null`` allowed unless ``required``."""

    keys: dict[str, Any]
    nullable: bool = True


@dataclass(frozen=True)
class Each:
    """A JSON list (``kind="list"``) or object (``kind="map"``) every item of which has the shape ``item``."""

    item: Any
    kind: str = "list"
    nullable: bool = True


#: the largest whole number report.json may hold (er's counts fit in 64 bits; a larger one is not er's)
MAX_REPORT_INT = 2**63 - 1
_STR, _INT, _NUM, _BOOL, _NULL, _OBJ, _LIST = "str", "int", "num", "bool", "null", "obj", "list"
_ID = (_STR, _INT)
_SIDE = Obj({"source": (_STR,), "id": _ID, "row": (_INT, _NULL), "compared": Each((_STR, _NULL), "map")}, nullable=False)
_REVIEW_PAIR = Obj(
    {"left": _SIDE, "right": _SIDE, "score": (_NUM, _NULL), "weight": (_NUM, _NULL), "terms": Each((_NUM, _NULL, _BOOL), "map")},
    nullable=False,
)
_HISTOGRAM = Obj({"edges": Each((_NUM,)), "counts": Each((_INT,))})
_METRICS = Obj({"precision": (_NUM, _NULL), "recall": (_NUM, _NULL), "f1": (_NUM, _NULL), "kept": (_INT, _NULL)})
_THRESHOLD = Obj({"value": (_NUM,), "chosen": (_STR, _NULL), "auto": (_OBJ, _NULL)})

#: the shape of the keys of report.json that er's verbs read (er explain, review, report, evaluate): a key
#: may be missing (an older er wrote fewer), but a key present must have its shape, or the file is not a
#: report er wrote (a list, a number where a section was, a string where a number was, 1e999 …)
REPORT_SHAPE: dict[str, Any] = {
    "job": (_STR, _NULL),
    "config": (_STR, _NULL),
    "config_resolved": (_STR, _NULL),
    "config_hash": (_STR, _NULL),
    "mode": (_STR, _NULL),
    "seed": (_INT, _NULL),
    "workers": (_INT, _NULL),
    "executor": (_OBJ, _NULL),
    "records": Obj({"total": (_INT, _NULL), "per_source": Each((_INT,), "map")}),
    "sources": Each((_OBJ, _NULL), "map"),
    "normalize": Each((_OBJ, _NULL), "map"),
    "exact_duplicates": (_OBJ, _NULL),
    "shingler": (_OBJ, _NULL),
    "tokens": (_OBJ, _NULL),
    "signature": (_OBJ, _NULL),
    "blockers": Each((_OBJ,)),
    "candidate_pairs": (_INT, _NULL),
    "verified_pairs": (_INT, _NULL),
    "pairs_written": (_INT, _NULL),
    "pairs": (_OBJ, _NULL),
    "verifier": Obj(
        {
            "type": (_STR, _NULL),
            "name": (_STR, _NULL),
            "fields": Each((_OBJ,)),
            "threshold": (_NUM, _STR, _NULL),
            "per_field": Each(
                Obj({"columns": Each((_STR,)), "levels": Each((_STR, _NUM)), "candidate_pairs": Each((_INT,))}, nullable=False), "map"
            ),
            "sessions": Obj({"sessions": Each((_OBJ,))}),
        }
    ),
    "model": Obj({"threshold": _THRESHOLD}),
    "score": (_OBJ, _NULL),
    "threshold": _THRESHOLD,
    "scores": Obj(
        {
            "threshold": (_NUM, _NULL),
            "candidates": (_INT, _NULL),
            "above": (_INT, _NULL),
            "below": (_INT, _NULL),
            "nan": (_INT, _NULL),
            "histogram": _HISTOGRAM,
            # a verifier scoring match probabilities: every candidate's match weight in bits
            "weights": Obj(
                {
                    "unit": (_STR,),
                    "threshold": (_NUM,),
                    "above": (_INT,),
                    "below": (_INT,),
                    "from_terms": (_INT,),
                    "clipped": (_INT,),
                    "histogram": _HISTOGRAM,
                }
            ),
        }
    ),
    "review": Obj(
        {
            "threshold": (_NUM,),
            "weight_threshold": (_NUM,),
            "above": Each(_REVIEW_PAIR, nullable=False),
            "below": Each(_REVIEW_PAIR, nullable=False),
        }
    ),
    # precision, recall and F1 by threshold (a job trained on labels, or er report --truth)
    "threshold_curve": Obj(
        {
            "scale": (_STR,),
            "over": (_STR, _NULL),
            "pairs": (_INT,),
            "true_pairs": (_INT,),
            "threshold": (_NUM,),
            "at_threshold": _METRICS,
            "best": Obj({"threshold": (_NUM, _NULL), "probability": (_NUM, _NULL)}),
            "curve": Obj({k: Each((_NUM, _NULL)) for k in ("threshold", "precision", "recall", "f1")}),
        }
    ),
    "clusterer": (_OBJ, _NULL),
    "clusters": Obj({k: (_INT, _NULL) for k in ("count", "singletons", "largest", "records_in_multi_record_clusters", "pairs")}),
    "chains": Obj({"listed": Each((_OBJ,))}),
    "link": (_OBJ, _NULL),
    "diagnostics": (_OBJ, _NULL),
    "stages": Each((_OBJ,)),
    "versions": Obj({"components": Each((_OBJ, _NULL), "map")}),
    "warnings": (_LIST, _NULL),
    "seconds_total": (_NUM, _NULL),
    "peak_rss_mb": (_NUM, _NULL),
    "outputs": Each((_STR,)),
    "outputs_dir": (_STR, _NULL),
}


def _kind_of(value: Any) -> str:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return _BOOL
    if isinstance(value, int):
        return _INT
    if isinstance(value, float):
        return _NUM
    if isinstance(value, str):
        return _STR
    if isinstance(value, dict):
        return _OBJ
    return _LIST if isinstance(value, list) else type(value).__name__


_KIND_NAMES = {
    _STR: "a string",
    _INT: "a whole number",
    _NUM: "a number",
    _BOOL: "true or false",
    _NULL: "null",
    _OBJ: "an object",
    _LIST: "a list",
}


def _scalar_problem(value: Any, kind: str, shape: tuple[str, ...], path: str) -> str:
    ok = kind in shape or (kind == _INT and _NUM in shape)
    if ok and kind == _INT and abs(value) > MAX_REPORT_INT:
        return f"{path} is a number too large for er to have written"
    if ok and kind == _NUM and not math.isfinite(value):
        return f"{path} is not a finite number"
    return "" if ok else f"{path} is {_KIND_NAMES.get(kind, kind)}, not {' or '.join(_KIND_NAMES[k] for k in shape)}"


def _first_problem(items: Iterable[tuple[Any, Any, str, str]], shallow: Collection[str]) -> str:
    """The first problem among ``(value, shape, path, pattern)`` items ('' when none)."""
    for value, shape, path, pattern in items:
        why = _shape_problem(value, shape, path, shallow, pattern)
        if why:
            return why
    return ""


def _shape_problem(value: Any, shape: Any, path: str, shallow: Collection[str] = (), pattern: str = "") -> str:
    """What is wrong with ``value`` at ``path`` for ``shape`` ('' when nothing): never the value itself.
    ``pattern``: ``path`` with every list index and map key written ``[]``; a pattern in ``shallow`` is
    checked for its own kind only (an object, a list), not for what it holds."""
    pattern = pattern or path
    kind = _kind_of(value)
    if isinstance(shape, tuple):
        return _scalar_problem(value, kind, shape, path)
    if value is None and shape.nullable:
        return ""
    want = _OBJ if isinstance(shape, Obj) or shape.kind == "map" else _LIST
    if kind != want:
        return f"{path} is {_KIND_NAMES.get(kind, kind)}, not {_KIND_NAMES[want]}"
    if pattern in shallow:
        return ""
    if isinstance(shape, Obj):
        keyed = ((value[k], sub, f"{path}.{k}", f"{pattern}.{k}") for k, sub in shape.keys.items() if k in value)
        return _first_problem(keyed, shallow)
    items = (
        ((item, shape.item, f"{path}[{key!r}]", f"{pattern}[]") for key, item in value.items())
        if shape.kind == "map"
        else ((item, shape.item, f"{path}[{i}]", f"{pattern}[]") for i, item in enumerate(value))
    )
    return _first_problem(items, shallow)


def check_report(data: Any, path: str | Path, *, shallow: Collection[str] = ()) -> dict[str, Any]:
    """``data`` (report.json's parsed JSON) if it has the shape of a report er wrote (:data:`REPORT_SHAPE`),
    else an input error "PATH is not a report er wrote (why)" that never quotes the file. ``shallow``: the
    places (``scores``, ``review.above[]`` for the items of that list) checked for their own kind only
    (report.html draws a section whose content is malformed as a note)."""
    if not isinstance(data, dict):
        why = f"it holds {_KIND_NAMES.get(_kind_of(data), 'something else')}, not an object"
    else:
        why = next((w for w in (_shape_problem(data[k], s, k, shallow) for k, s in REPORT_SHAPE.items() if k in data) if w), "")
    if why:
        raise InputError(
            Problem(
                where="",
                message=f"{path} is not a report er wrote ({why})",
                fix="give the output folder of an er run, or run the job again to rewrite its outputs",
            )
        )
    return data


#: the largest file taken for a job file named by report.json (a job is a few kilobytes)
MAX_JOB_FILE_BYTES = 4 << 20


def is_job_file(path: Path) -> bool:
    """``path`` is a regular file of at most :data:`MAX_JOB_FILE_BYTES` holding UTF-8 YAML whose top level is
    a mapping with ``sources`` (what every er job has). Only then may a message quote its lines."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_JOB_FILE_BYTES:
            return False
        with path.open("rb") as fh:
            raw = fh.read(MAX_JOB_FILE_BYTES + 1)
        if len(raw) > MAX_JOB_FILE_BYTES or b"\0" in raw:
            return False
        data = yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, ValueError, TypeError):
        return False
    return isinstance(data, dict) and "sources" in data
