"""The plausibility check of a finished run: what in its report says the answer is probably wrong.

:func:`warnings_of` reads the finished ``report.json`` dict (:func:`er_framework.engine.report.build_report`)
and returns one warning per implausible finding, each ``{"code", "message", "fix"}``: a run whose
verifier accepted every candidate, whose clusters merged most records into one, or whose fitted
Fellegi-Sunter model sits at a boundary says so in the summary, in report.json (``warnings``) and at the
top of report.html, instead of exiting 0 with "clusters 1 (largest 10000)" and nothing else.

Besides the answer's plausibility, the run's own losses are warnings (issue 31: nothing wrong passes
silently): pairs a cap dropped (oversized LSH / grid buckets, purged blocks of ``max_block_size``:
one :func:`dropped_pairs_warning` for every cap), records that ``prune_shingles:`` left without a shingle,
and a verifier that kept no pair although near-identical candidates were among those it rejected
(``scores.near_identical_rejected``, measured by the report builder).

The checks read only the report (no records, no pairs), so every executor gets the same warnings, and a
report of an older run can be checked again. The thresholds are the module constants below, each with
the reason for its value. The verifier's own warnings (a ``warnings`` list in its report section) are
passed on after the checks' own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "EVERY_CANDIDATE_MIN",
    "EVERY_CANDIDATE_SHARE",
    "EXPECTED_PER_RECORD_DEDUP",
    "EXPECTED_PER_RECORD_LINK",
    "EXPECTED_SHARE_IN_CLUSTERS",
    "EXPECTED_SHARE_OF_KEPT_MIN",
    "FEW_LABELS",
    "GIANT_CLUSTER_MIN",
    "GIANT_CLUSTER_SHARE",
    "LAMBDA_HIGH",
    "LAMBDA_LOW",
    "SILENT_FIELD_BITS",
    "candidate_lambda",
    "capped_pairs",
    "dropped_pairs_warning",
    "warning",
    "warnings_of",
]

#: a cluster holding more than this share of the records is a giant cluster: entity resolution finds
#: entities with a few records each (Febrl3's largest holds 6 of 5,000), and a cluster of most records
#: is what a verifier accepting nearly every pair, chained through the clusterer, produces
GIANT_CLUSTER_SHARE = 0.5
#: ... and more than this many records: a small job may rightly hold one entity with most of its records
GIANT_CLUSTER_MIN = 100
#: verified pairs at or above this share of the candidates: the verifier accepts nearly everything the
#: blockers propose (blockers are built to propose many non-matches: on Febrl3 18% of the candidates match)
EVERY_CANDIDATE_SHARE = 0.95
#: ... with more than this many candidates (a handful of candidates may all be matches)
EVERY_CANDIDATE_MIN = 1000
#: a fitted lambda (P(match) among the candidates) below this: EM put every candidate into the
#: non-match class, so no weight means anything (the match class holds nothing to estimate m from)
LAMBDA_LOW = 1e-6
#: ... above this: every candidate into the match class (``fix_u: true`` on blocked candidates drives it
#: to 1: the random pairs' u makes every blocked pair look like a match)
LAMBDA_HIGH = 0.99
#: dedup: more expected matching pairs than this many per record is implausible. An entity of k records
#: holds k (k - 1) / 2 pairs, (k - 1) / 2 per record: 2 per record needs every record in an entity of 5 on
#: average, and a record matching more than a few others is rare in deduplication (Febrl3, built with up to
#: 5 copies of each original, expects 1.3 per record; the measured broken run 3,014 among 10,000 records
#: was caught by its silent fields, not by this)
EXPECTED_PER_RECORD_DEDUP = 2.0
#: link: more expected matching pairs than this many per record of the smaller source (each record of a
#: source matches at most one or two of the other, usually); with three or more sources, per record of the
#: smaller source of each pair of sources, summed over the pairs
EXPECTED_PER_RECORD_LINK = 2.0
#: ... unless the clusters hold at least this share of the expected pairs: then the entities are large (an
#: inventor with 70 patents is 2,415 pairs; 20,000 generated mentions hold 118,419 true pairs) and the
#: run's own answer agrees with its model
EXPECTED_SHARE_IN_CLUSTERS = 0.5
#: expected matches below this share of the pairs kept: the model says the pairs it keeps are mostly
#: non-matches (a threshold far below the probabilities it gives, or scores inconsistent with the fit)
EXPECTED_SHARE_OF_KEPT_MIN = 0.01
#: a compared field whose every level weighs less than this in bits (either sign) says nothing about a
#: match: 0.1 bits is a likelihood ratio of 1.07 (a field worth keeping weighs several bits at its top level)
SILENT_FIELD_BITS = 0.1
#: training from fewer labelled matches or non-matches than this: a Fellegi-Sunter model estimates m and u
#: per field and level (Febrl's 10 fields have 27 levels), so a handful of pairs leaves most levels to
#: smoothing: 1 match and 1 non-match on Febrl3 with ``labels_fit: labels`` gives 50 pairs where the
#: unlabelled fit gives 6,527
FEW_LABELS = 10


def warning(code: str, message: str, fix: str) -> dict[str, str]:
    """One warning as the report holds it."""
    return {"code": code, "message": message, "fix": fix}


def warnings_of(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """The warnings of a finished run's report: the checks' own, then the verifier's (its ``warnings``)."""
    out: list[dict[str, str]] = []
    out += _cap_warnings(report)
    out += _pruning_warnings(report)
    out += _nothing_verified_warnings(report)
    out += _cluster_warnings(report)
    out += _acceptance_warnings(report)
    out += _training_warnings(report)
    verifier = report.get("verifier")
    if isinstance(verifier, Mapping):
        out += _model_warnings(report, verifier)
        out += _own_warnings(verifier)
    return out


