"""Why a pair scored what it scored: the waterfall of its terms.

One place turns a verifier's comparisons (:meth:`er_framework.components.Verifier.comparisons`)
of one pair into an :class:`Explanation`: ``Result.explain`` from Python, ``er explain`` on a
finished run and the borderline pairs of the report all read it.

For Fellegi-Sunter the terms are bits: the prior log2(lambda / (1 - lambda)) plus, per field,
log2(m / u) of the pair's comparison level (0 when a side is missing) make the match weight
w, and the score is the match probability 2**w / (1 + 2**w). For ``field_score`` the points of
the fields add up to the score; for set verifiers the shared and differing tokens give
Jaccard = shared / (shared + left only + right only).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Explainable, GroupedKeys, Keyed, Partitionable, WholeCorpus, Windowed, ability, has
from er_framework.config.resolve import Job
from er_framework.data import Batch, Pairs, Records
from er_framework.engine.engine import Engine
from er_framework.engine.model import Model
from er_framework.engine.reprs import TERMS_SHOWN, box, kv_table, rows_table, text_block, waterfall_html
from er_framework.engine.stages.exact import Exact, exact_duplicates, exact_groups, exact_keys
from er_framework.engine.stages.reading import normalize, read, read_database_source
from er_framework.errors import InputError, Problem
from er_framework.io.database import mask_url, source_text
from er_framework.io.fingerprint import changed_inputs, database_difference, database_fingerprint, fingerprint

__all__ = [
    "BORDERLINE",
    "Batches",
    "BlockerTerm",
    "Explanation",
    "FieldTerm",
    "KeyTerm",
    "among_candidates",
    "blocking_of_pair",
    "check_databases_unchanged",
    "check_files_unchanged",
    "check_inputs_unchanged",
    "database_sources",
    "input_fingerprints",
    "explain_run",
    "explanation",
    "find_record",
    "row_of_terms",
]

Int64Array = npt.NDArray[np.int64]

#: pairs listed on each side of the threshold by the review (report.json ``review``, ``er review``)
BORDERLINE = 10


@dataclass
class FieldTerm:
    """One field's part of a pair's score."""

    name: str
    left: str | None  # the values as compared (after normalize:)
    right: str | None
    level: str | None = None  # the comparison level's name (Fellegi-Sunter)
    similarity: float | None = None  # 0..100
    weight: float | None = None  # bits (Fellegi-Sunter) or points (field_score)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class KeyTerm:
    """One key (or sort pass) of a blocker, for both records of a pair: whether they share it."""

    key: str  # the key's label ("given_name+surname", "date_of_birth", "pass 1")
    left: str | None  # the record's values of the key's fields (None: missing, the record is not keyed)
    right: str | None
    shared: bool  # the records share the key (keyed blockers), or sort within one window (windowed)
    note: str = ""  # why sharing did not make a pair (a purged bucket), or how far apart they sort
    kind: str = "key"  # "key" (records sharing it are paired) or "sort" (records sorting near are paired)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class BlockerTerm:
    """What one blocker of the job did with a pair: paired it (``candidate``) or not, and by which keys."""

    blocker: str  # its place and type ("blockers[0] field_hash")
    candidate: bool
    keys: list[KeyTerm] = field(default_factory=list)
    how: str = ""  # how it was decided: "keys", "windows" or "candidates" (the blocker run again)

    def to_json(self) -> dict[str, Any]:
        return {"blocker": self.blocker, "candidate": self.candidate, "how": self.how, "keys": [k.to_json() for k in self.keys]}

    def lines(self) -> list[str]:
        """The blocker's lines of the printed explanation."""
        verdict = "paired them" if self.candidate else "did not pair them"
        out = [f"  {self.blocker}: {verdict}"]
        for k in self.keys:
            if k.kind == "sort":
                state = "in one window" if k.shared else "not in one window"
            else:
                state = "shared" if k.shared else "not shared"
            values = f"{_value(k.left)} vs {_value(k.right)}"
            out.append(f"    {k.key}: {state}  ({values})" + (f"  {k.note}" if k.note else ""))
        return out


def _value(v: str | None) -> str:
    return "(missing)" if v is None else repr(v)