def _training_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """A verifier trained from labels that link nothing, or from too few labels of a kind to trust."""
    training = report.get("training")
    if not isinstance(training, Mapping):
        return []
    matches, non_matches = _number(training.get("matches")), _number(training.get("non_matches"))
    if matches is None or non_matches is None:
        return []
    linked = _number(report.get("pairs_written"))
    linked = _number(report.get("verified_pairs")) if linked is None else linked
    labels = f"{matches:,.0f} labelled matches and {non_matches:,.0f} labelled non-matches"
    fix = (
        f"label at least {FEW_LABELS} pairs of each kind (er review OUT proposes 20 pairs a round, --count N more; label them, "
        "run again, review again), and compare with a run without training: (how many pairs it links)"
    )
    if linked == 0:
        return [warning("training_no_links", f"the verifier trained from {labels} links no pair", fix)]
    if min(matches, non_matches) < FEW_LABELS:
        return [
            warning(
                "few_labels",
                f"the verifier was trained from {labels} (fewer than {FEW_LABELS} of a kind): its weights rest on a "
                "handful of pairs" + ("" if linked is None else f"; it links {linked:,.0f} pairs"),
                fix,
            )
        ]
    return []


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or None (absent, null, not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


def _records_total(report: Mapping[str, Any]) -> int:
    records = report.get("records")
    return int(records.get("total") or 0) if isinstance(records, Mapping) else 0


def _cluster_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    clusters = report.get("clusters")
    n = _records_total(report)
    if not isinstance(clusters, Mapping) or n <= 0:
        return []
    largest = int(clusters.get("largest") or 0)
    if largest > GIANT_CLUSTER_SHARE * n and largest > GIANT_CLUSTER_MIN:
        count = int(clusters.get("count") or 0)
        return [
            warning(
                "giant_cluster",
                f"one cluster holds {largest:,} of the {n:,} records ({largest / n:.0%}; {count:,} clusters in all): "
                "entities rarely have that many records, the verifier accepted pairs that chain most records together",
                "check the verifier first (the other warnings, and report.html's score histogram and borderline pairs): "
                "raise its threshold or fix its model; a clusterer that cuts weak links (louvain, or connected_components "
                "with split: {bridge_max_score: ...}) only hides the cause",
            )
        ]
    return []


def _acceptance_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    candidates = int(_number(report.get("candidate_pairs")) or 0)
    verified = int(_number(report.get("verified_pairs")) or 0)
    if candidates > EVERY_CANDIDATE_MIN and verified >= EVERY_CANDIDATE_SHARE * candidates:
        return [
            warning(
                "every_candidate_matches",
                f"{verified:,} of the {candidates:,} candidate pairs ({verified / candidates:.1%}) are verified: the "
                "verifier accepts nearly every pair the blockers propose, and blockers propose mostly non-matches",
                "raise the verifier's threshold, or check its model (report.json verifier: lambda and the per-field "
                "weights); with fellegi_sunter, fix_u: true on blocked candidates drives lambda to 1",
            )
        ]
    return []


def _model_warnings(report: Mapping[str, Any], verifier: Mapping[str, Any]) -> list[dict[str, str]]:
    """The fitted model's checks (Fellegi-Sunter's report keys: lambda, expected_matches, per_field, converged)."""
    out: list[dict[str, str]] = []
    name = str(verifier.get("type") or verifier.get("name") or "the verifier")
    lam = candidate_lambda(verifier)
    if lam is not None and (lam < LAMBDA_LOW or lam > LAMBDA_HIGH):
        side = "match" if lam > LAMBDA_HIGH else "non-match"
        out.append(
            warning(
                "lambda_at_boundary",
                f"{name} fitted lambda = {lam:.6g} among the candidates (their share of matches): the model put "
                f"(nearly) every candidate into the {side} class, so its weights and scores mean nothing",
                (
                    "remove fix_u: true (u from random pairs makes every blocked pair look like a match), or give "
                    "prior: (the expected share of matches), or train from labelled pairs (er review, training:)"
                )
                if lam > LAMBDA_HIGH
                else (
                    "check that the blockers propose matches at all (pairs.csv, er explain) and that the fields differ "
                    "between matches and non-matches; give prior:, or train from labelled pairs (er review, training:)"
                ),
            )
        )
    out += _expected_warnings(report, name, _number(verifier.get("expected_matches")), verifier)
    per_field = verifier.get("per_field")
    if isinstance(per_field, Mapping):
        for label, info in per_field.items():
            weights = [w for w in (_number(x) for x in (info or {}).get("weight_log2") or []) if w is not None]
            if weights and max(abs(w) for w in weights) < SILENT_FIELD_BITS:
                levels = ", ".join(f"{w:+.2f}" for w in weights)
                out.append(
                    warning(
                        "field_says_nothing",
                        f"{name} field {label!r} weighs ~0 bits at every level ({levels}): it says nothing about a match",
                        "check the field's values after normalize: (report.json normalize: missing or all alike?) and its "
                        "comparison and levels; a field equal on nearly every candidate (a blocking key) or missing on "
                        "most records cannot tell matches apart: drop it from fields: or compare it differently",
                    )
                )
    out += _session_warnings(name, verifier)
    if verifier.get("converged") is False:
        iterations = verifier.get("iterations")
        out.append(
            warning(
                "em_not_converged",
                f"{name}'s EM stopped after {iterations} iterations without converging: the fitted model is not a "
                "maximum of the likelihood",
                "raise max_iter (or tol) of the verifier; an EM that does not settle often means fields that depend "
                "on each other (join them into one field) or a lambda at a boundary",
            )
        )
    return out


def candidate_lambda(verifier: Mapping[str, Any]) -> float | None:
    """The fitted share of matches among the candidates: ``lambda``, or, when the model gives lambda over
    every record pair (training sessions: ``sessions.lambda_over == "population"``, far below 1e-6 on a
    large job and rightly so), the expected matches among the candidates over the pairs scored."""
    sessions = verifier.get("sessions")
    if isinstance(sessions, Mapping) and sessions.get("lambda_over") == "population":
        expected = _number(verifier.get("expected_matches_in_candidates"))
        scored = _number(verifier.get("pairs_scored"))
        return expected / scored if expected is not None and scored else None
    return _number(verifier.get("lambda"))


def _session_warnings(name: str, verifier: Mapping[str, Any]) -> list[dict[str, str]]:
    """Training sessions (Fellegi-Sunter's ``sessions.sessions``) whose EM was used but did not converge."""
    sessions = verifier.get("sessions")
    listed = sessions.get("sessions") if isinstance(sessions, Mapping) else None
    out = []
    for s in listed if isinstance(listed, list) else []:
        if isinstance(s, Mapping) and s.get("used", True) and s.get("converged") is False:
            agree = "+".join(str(f) for f in s.get("agree_on") or []) or "?"
            out.append(
                warning(
                    "em_not_converged",
                    f"{name}'s EM of the training session on the pairs agreeing on {agree} stopped after "
                    f"{s.get('iterations')} iterations without converging: its m estimates are not a maximum of the likelihood",
                    "raise max_iter (or tol) of the verifier, or choose the sessions: (blocking keys whose pairs hold "
                    "matches and non-matches)",
                )
            )
    return out


def _expected_warnings(report: Mapping[str, Any], name: str, expected: float | None, verifier: Mapping[str, Any]) -> list[dict[str, str]]:
    if expected is None:
        return []
    out: list[dict[str, str]] = []
    mode = str(report.get("mode") or "dedup")
    records = report.get("records")
    per_source = records.get("per_source") if isinstance(records, Mapping) else None
    n = _records_total(report)
    if mode == "link" and isinstance(per_source, Mapping) and per_source:
        sizes = sorted(int(v) for v in per_source.values())
        # per pair of sources, the smaller one's records: sum over i < j of min(n_i, n_j)
        paired = sum(size * (len(sizes) - 1 - i) for i, size in enumerate(sizes))
        limit = EXPECTED_PER_RECORD_LINK * paired
        basis = (
            f"{sizes[0]:,} records in the smaller source"
            if len(sizes) <= 2
            else f"{len(sizes)} sources ({paired:,} records of the smaller source summed over the pairs of sources)"
        )
    else:
        limit = EXPECTED_PER_RECORD_DEDUP * n
        basis = f"{n:,} records"
    sessions = verifier.get("sessions")
    over = "every record pair" if isinstance(sessions, Mapping) and sessions.get("lambda_over") == "population" else "the candidates"
    clusters = report.get("clusters")
    in_clusters = _number(clusters.get("pairs")) if isinstance(clusters, Mapping) else None
    large_entities = in_clusters is not None and in_clusters >= EXPECTED_SHARE_IN_CLUSTERS * expected
    if n > 0 and expected > limit and not large_entities:
        out.append(
            warning(
                "expected_matches_high",
                f"{name} expects {expected:,.0f} matching pairs among {over}, more than the {basis} make "
                f"plausible (at most {limit:,.0f})"
                + ("" if in_clusters is None else f" and more than twice the {in_clusters:,.0f} pairs its clusters hold")
                + ": the model's match class holds many non-matches",
                "check lambda and the per-field weights in report.json (verifier); fields that agree on most candidates "
                "(blocking keys) pull non-matches into the match class: give prior:, or train from labelled pairs (er review)",
            )
        )
    kept = _number(verifier.get("pairs_at_or_above_threshold"))
    if kept is None:
        kept = _number(report.get("verified_pairs"))
    among = _number(verifier.get("expected_matches_in_candidates"))  # (expected_matches may be over every pair)
    expected = among if among is not None else expected
    if kept is not None and kept > 0 and expected < EXPECTED_SHARE_OF_KEPT_MIN * kept:
        out.append(
            warning(
                "expected_matches_low",
                f"{name} expects {expected:,.1f} matching pairs but keeps {kept:,.0f}: by its own model nearly every "
                "pair it keeps is a non-match",
                "raise the threshold (it is far below the match probabilities the model gives), or check the fit",
            )
        )
    return out


def _own_warnings(verifier: Mapping[str, Any]) -> list[dict[str, str]]:
    """The verifier's own warnings: its section's ``warnings``, or those of a mapping inside it."""
    found: list[Any] = []
    if isinstance(verifier.get("warnings"), list):
        found += verifier["warnings"]
    for key, value in verifier.items():
        if key != "warnings" and isinstance(value, Mapping) and isinstance(value.get("warnings"), list):
            found += value["warnings"]
    out = []
    for w in found:
        if isinstance(w, Mapping) and w.get("message"):
            out.append(warning(str(w.get("code") or "verifier"), str(w["message"]), str(w.get("fix") or "")))
        elif isinstance(w, str) and w:
            out.append(warning("verifier", w, ""))
    return out


def _listed(value: Any) -> list[Any]:
    """``value`` if it is a list, else empty (a report of another version, or edited by hand)."""
    return value if isinstance(value, list) else []


def dropped_pairs_warning(blocker: str, cap: str, buckets: int, records: str, pairs: int, fix: str) -> dict[str, str]:
    """The one warning of pairs a cap dropped: ``buckets`` buckets (blocks) of blocker ``blocker`` were over
    ``cap`` and made no pair; ``records`` says how many records they held; they would have made ``pairs``
    pairs. Every cap that drops pairs is reported through this function."""
    return warning(
        "pairs_dropped_by_cap",
        f"blocker {blocker} skipped {buckets:,} bucket{'s' if buckets != 1 else ''} over {cap} ({records}): "
        f"the {pairs:,} pairs they would have made were never compared, and matches among them are missing "
        "from the answer",
        fix,
    )


def capped_pairs(blocker: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The caps of one blocker's report section that dropped pairs, ``{"cap", "setting", "buckets", "records",
    "pairs", "key"}`` each: bucket blockers' ``oversized_buckets`` / ``pairs_skipped`` over ``max_bucket_size``
    (``records``: the largest bucket's, a lower bound on the records in them: the section counts no more), and
    key blockers' per-key ``purged`` buckets over ``max_block_size`` (``records``: their sum)."""
    out: list[dict[str, Any]] = []
    over = int(_number(blocker.get("oversized_buckets")) or 0)
    if over > 0:
        size = _number(blocker.get("max_bucket_size"))
        largest = int(_number(blocker.get("largest_bucket")) or 0)
        out.append(
            {
                "setting": "max_bucket_size",
                "cap": "max_bucket_size" + ("" if size is None else f" = {int(size):,}"),
                "buckets": over,
                "records": f"at least {largest:,} records in them: the largest bucket holds that many",
                "pairs": int(_number(blocker.get("pairs_skipped")) or 0),
                "key": None,
            }
        )
    for key in _listed(blocker.get("per_key")):
        purged = key.get("purged") if isinstance(key, Mapping) else None
        if not isinstance(purged, Mapping) or not int(_number(purged.get("buckets")) or 0):
            continue
        sizes = [int(_number(b.get("size")) or 0) for b in _listed(purged.get("largest")) if isinstance(b, Mapping)]
        cap = _number(blocker.get("max_block_size"))
        records = int(_number(purged.get("records")) or 0)
        out.append(
            {
                "setting": "max_block_size",
                "cap": "max_block_size" + ("" if cap is None else f" = {int(cap):,}"),
                "buckets": int(_number(purged.get("buckets")) or 0),
                "records": f"{records:,} records in them" + (f", the largest {max(sizes):,}" if sizes else ""),
                "pairs": int(_number(purged.get("pairs_cost")) or 0),
                "key": str(key.get("key") or "?"),
            }
        )
    return out


def _cap_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """One warning per cap of a blocker that dropped pairs (:func:`capped_pairs`, :func:`dropped_pairs_warning`)."""
    out: list[dict[str, str]] = []
    exact = report.get("exact_duplicates")
    exact_off = isinstance(exact, Mapping) and exact.get("enabled") is False
    for blocker in _listed(report.get("blockers")):
        if not isinstance(blocker, Mapping):
            continue
        name = str(blocker.get("type") or blocker.get("name") or "?")
        for c in capped_pairs(blocker):
            copies = "; turn exact_duplicates on (identical records then collapse to one before blocking)" if exact_off else ""
            if c["key"] is not None:
                who = f"{name!r} (key {c['key']!r})"
                fix = (
                    f"raise {c['setting']} (null: no cap) if the memory allows (~80 bytes per pair while blocking), or "
                    f"make the key {c['key']!r} more selective (add a field) so that its blocks are smaller{copies}; "
                    "another key or blocker may still pair these records (report.html's blocking section lists the "
                    "purged values)"
                )
            else:
                who = repr(name)
                fix = (
                    f"raise {c['setting']} (null: no cap) if the memory allows, or make the buckets smaller: more rows "
                    f"per band (or a higher blocker threshold; cells per set for grid_bits){copies}, or block with a "
                    "more selective blocker"
                )
            out.append(dropped_pairs_warning(who, c["cap"], c["buckets"], c["records"], c["pairs"], fix))
    return out


#: records left without a shingle by ``prune_shingles:``: warned about above this share of the records
#: (a record without shingles is in no bucket and matches nothing: losing even one is worth a line)
EMPTIED_SHARE_MIN = 0.0


def _pruning_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """Records that ``prune_shingles:`` left without a shingle (the ``prune`` stage's ``records_emptied``)."""
    stage = next((s for s in _listed(report.get("stages")) if isinstance(s, Mapping) and s.get("stage") == "prune"), None)
    if stage is None:
        return []
    emptied = int(_number(stage.get("records_emptied")) or 0)
    n = int(_number(stage.get("records_counted")) or 0) or _records_total(report)
    if emptied <= 0 or n <= 0 or emptied <= EMPTIED_SHARE_MIN * n:
        return []
    return [
        warning(
            "records_emptied_by_pruning",
            f"prune_shingles left {emptied:,} of the {n:,} records ({emptied / n:.1%}) without any shingle "
            f"(max_df {stage.get('max_df')}, min_df {stage.get('min_df')}): they are in no bucket and match nothing",
            "raise max_df (a share such as 0.05, or a larger count) or lower min_df, or remove prune_shingles; "
            "report.html's pruning section shows how many records hold the most frequent shingles",
        )
    ]


#: a pair of records is near-identical when the sets of its records' character 3-grams (per field) have
#: a Jaccard similarity of at least this: copies, and copies with a typo or two (a record of a dozen
#: fields differing in one value keeps ~0.9 of its 3-grams)
NEAR_IDENTICAL_JACCARD = 0.9


def _nothing_verified_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """A verifier that kept no pair while near-identical candidates were among those it rejected."""
    scores = report.get("scores")
    evidence = scores.get("near_identical_rejected") if isinstance(scores, Mapping) else None
    if not isinstance(evidence, Mapping):
        return []
    found = int(_number(evidence.get("near_identical")) or 0)
    sampled = int(_number(evidence.get("sampled")) or 0)
    candidates = int(_number(report.get("candidate_pairs")) or 0)
    if found <= 0 or int(_number(report.get("verified_pairs")) or 0) > 0:
        return []
    if _training_warnings(report):  # trained from labels that link nothing: training_no_links says so, with its fix
        return []
    verifier = report.get("verifier")
    name = str(verifier.get("type") or "the verifier") if isinstance(verifier, Mapping) else "the verifier"
    trained = isinstance(report.get("training"), Mapping) and bool(report.get("training"))
    best = _number(evidence.get("best_score"))
    return [
        warning(
            "nothing_verified",
            f"{name} verified none of the {candidates:,} candidate pairs, yet {found:,} of the {sampled:,} candidates "
            f"checked are near-identical records (>= {evidence.get('similarity', NEAR_IDENTICAL_JACCARD)} of their "
            "character 3-grams shared)"
            + (f"; the best score was {best:.6g}, below the threshold {evidence.get('threshold')}" if best is not None else "")
            + ": the model or the threshold rejects what are almost certainly matches",
            "check the threshold (report.json threshold, report.html's score histogram) and the model (report.json "
            "verifier); "
            + (
                "a model trained from too few labelled pairs learns nothing: label more pairs (er review) or remove training:"
                if trained
                else "with fellegi_sunter give prior:, or train from labelled pairs (er review, training:)"
            )
            + "; er explain OUT --left ID --right ID shows why a pair scored what it did",
        )
    ]