@dataclass
class Explanation:
    """The terms of one pair's score; ``str()`` is the waterfall ``er explain`` prints."""

    left: tuple[str, str]  # (source, id)
    right: tuple[str, str]
    score: float
    threshold: float
    kind: str  # "weights" (bits), "points", "sets", "exact" (copies of one text) or "score" (no terms)
    verifier: str
    fields: list[FieldTerm] = field(default_factory=list)
    prior_weight: float | None = None
    match_weight: float | None = None
    #: bits the training labels add to every pair's weight (fellegi_sunter ``labels_fit: refine``); None: none
    labels_correction: float | None = None
    tokens: dict[str, int] = field(default_factory=dict)  # sets: shared, left_only, right_only
    #: whether the run's blockers made this pair a candidate (None: not checked, e.g. a pair of a run held
    #: in memory); a pair that is no candidate was never scored by the run, whatever its score here
    candidate: bool | None = None
    #: per blocker: did it pair the records, and which of its keys they share (when ``candidate`` was checked)
    blocking: list[BlockerTerm] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """The run kept the pair: a candidate (or exact copies) scoring at or above the threshold."""
        return bool(self.candidate is not False and self.score >= self.threshold)

    def total(self) -> float:
        """The terms summed: the match weight in bits, the points, or Jaccard from the token counts."""
        if self.kind == "weights":
            return float((self.prior_weight or 0.0) + (self.labels_correction or 0.0) + sum(f.weight or 0.0 for f in self.fields))
        if self.kind == "points":
            return float(sum(f.weight or 0.0 for f in self.fields))
        if self.kind == "sets":
            union = self.tokens["shared"] + self.tokens["left_only"] + self.tokens["right_only"]
            return self.tokens["shared"] / union if union else 0.0
        return self.score

    def to_json(self) -> dict[str, Any]:
        return {
            "left": {"source": self.left[0], "id": self.left[1]},
            "right": {"source": self.right[0], "id": self.right[1]},
            "score": self.score,
            "threshold": self.threshold,
            "verified": self.verified,
            "kind": self.kind,
            "verifier": self.verifier,
            "prior_weight": self.prior_weight,
            "match_weight": self.match_weight,
            "labels_correction": self.labels_correction,
            "fields": [f.to_json() for f in self.fields],
            "tokens": self.tokens,
            "candidate": self.candidate,
            "blocking": [b.to_json() for b in self.blocking],
        }

    def __repr__(self) -> str:
        """One line: the pair, its score against the threshold and the verdict (``str()`` is the waterfall)."""
        return (
            f"<Explanation: {self.left[0]} {self.left[1]!r} vs {self.right[0]} {self.right[1]!r}, {self.verifier} "
            f"score {self.score:.6g} ({self.kind}), threshold {self.threshold:g}, verified {self.verified}>"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the pair and the verdict, then for Fellegi-Sunter the report's waterfall (SVG), else
        the terms as a table (escaped; small: :mod:`er_framework.engine.reprs`)."""
        title = f"{self.left[0]} {self.left[1]} vs {self.right[0]} {self.right[1]} ({self.verifier})"
        verdict = kv_table([("score", f"{self.score:.6f}"), ("threshold", f"{self.threshold:g}"), ("verified", str(self.verified))])
        parts = [verdict]
        if self.candidate is False:
            parts.append(text_block("\n".join(self._blocking_lines())))
        if self.kind == "weights":
            parts.append(waterfall_html(self.fields, self.prior_weight or 0.0, self.match_weight, self.threshold))
        elif self.kind == "points":
            rows = [(f.name, f.left, f.right, f"{(f.weight or 0.0):+.2f}") for f in self.fields[:TERMS_SHOWN]]
            parts.append(rows_table(("field", "left", "right", "points"), rows + [("total", "", "", f"{self.total():+.2f}")]))
        elif self.kind == "sets":
            parts.append(kv_table([(k.replace("_", " "), f"{v:,}") for k, v in self.tokens.items()] + [("Jaccard", f"{self.total():.6f}")]))
        elif self.kind == "exact":
            parts.append("<p>exact copies: the same text after the exact-duplicate stage's normalization (score 1.0)</p>")
        return box(title, "".join(parts))

    def __str__(self) -> str:
        head = f"{self.left[0]} {self.left[1]}  vs  {self.right[0]} {self.right[1]}  ({self.verifier})"
        lines = [head, *self._blocking_lines()]
        width = max([len(f.name) for f in self.fields] + [12])
        vw = 28
        if self.kind == "weights":
            lam = 1.0 / (1.0 + 2.0 ** -(self.prior_weight or 0.0))
            lines.append(
                f"  {'prior':<{width}}  {'':<{vw}}  {'':<{vw}}  {'':<10} {self.prior_weight:+8.2f} bits   (prior P(match) {lam:.4g})"
            )
            for f in self.fields:
                lines.append(
                    f"  {f.name:<{width}}  {_cell(f.left, vw)}  {_cell(f.right, vw)}  {(f.level or ''):<10} {(f.weight or 0.0):+8.2f} bits"
                )
            if self.labels_correction is not None:
                correction = f"{self.labels_correction:+8.2f} bits   (labels' correction)"
                lines.append(f"  {'labels':<{width}}  {'':<{vw}}  {'':<{vw}}  {'':<10} {correction}")
            total = self.total()
            lines.append(f"  {'total':<{width}}  {'':<{vw}}  {'':<{vw}}  {'':<10} {total:+8.2f} bits  -> probability {_prob(total):.6f}")
        elif self.kind == "points":
            for f in self.fields:
                sim = "missing" if f.similarity is None or math.isnan(f.similarity) else f"{f.similarity:6.1f}"
                lines.append(
                    f"  {f.name:<{width}}  {_cell(f.left, vw)}  {_cell(f.right, vw)}  similarity {sim:>7}  {(f.weight or 0.0):+9.2f} points"
                )
            lines.append(f"  {'total':<{width}}  {'':<{vw}}  {'':<{vw}}  {'':<18}  {self.total():+9.2f} points")
        elif self.kind == "sets":
            t = self.tokens
            union = t["shared"] + t["left_only"] + t["right_only"]

            def share(x: int) -> str:
                return f"{x / union:.1%}" if union else "-"

            lines.append(f"  shingles shared     {t['shared']:>9,}  ({share(t['shared'])} of the union)")
            lines.append(f"  only on the left    {t['left_only']:>9,}  ({share(t['left_only'])})")
            lines.append(f"  only on the right   {t['right_only']:>9,}  ({share(t['right_only'])})")
            lines.append(f"  Jaccard = shared / union = {t['shared']:,} / {union:,} = {self.total():.6f}")
        elif self.kind == "exact":
            lines.append("  exact copies: the same text after the exact-duplicate stage's normalization (score 1.0)")
        lines += self._verdict_lines()
        return "\n".join(lines)

    def _blocking_lines(self) -> list[str]:
        """A pair no blocker produced: said first, with what each blocker did with it."""
        if self.candidate is not False:
            return []
        lines = ["  not a candidate: no blocker produced this pair, so the run never scored it (verified: False)"]
        for b in self.blocking:
            lines += b.lines()
        lines.append("  what the verifier would say of the pair, had a blocker proposed it:")
        return lines

    def _verdict_lines(self) -> list[str]:
        """The score against the threshold (never "at or above" for a pair the run did not score) and the verdict."""
        if self.candidate is False:
            side = "would be at or above" if self.score >= self.threshold else "would be below"
            line = f"  score {self.score:.6f}  {side} the threshold {self.threshold:g}, but the pair is not a candidate"
        else:
            side = "at or above" if self.verified else "below"
            line = f"  score {self.score:.6f}  {side} the threshold {self.threshold:g}"
        return [line, f"  verified: {self.verified}"]


def _prob(weight: float) -> float:
    return 1.0 / (1.0 + 2.0**-weight) if weight > -1000 else 0.0


def _cell(value: str | None, width: int) -> str:
    text = "(missing)" if value is None else " ".join(str(value).split())
    return (text[: width - 1] + "…") if len(text) > width else f"{text:<{width}}"


def row_of_terms(columns: dict[str, npt.NDArray[Any]], i: int) -> dict[str, Any]:
    """Row ``i`` of a verifier's comparisons as plain Python values (JSON-ready; NaN -> None)."""
    out: dict[str, Any] = {}
    for name, col in columns.items():
        v = col[i]
        if isinstance(v, (np.floating, float)):
            out[name] = None if math.isnan(float(v)) else float(v)
        elif isinstance(v, (np.integer, int)):
            out[name] = int(v)
        else:
            out[name] = v
    return out


def explanation(
    records: Records,
    left: int,
    right: int,
    terms: dict[str, Any],
    described: dict[str, Any],
    threshold: float,
    *,
    exact_copies: bool = False,
) -> Explanation:
    """The :class:`Explanation` of the pair ``(left, right)`` of ``records`` (the values as compared) from one
    row of its comparisons (``terms``, :func:`row_of_terms`) and the verifier's report section (``described``)."""
    names, ids, src = records.source_names, records.ids, records.source
    lk = (names[int(src[left])], str(ids[left]))
    rk = (names[int(src[right])], str(ids[right]))
    verifier = str(described.get("name") or described.get("type") or "verifier")
    if exact_copies:
        return Explanation(lk, rk, 1.0, threshold, "exact", verifier)
    score = float(terms.get("score", float("nan")))
    per_field = described.get("per_field") or {}
    fields: list[FieldTerm] = []
    for label in _labels(terms):
        info = per_field.get(label, {})
        cols = info.get("columns") or [label]
        lv = _joined(records, cols, left), _joined(records, cols, right)
        term = FieldTerm(label, lv[0], lv[1])
        if f"level_{label}" in terms:
            k = int(terms[f"level_{label}"])
            levels = info.get("levels") or []
            term.level = "missing" if k < 0 else (levels[k] if k < len(levels) else str(k))
        if f"similarity_{label}" in terms:
            term.similarity = terms[f"similarity_{label}"]
        if f"weight_{label}" in terms:
            term.weight = float(terms[f"weight_{label}"] or 0.0)
        elif f"points_{label}" in terms:
            term.weight = float(terms[f"points_{label}"] or 0.0)
        fields.append(term)
    if "prior_weight" in terms:
        correction = float(terms["labels_correction"]) if "labels_correction" in terms else None
        return Explanation(
            lk,
            rk,
            score,
            threshold,
            "weights",
            verifier,
            fields,
            prior_weight=float(terms["prior_weight"]) - (correction or 0.0),  # the comparisons' prior holds the correction
            match_weight=float(terms["match_weight"]),
            labels_correction=correction,
        )
    if any(f"points_{f.name}" in terms for f in fields):
        return Explanation(lk, rk, score, threshold, "points", verifier, fields)
    if "shared" in terms:
        return Explanation(
            lk, rk, score, threshold, "sets", verifier, tokens={k: int(terms[k]) for k in ("shared", "left_only", "right_only")}
        )
    return Explanation(lk, rk, score, threshold, "score", verifier)


def _labels(terms: dict[str, Any]) -> list[str]:
    """The field labels of a comparisons row, in column order."""
    out: list[str] = []
    for name in terms:
        for prefix in ("level_", "similarity_", "weight_", "points_"):
            if name.startswith(prefix) and name != "prior_weight" and name[len(prefix) :] not in out:
                out.append(name[len(prefix) :])
    return out


def _joined(records: Records, columns: list[str], row: int) -> str | None:
    """The values of ``columns`` of one record joined by a space (missing parts skipped); None when all missing."""
    parts = [records.fields[c][row] for c in columns if c in records.fields]
    present = [str(p) for p in parts if p is not None and str(p) != ""]
    return " ".join(present) if present else None


# ------------------------------------------------------------------ was the pair a candidate?


def _key_values(records: Records, fields: list[str], row: int) -> str | None:
    """A record's values of a key's fields joined by `` | `` (None when one is missing: the record is not keyed)."""
    vals = [records.fields[f][row] if f in records.fields else None for f in fields]
    if not fields or any(v is None or str(v).strip() == "" for v in vals):
        return None
    return " | ".join(str(v) for v in vals)


def _per_key(report: dict[str, Any], g: int) -> tuple[str, list[str]]:
    """The label and fields of a blocker's key number ``g`` from its report section (``per_key``)."""
    per_key = report.get("per_key") or []
    if g < len(per_key) and isinstance(per_key[g], dict):
        info = per_key[g]
        return str(info.get("key") or f"key {g + 1}"), [str(f) for f in info.get("fields") or []]
    return ("keys" if g == 0 and not per_key else f"key {g + 1}"), []


def _keyed_terms(keyed: Keyed, blocker: Any, pair: Batches, report: dict[str, Any]) -> tuple[bool, list[KeyTerm]]:
    """A keyed blocker: the records are candidates when they share a key whose bucket is within the cap.

    The two records' keys come from a batch of the two alone when their keys depend on them alone (the
    contract of :class:`~er_framework.capabilities.Keyed`, as ``er index`` looks items up); the buckets'
    sizes, needed only for a shared key under a cap, from every active record."""
    batch, a, b = pair.small(blocker)
    rows, keys = keyed.lookup_keys(batch)
    rows = np.asarray(rows, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.uint64)
    grouped = ability(blocker, GroupedKeys)
    groups = np.asarray(grouped.lookup_groups(batch), dtype=np.int64) if grouped is not None else np.zeros(len(rows), dtype=np.int64)
    cap = keyed.lookup_cap()
    n_groups = max(len(report.get("per_key") or []), int(groups.max()) + 1 if len(groups) else 1)
    terms: list[KeyTerm] = []
    candidate = False
    for g in range(n_groups):
        label, fields = _per_key(report, g)
        ka = set(keys[(rows == a) & (groups == g)].tolist())
        kb = set(keys[(rows == b) & (groups == g)].tolist())
        shared = ka & kb
        # no fields named (e.g. LSH bands of signatures): how many keys each record has
        left = _key_values(batch.records, fields, a) if fields else (f"{len(ka)} keys" if ka else None)
        right = _key_values(batch.records, fields, b) if fields else (f"{len(kb)} keys" if kb else None)
        note = ""
        pairs_them = False
        for k in sorted(shared):
            size = pair.bucket_size(keyed, blocker, k) if cap is not None else 0
            if cap is not None and size > cap:
                note = f"but its bucket of {size:,} records was purged (over the cap {cap:,}: max_block_size)"
            else:
                pairs_them = True
                break
        if pairs_them:
            note = ""
        elif not shared and (left is None or right is None):
            note = "a key field is missing: that record is not keyed"
        candidate |= pairs_them
        terms.append(KeyTerm(label, left, right, bool(shared), note))
    return candidate, terms


def _sort_value(records: Records, fields: list[str], row: int, sort_key: Any) -> str:
    """A record's values of a sort pass's fields (the sort key itself, control characters shown as `` | ``,
    when the report names no fields)."""
    shown = _key_values(records, fields, row) if fields else None
    if shown is not None:
        return shown
    parts = [p for p in "".join(c if c.isprintable() else "\x00" for c in str(sort_key)).split("\x00") if p]
    return " | ".join(parts)


def _windowed_terms(windowed: Windowed, batch: Batch, a: int, b: int, report: dict[str, Any]) -> tuple[bool, list[KeyTerm]]:
    """A windowed blocker: candidates when, in some pass, they sort fewer than ``window_size()`` rows apart."""
    window = int(windowed.window_size())
    candidate = False
    terms: list[KeyTerm] = []
    for p, (rows, sort_keys) in enumerate(windowed.window_keys(batch)):
        rows = np.asarray(rows, dtype=np.int64)
        by_row = np.argsort(rows, kind="stable")
        order = by_row[np.argsort(sort_keys[by_row], kind="stable")]  # by (key, row), as the contract sorts
        position = np.empty(len(rows), dtype=np.int64)
        position[order] = np.arange(len(rows), dtype=np.int64)
        at_a, at_b = np.flatnonzero(rows == a), np.flatnonzero(rows == b)
        label, fields = _per_key(report, p)
        records = batch.records
        left = _sort_value(records, fields, a, sort_keys[at_a[0]]) if len(at_a) else None
        right = _sort_value(records, fields, b, sort_keys[at_b[0]]) if len(at_b) else None
        if len(at_a) and len(at_b):
            apart = abs(int(position[at_a[0]]) - int(position[at_b[0]]))
            near = apart < window
            note = f"{apart:,} records apart in the sort order (window {window})"
        else:
            near, note = False, "a key field is missing: that record is not sorted in this pass"
        candidate |= near
        terms.append(KeyTerm(label, left, right, near, note, kind="sort"))
    return candidate, terms


def _representative(exact: Exact, row: int) -> int:
    """The record a collapsed copy was collapsed onto (the copies are linked as a star to it), else ``row``."""
    hit = np.flatnonzero(exact.pairs.right == row)
    return int(exact.pairs.left[hit[0]]) if len(hit) else row


def among_candidates(candidates: Pairs, exact: Exact | None, a: int, b: int) -> bool:
    """Whether a run's ``candidates`` (global indices, normalized) hold the pair of records ``a`` and ``b``:
    of their representatives, when the exact-duplicate stage collapsed copies (``exact``)."""
    if exact is not None and exact.stats.get("records_collapsed", 0):
        a, b = _representative(exact, a), _representative(exact, b)
    lo, hi = min(a, b), max(a, b)
    return bool(np.any((candidates.left == lo) & (candidates.right == hi)))


class Batches:
    """The batches a pair's blocking is decided on, each made when first needed: every active record (the
    run's blocking batch, with only what a blocker reads: a sort key needs no signatures of every record)
    and the two records alone (for keys that depend on the record alone)."""

    def __init__(self, engine: Engine, records: Records, active: Int64Array, a: int, b: int) -> None:
        self.engine = engine
        #: exact copies were collapsed: the active records are fewer than the records
        self.collapsed = len(active) != len(records)
        self.sub = records.take(active) if self.collapsed else records
        self.active = active
        #: the two records' rows among the active ones
        self.a, self.b = int(np.searchsorted(active, a)), int(np.searchsorted(active, b))
        self._full: dict[tuple[bool, bool], Batch] = {}
        self._small: dict[tuple[bool, bool], Batch] = {}
        self._keys: dict[int, npt.NDArray[np.uint64]] = {}
        sh = engine.shingler
        #: a record's tokens depend on that record alone (else its keys need the whole corpus)
        self.alone = sh is None or not has(sh, WholeCorpus) or has(sh, Partitionable)

    @staticmethod
    def _needs(blocker: Any) -> tuple[bool, bool]:
        return "tokens" in blocker.needs, "signatures" in blocker.needs or "tokens" in blocker.needs

    def full(self, blocker: Any) -> tuple[Batch, int, int]:
        """Every active record, with what ``blocker`` reads; the pair's rows in it."""
        need = self._needs(blocker)
        if need not in self._full:
            batch = self.engine.batch(self.sub, tokens=need[0], signatures=need[1])
            batch.active = self.active if self.collapsed else None
            self._full[need] = batch
        return self._full[need], self.a, self.b

    def small(self, blocker: Any) -> tuple[Batch, int, int]:
        """The two records alone (rows 0 and 1) when their keys depend on them alone, else :meth:`full`."""
        if not self.alone:
            return self.full(blocker)
        need = self._needs(blocker)
        if need not in self._small:
            two = self.sub.take(np.array([self.a, self.b], dtype=np.int64))
            self._small[need] = self.engine.batch(two, tokens=need[0], signatures=need[1])
        return self._small[need], 0, 1

    def bucket_size(self, keyed: Keyed, blocker: Any, key: int) -> int:
        """How many active records hold ``key`` of ``blocker`` (every record's keys, computed once)."""
        if id(blocker) not in self._keys:
            batch, _a, _b = self.full(blocker)
            self._keys[id(blocker)] = np.asarray(keyed.lookup_keys(batch)[1], dtype=np.uint64)
        return int(np.count_nonzero(self._keys[id(blocker)] == np.uint64(key)))


def blocking_of_pair(engine: Engine, records: Records, a: int, b: int, reports: list[dict[str, Any]]) -> list[BlockerTerm]:
    """What each blocker of the job does with the records ``a`` and ``b`` of ``records`` (all the job's records,
    normalized): paired them or not, and per key (or sort pass) whether they share it.

    As the run blocks: exact copies collapsed onto their representative first (the dedup modes), the
    blockers given the active records. A :class:`~er_framework.capabilities.Keyed` blocker is asked for
    the two records' keys (candidates share a key whose bucket is within :meth:`~Keyed.lookup_cap`: the
    bucket's size from every record's keys), a :class:`~er_framework.capabilities.Windowed` one for every
    record's sort keys (candidates sort within one window), any other for its candidates of every record.
    ``reports``: the run's blocker sections (their ``per_key`` labels and fields).
    """
    exact = exact_duplicates(engine.job, records)
    group_of, starts, _sizes, members = exact_groups(exact, len(records))
    pair = Batches(engine, records, exact.active, int(members[starts[group_of[a]]]), int(members[starts[group_of[b]]]))
    same_source = int(records.source[a]) == int(records.source[b])
    out: list[BlockerTerm] = []
    for i, blocker in enumerate(engine.blockers):
        label = f"blockers[{i}] {blocker.name}"
        report = reports[i] if i < len(reports) and isinstance(reports[i], dict) else {}
        keyed = ability(blocker, Keyed)
        windowed = ability(blocker, Windowed)
        if keyed is not None:
            candidate, terms = _keyed_terms(keyed, blocker, pair, report)
            how = "keys"
        elif windowed is not None:
            candidate, terms = _windowed_terms(windowed, *pair.full(blocker), report)
            how = "windows"
        else:
            batch, ra, rb = pair.full(blocker)
            got = engine.checked_candidates(blocker, blocker.candidates(batch), batch)
            lo, hi = min(ra, rb), max(ra, rb)
            candidate = bool(np.any((np.asarray(got.left) == lo) & (np.asarray(got.right) == hi)))
            terms, how = [], "candidates"
        if engine.link and same_source:
            candidate = False  # link mode pairs records of different sources only
            how += "; link mode: both records are of one source"
        out.append(BlockerTerm(label, bool(candidate), terms, how))
    return out


# ------------------------------------------------------------------ a finished run's pair


def find_record(records: Records, record_id: str, source: str | None, where: str) -> int:
    """The index of the record ``record_id`` (of ``source`` when given); an input error naming what is
    missing or ambiguous."""
    names = records.source_names
    if source is not None and source not in names:
        raise InputError(Problem(where=where, message=f"no source {source!r}", fix=f"sources: {', '.join(names)}"))
    hits = [i for i, x in enumerate(records.ids) if x == str(record_id) and (source is None or names[int(records.source[i])] == source)]
    if not hits:
        raise InputError(
            Problem(
                where=where,
                message=f"no record {record_id!r}" + (f" in source {source!r}" if source else ""),
                fix="give the id of a record of the job (as in pairs.csv)",
            )
        )
    if len(hits) > 1:
        raise InputError(
            Problem(
                where=where,
                message=f"the id {record_id!r} is in several sources ({', '.join(sorted({names[int(records.source[i])] for i in hits}))})",
                fix="name the source of each side (--left-source / --right-source)",
            )
        )
    return hits[0]


def explain_run(
    job: Job,
    report: dict[str, Any],
    left: tuple[str | None, str],
    right: tuple[str | None, str],
    model: Model | None = None,
    *,
    allow_changed: bool = False,
) -> tuple[Explanation, list[str]]:
    """The explanation of one pair of a finished run (``er explain``): the records read and normalized
    again through the job, the run's model applied (its model.json: the verifier's fitted state and the
    pruned shingles; no refit), the pair compared. Returns it with notes on what may differ from the run
    (``(source, id)`` per side; a source of None: any). The database sources read are compared with the run's
    digests (:func:`check_databases_unchanged`: refused when one changed, unless ``allow_changed``); the caller
    checks the files before (:func:`check_files_unchanged`)."""
    records, stats = read(job)
    notes = check_databases_unchanged(report, job, stats, allow_changed)
    records, _norm = normalize(job, records, job.context.workers)
    a = find_record(records, left[1], left[0], "--left")
    b = find_record(records, right[1], right[0], "--right")
    engine = Engine(job, model)
    described = dict(report.get("verifier") or {})
    described.setdefault("name", engine.verifier.name)
    threshold = float((report.get("threshold") or {}).get("value", engine.threshold))
    if engine.collapse:
        keys, nonempty = exact_keys(records.take(np.array([a, b], dtype=np.int64)), job.exact.normalize)
        if nonempty.all() and keys[0] == keys[1]:
            return explanation(records, a, b, {}, described, threshold, exact_copies=True), notes
    if not has(engine.verifier, Explainable):
        raise InputError(
            Problem(
                where=str(job.config_path),
                path="verifier",
                message=f"verifier {engine.verifier.name!r} cannot break its scores into terms",
                fix="er plugins lists the verifiers; jaccard, field_score and fellegi_sunter can",
            )
        )
    if engine.learns() and engine.verifier_state() is None:
        raise InputError(
            Problem(
                where=str(report.get("outputs_dir", job.config_path)),
                message=f"verifier {engine.verifier.name!r} explains a score with the run's fitted "
                "model, and the run folder holds no model.json (written by an older er)",
                fix="run the job again (er run writes model.json), then er explain",
            )
        )
    if job.spec.prune_shingles is not None and engine.model.pruned is None:
        notes.append(
            "the job prunes shingles by corpus frequency (prune_shingles) and the run folder holds no "
            "model.json with the dropped shingles, so these counts include them and may differ from the run's"
        )
    blocking = blocking_of_pair(engine, records, a, b, [r for r in report.get("blockers") or [] if isinstance(r, dict)])
    pair = records.take(np.array([a, b], dtype=np.int64))
    batch = engine.batch(pair, tokens="tokens" in engine.verifier.needs, signatures=False)
    terms = engine.comparisons(batch, Pairs(np.array([0]), np.array([1])))
    found = explanation(pair, 0, 1, row_of_terms(terms, 0), described, threshold)
    found.blocking = blocking
    found.candidate = any(t.candidate for t in blocking)
    return found, notes


def database_sources(job: Job) -> list[int]:
    """The indices of the sources of ``job`` read from a database (``database:``; not those given in memory)."""
    return [i for i, src in enumerate(job.spec.sources) if src.database is not None and src.name not in job.frames]


def input_fingerprints(job: Job, source_stats: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """report.json's ``inputs``, in the sources' order: the fingerprint (:func:`er_framework.io.fingerprint.fingerprint`)
    of every file or page folder the job's sources read, each with its source's name, and of every database
    source the digest of its rows as read (:func:`~er_framework.io.fingerprint.database_fingerprint`, from
    ``source_stats``, the reading statistics of the run: a database source without them is left out). Sources
    given in memory have none."""
    stats = source_stats or {}
    databases = set(database_sources(job))
    out: list[dict[str, Any]] = []
    for i, src in enumerate(job.spec.sources):
        if i in databases:
            st = stats.get(src.name)
            if isinstance(st, Mapping) and st.get("sha256"):
                out.append(database_fingerprint(src.name, st, table=src.table, query=src.query))
            continue
        out += [{"source": src.name, **fingerprint(path)} for path in job.source_inputs(i)]
    return out


#: what to do when an input changed since the run (a file's and a database source's words)
_FIX = "run the job again (er run JOB --out OUT) to work on the current data, {restore}, or pass --allow-changed to read it as it is now"


def _refused_or_noted(changed: list[tuple[str, str, str]], allow_changed: bool) -> list[str]:
    """``changed``: ``(where, what changed, what to restore)``; notes when ``allow_changed``, else :class:`InputError`."""
    if not changed:
        return []
    if allow_changed:
        return [f"{where} changed since the run ({what}): --allow-changed reads it as it is now" for where, what, _ in changed]
    raise InputError(
        [
            Problem(
                where=where,
                message=f"the input changed since the run: {what}; the run's answer and what would be read now differ",
                fix=_FIX.format(restore=restore),
            )
            for where, what, restore in changed
        ]
    )


def _file_changes(report: Mapping[str, Any], job: Job) -> list[tuple[str, str, str]]:
    recorded = report.get("inputs")
    assert isinstance(recorded, list)
    paths = [path for i in range(len(job.spec.sources)) for path in job.source_inputs(i)]
    return [(path, what, "restore the file the run read") for path, what in changed_inputs(recorded, paths)]


def _database_changes(report: Mapping[str, Any], job: Job, read_stats: Mapping[str, Any]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The changed database sources of ``job`` (``(where, what, restore)``) and notes, ``read_stats`` the reading
    statistics of the sources as read now."""
    recorded = [r for r in report.get("inputs") or [] if isinstance(r, Mapping)]
    run_stats = report.get("sources") if isinstance(report.get("sources"), Mapping) else {}
    changed: list[tuple[str, str, str]] = []
    notes: list[str] = []
    for i in database_sources(job):
        src = job.spec.sources[i]
        assert src.database is not None
        where = f"source {src.name!r} ({mask_url(src.database)}, {source_text(src.query, src.table)})"
        now_stats = read_stats.get(src.name)
        if not isinstance(now_stats, Mapping):
            continue  # not read now: nothing of it is used
        now = database_fingerprint(src.name, now_stats, table=src.table, query=src.query)
        then = next((r for r in recorded if r.get("source") == src.name and r.get("kind") == "database"), None)
        if then is None:
            was = (run_stats or {}).get(src.name)
            if any(r.get("source") == src.name for r in recorded):
                what = "the run read it from files, the job now reads it from a database"
            elif isinstance(was, Mapping) and "database" in was:
                notes.append(f"report.json holds no digest of {where} (a run of an older version of er): it is read as it is now")
                continue
            else:
                what = "the run did not read it (the job's sources changed since the run)"
        else:
            what_or_none = database_difference(then, now)
            if what_or_none is None:
                continue
            what = what_or_none
        changed.append((where, what, "restore the rows the run read"))
    return changed, notes


def check_files_unchanged(report: Mapping[str, Any], job: Job, allow_changed: bool = False) -> list[str]:
    """The files and page folders of :func:`check_inputs_unchanged` (before the sources are read again);
    the database sources are compared once read (:func:`check_databases_unchanged`)."""
    if not isinstance(report.get("inputs"), list):
        return ["report.json records no fingerprints of the inputs (a run of an older version): the sources are read as they are now"]
    return _refused_or_noted(_file_changes(report, job), allow_changed)


def check_databases_unchanged(report: Mapping[str, Any], job: Job, read_stats: Mapping[str, Any], allow_changed: bool = False) -> list[str]:
    """The database sources of :func:`check_inputs_unchanged`, ``read_stats`` the reading statistics of the sources
    as read again now (:func:`~er_framework.engine.stages.reading.read`'s second value): the digest of the rows
    read now against the run's (nothing when report.json records no fingerprints at all:
    :func:`check_files_unchanged` notes it)."""
    if not isinstance(report.get("inputs"), list):
        return []
    changed, notes = _database_changes(report, job, read_stats)
    return notes + _refused_or_noted(changed, allow_changed)


def check_inputs_unchanged(
    report: Mapping[str, Any], job: Job, allow_changed: bool = False, read_stats: Mapping[str, Any] | None = None
) -> list[str]:
    """Refuse (:class:`InputError`, exit 2) to read a finished run's sources again when one changed since the
    run: report.json's ``inputs`` fingerprints against the job's files now, and the digest of each database
    source's rows (:class:`~er_framework.io.fingerprint.RowsDigest`) against the digest of the rows read now
    (``er explain``, ``er review``). ``read_stats``: the reading statistics of the sources as the caller read them
    (:func:`~er_framework.engine.stages.reading.read`); without them the database sources are read here. Returns
    notes for the caller to print: the changed inputs when ``allow_changed`` (read as they are now), or that a
    run of an older version recorded no fingerprints (nothing to compare). ``er explain`` and ``er review``
    check the files before reading (:func:`check_files_unchanged`) and the databases with what they read
    (:func:`check_databases_unchanged`), reading each source once."""
    if not isinstance(report.get("inputs"), list):
        return check_files_unchanged(report, job, allow_changed)
    changed = _file_changes(report, job)
    notes: list[str] = []
    if database_sources(job):
        if read_stats is None:
            read_stats = {job.spec.sources[i].name: read_database_source(job, i)[1] for i in database_sources(job)}
        found, notes = _database_changes(report, job, read_stats)
        changed += found
    return notes + _refused_or_noted(changed, allow_changed)
