"""The sections of report.html (:mod:`er_framework.report.page`): each one's body as HTML, drawn
from ``report.json`` (and the clusters and example records the page gathers). Every text taken from the
data or the report is HTML-escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.normalize import unparsed_warning
from er_framework.report.blocking import blocker_tables
from er_framework.report.plots import plot_cluster_sizes, plot_points, plot_s_curve, plot_scores, plot_threshold
from er_framework.report.review import Values, candidate_scores, match_weights
from er_framework.report.review import esc as _e
from er_framework.report.review import fmt_value as _fmt

__all__ = [
    "PAGE_CSS",
    "QUARTILES",
    "WrittenScores",
    "written_scores",
    "ClusterView",
    "Fetched",
    "all_scores_section",
    "blocking_section",
    "chains_section",
    "cluster_sections",
    "components_section",
    "guarded",
    "job_section",
    "normalize_section",
    "pruning_section",
    "scores_section",
    "section_html",
    "stages_section",
    "summary_section",
    "threshold_section",
    "warnings_section",
]

#: Characters of each field shown for an example record.
SNIPPET_CHARS = 200
#: Keys of report.json that may hold the date of the run (first found wins).
_DATE_KEYS = ("finished_at", "started_at", "finished", "started", "date", "run_at", "timestamp")


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


#: Numbers shown without thousands separators (identifiers, not counts).
_PLAIN_KEYS = {"seed", "prime"}


def _kv_table(rows: Iterable[tuple[str, Any]], cls: str = "kv") -> str:
    body = "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(str(v) if k in _PLAIN_KEYS and isinstance(v, int) else _fmt(v))}</td></tr>" for k, v in rows
    )
    return f'<table class="{cls}">{body}</table>'


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]], num: Sequence[bool] | None = None) -> str:
    """A table; cells are formatted with :func:`_fmt` unless given as ``("html", markup)``."""
    num = num or [False] * len(head)
    out = ["<table><thead><tr>"]
    out += [f'<th class="{"num" if n else ""}">{_e(h)}</th>' for h, n in zip(head, num)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        for cell, n in zip(row, num):
            markup = cell[1] if isinstance(cell, tuple) and len(cell) == 2 and cell[0] == "html" else _e(_fmt(cell))
            out.append(f'<td class="{"num" if n else ""}">{markup}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


def _snippet(value: str | None, limit: int = SNIPPET_CHARS) -> str:
    if value is None:
        return "(missing)"
    text = " ".join(value.split())
    if len(text) > limit:
        return f"{text[:limit]}… ({len(text):,} characters)"
    return text if text else "(empty)"


def _id_markup(rid: str) -> str:
    """A record id in code style: short ids never wrap, long ones may wrap after a '/'."""
    if len(rid) <= 30:
        return f'<code class="id">{_e(rid)}</code>'
    return f'<code class="longid">{_e(rid).replace("/", "/<wbr>")}</code>'


def _run_date(report: dict[str, Any], out: Path) -> str:
    for key in _DATE_KEYS:
        if report.get(key):
            return str(report[key])
    try:
        mtime = (out / "report.json").stat().st_mtime
    except OSError:
        return "—"
    stamp = datetime.fromtimestamp(mtime, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{stamp} (time report.json was written)"


# --------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------


PAGE_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#222;
margin:0;background:#f6f7f9}
main{max-width:1080px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:18px;margin:0 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
section{background:#fff;border:1px solid #e2e4e8;border-radius:6px;padding:14px 18px;margin:14px 0}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border-bottom:1px solid #eceef1;padding:3px 10px 3px 0;text-align:left;vertical-align:top}
thead th{border-bottom:2px solid #ccd;font-weight:600}
table.kv th{font-weight:600;color:#444;white-space:nowrap;padding-right:18px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;padding-left:10px}
td.rec{max-width:640px;overflow-wrap:anywhere}
code.id{overflow-wrap:normal;white-space:nowrap}code.longid{overflow-wrap:normal;word-break:normal}
td:has(code.longid){min-width:200px;max-width:280px}
.pair{display:flex;gap:16px;align-items:flex-start}.pair table{flex:1}.pair .pts{width:330px;flex:none}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:0 24px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(120px,1fr));gap:10px;margin:4px 0 8px}
.card{border:1px solid #e2e4e8;border-radius:6px;padding:8px 12px;background:#fafbfc}
.card b{display:block;font-size:20px;font-variant-numeric:tabular-nums}.card span{color:#555;font-size:12px}
.note{color:#555;font-size:13px;margin:4px 0 8px}.warn{color:#8a4b00}
img{max-width:100%;height:auto;display:block;margin:6px 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;overflow-wrap:anywhere}
.bar{display:inline-block;height:9px;background:#8fb3d9;vertical-align:middle}
section.warnings{border:2px solid #c0392b;background:#fdf0ee}section.warnings h2{color:#a12a1c;border-color:#e8b4ab}
section.warnings li{margin:4px 0 8px}section.warnings .fix{color:#444}
details pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;background:#f6f7f9;padding:8px;max-height:480px;overflow:auto}
nav a{margin-right:12px;color:#1f5fa8;text-decoration:none}
"""


def warnings_section(report: dict[str, Any]) -> str:
    """The run's plausibility warnings (report.json ``warnings``) as a box for the top of the page; "" when none."""
    found = [w for w in report.get("warnings") or [] if isinstance(w, dict) and w.get("message")]
    if not found:
        return ""
    n = len(found)
    items = "".join(
        f"<li><b>{_e(w['message'])}</b>" + (f'<br><span class="fix">fix: {_e(w["fix"])}</span>' if w.get("fix") else "") + "</li>"
        for w in found
    )
    title = f"{n} warning{'s' if n != 1 else ''}: check the answer before using it"
    return f'<section id="warnings" class="warnings"><h2>{_e(title)}</h2><ul>{items}</ul></section>'


def section_html(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}"><h2>{_e(title)}</h2>{body}</section>'


def job_section(report: dict[str, Any], out: Path) -> str:
    versions = report.get("versions") or {}
    comps = versions.get("components") or {}
    comp_text = ", ".join(f"{name} ({info.get('distribution', '?')} {info.get('version', '?')})" for name, info in comps.items())
    rows: list[tuple[str, Any]] = [
        ("mode", report.get("mode")),
        ("config", report.get("config")),
        ("seed", report.get("seed")),
        ("config hash", report.get("config_hash")),
        ("run date", _run_date(report, out)),
        (
            "run time",
            f"{_fmt(report.get('seconds_total'))} s, peak memory {_fmt(report.get('peak_rss_mb'))} MB"
            if report.get("seconds_total") is not None
            else None,
        ),
        (
            "versions",
            f"er-framework {versions.get('er_framework', '?')}, Python {versions.get('python', '?')}, numpy {versions.get('numpy', '?')}"
            if versions
            else None,
        ),
        ("components", comp_text or None),
        ("output folder", str(out)),
    ]
    return _kv_table(rows)


def summary_section(report: dict[str, Any]) -> str:
    recs = report.get("records") or {}
    exact = report.get("exact_duplicates") or {}
    clusters = report.get("clusters") or {}
    cards = [
        ("records read", recs.get("total")),
        ("exact duplicates", "off" if exact.get("enabled") is False else exact.get("records_collapsed") or exact.get("pairs") or 0),
        ("candidate pairs", report.get("candidate_pairs")),
        ("verified pairs", report.get("verified_pairs")),
        ("clusters", clusters.get("count")),
        ("singletons", clusters.get("singletons")),
        ("largest cluster", clusters.get("largest")),
    ]
    body = '<div class="cards">' + "".join(f'<div class="card"><b>{_e(_fmt(v))}</b><span>{_e(k)}</span></div>' for k, v in cards) + "</div>"
    per_source = recs.get("per_source") or {}
    rows: list[tuple[str, Any]] = [(f"records in source {name!r}", n) for name, n in per_source.items()]
    if exact:
        if not exact.get("enabled", True):
            rows.append(("exact duplicates", "stage off"))
        else:
            rows.append(("exact-duplicate groups", exact.get("groups")))
            rows.append(("records in those groups", exact.get("records_in_groups")))
            rows.append(("records collapsed onto a representative", exact.get("records_collapsed")))
            rows.append(("exact-duplicate pairs (score 1.0)", exact.get("pairs")))
    tokens = report.get("tokens") or {}
    if tokens:
        rows.append(("mean tokens per record", tokens.get("mean_tokens")))
        rows.append(("records with no tokens", tokens.get("empty_token_sets")))
    rows.append(("candidate pairs (blocking, exact duplicates excluded)", report.get("candidate_pairs")))
    rows.append(("verified pairs (score ≥ threshold)", report.get("verified_pairs")))
    rows.append(("pairs in pairs.csv (after the last step; exact copies with every copy)", report.get("pairs_written")))
    if isinstance(report.get("pairs"), dict) and "verified_pairs_listed" in report["pairs"]:
        rows.append(("verified pairs before the clusterer selected pairs (verified_pairs.csv)", report["pairs"]["verified_pairs_listed"]))
    rows.append(("records in clusters of 2 or more", clusters.get("records_in_multi_record_clusters")))
    if "pairs" in clusters:
        rows.append(("record pairs within clusters", clusters.get("pairs")))
    return body + _kv_table(rows) + _link_answer(report)


def _link_answer(report: dict[str, Any]) -> str:
    """Link modes: records of each source matched to another source, at the threshold and around it."""
    link = report.get("link")
    if not link:
        return ""
    names = list(link.get("sources") or [])
    per_source = (report.get("records") or {}).get("per_source") or {}
    matched = link.get("matched") or {}
    lines = [f"{_e(n)}: {_e(_fmt(matched.get(n)))} of {_e(_fmt(per_source.get(n)))} records matched to another source" for n in names]
    head = ["score ≥", "cross-source pairs", *[f"{n} records with a pair" for n in names]]
    rows = [[_fmt(r.get("threshold")), _fmt(r.get("pairs")), *[_fmt(r.get(n)) for n in names]] for r in link.get("by_threshold") or []]
    return (
        f"<h3>Link answer (score ≥ {_e(_fmt(link.get('threshold')))}, after clustering)</h3>"
        + "".join(f"<p>{line}</p>" for line in lines)
        + _note("Per threshold: records having at least one cross-source candidate pair at or above it (before clustering).")
        + _table(head, rows)
        + _source_pairs(link)
    )


def _source_pairs(link: dict[str, Any]) -> str:
    """Link modes: candidate, verified and final pairs per pair of sources (report.json ``link.by_source_pair``)."""
    per_pair = link.get("by_source_pair") or []
    if len(per_pair) < 2:  # two sources: the counts above say it
        return ""
    head = ["sources", "candidate pairs", "verified pairs", "final pairs (pairs.csv)"]
    rows = [
        [" – ".join(str(s) for s in r.get("sources") or []), r.get("candidate_pairs"), r.get("verified_pairs"), r.get("pairs")]
        for r in per_pair
    ]
    return "<h3>Pairs per pair of sources</h3>" + _table(head, rows, [False, True, True, True])


def blocking_section(report: dict[str, Any]) -> str:
    blockers = report.get("blockers") or []
    diag = ((report.get("diagnostics") or {}).get("s_curve")) or None
    if not blockers:
        return _note("report.json lists no blockers.")
    parts: list[str] = []
    for i, blk in enumerate(blockers):
        kind = str(blk.get("type", "?"))
        title = f"blocker {i + 1}: {kind}" if len(blockers) > 1 else f"blocker: {kind}"
        parts.append(f"<h3>{_e(title)}</h3>")
        bands, rows = blk.get("bands"), blk.get("rows")
        if kind == "lsh_bands" or (isinstance(bands, int) and isinstance(rows, int)):
            mine = diag if diag and diag.get("bands") == bands and diag.get("rows") == rows else None
            threshold = blk.get("threshold")
            parts.append(plot_s_curve(int(bands), int(rows), threshold, mine))
            if mine:
                parts.append(
                    _note(
                        f"Green points: share of sampled pairs that the banding made candidates, by exact "
                        f"similarity (bins of width 0.1; error bars: 95% Wilson interval). "
                        f"{_fmt(mine.get('pairs_sampled'))} pairs sampled around {_fmt(mine.get('records_probed'))} "
                        f"records, independently of the banding's hash functions."
                    )
                )
                capped = mine.get("capped")
                if isinstance(capped, dict):
                    parts.append(
                        _note(
                            f"The probe was bounded: {_fmt(capped.get('records_skipped_long_text'))} records longer than "
                            f"{_fmt(capped.get('max_record_chars'))} characters and "
                            f"{_fmt(capped.get('records_skipped_many_tokens'))} with more than "
                            f"{_fmt(capped.get('max_record_tokens'))} tokens were not probed; "
                            f"{_fmt(capped.get('tokens_compared'))} tokens compared (budget "
                            f"{_fmt(capped.get('token_budget'))}, {_fmt(capped.get('pairs_before_token_budget'))} pairs "
                            "sampled before it). The counts and intervals are those of the pairs measured."
                        )
                    )
                rows_t = []
                for (a, b), n, k, m, p in zip(
                    mine["bins"], mine["pairs"], mine["candidates"], mine["measured_rate"], mine["predicted_rate"]
                ):
                    rows_t.append([f"{a:.1f}–{b:.1f}", n, k, m, p])
                parts.append(
                    "<details><summary>measured rate per similarity bin</summary>"
                    + _table(
                        ["similarity", "pairs sampled", "candidates", "measured rate", "predicted rate"],
                        rows_t,
                        [False, True, True, True, True],
                    )
                    + "</details>"
                )
            else:
                parts.append(
                    _note(
                        "Only the theoretical curve is shown: this report.json has no measured candidate "
                        "rates (diagnostics.s_curve), e.g. because it was written by an older version "
                        "or diagnostics were turned off."
                    )
                )
            shown = [
                ("bands b", bands),
                ("rows r", rows),
                ("signature length used (b·r)", bands * rows),
                ("num_perm", blk.get("num_perm")),
                ("threshold", threshold),
                ("target recall", blk.get("target_recall")),
                ("P(candidate) at the threshold", blk.get("p_candidate_at_threshold")),
                ("S-curve midpoint (1/b)^(1/r)", blk.get("s_curve_midpoint")),
            ]
        elif kind == "grid_bits":
            parts.append(
                _note(
                    f"Grid-bit blocking: {_fmt(blk.get('sets'))} random sets of {_fmt(blk.get('cells'))} grid cells; "
                    "two prints become a candidate pair when they have all cells of some set occupied. "
                    "P(candidate | same finger) = 1 − (1 − (pq)^c)^M and P(candidate | different) = "
                    "1 − (1 − p^2c)^M for occupancy p and agreement q (the finite-grid values are measured). "
                    "The LSH S-curve does not apply."
                )
            )
            shown = [
                ("sets M", blk.get("sets")),
                ("cells per set c", blk.get("cells")),
                ("grid cells (bits)", blk.get("n_bits")),
                ("occupancy p", blk.get("occupancy")),
                ("agreement q assumed", blk.get("agreement_assumed", blk.get("agreement"))),
                ("P(candidate | same)", blk.get("p_candidate_same")),
                ("P(candidate | different)", blk.get("p_candidate_different")),
                ("P(candidate | same), finite grid", blk.get("p_candidate_same_finite_grid")),
                ("P(candidate | different), finite grid", blk.get("p_candidate_different_finite_grid")),
            ]
        else:
            parts.append(_note(f"The {kind} blocker is not LSH banding: no S-curve. Its report follows."))
            shown = []
        stats = [
            ("records bucketed", blk.get("records_bucketed")),
            ("records skipped (no tokens)", blk.get("records_skipped_empty")),
            ("buckets", blk.get("buckets")),
            ("largest bucket", blk.get("largest_bucket")),
            ("max bucket size", blk.get("max_bucket_size")),
            ("oversized buckets skipped", blk.get("oversized_buckets")),
            ("pairs skipped in them", blk.get("pairs_skipped")),
            ("raw pairs (with repeats)", blk.get("raw_pairs")),
            ("candidate pairs of this blocker", blk.get("candidate_pairs")),
        ]
        used = {
            "type",
            "bands",
            "rows",
            "num_perm",
            "threshold",
            "target_recall",
            "p_candidate_at_threshold",
            "s_curve_midpoint",
            "sets",
            "cells",
            "n_bits",
            "occupancy",
            "agreement_assumed",
            "p_candidate_same",
            "p_candidate_different",
            "p_candidate_same_finite_grid",
            "p_candidate_different_finite_grid",
            "records_bucketed",
            "records_skipped_empty",
            "buckets",
            "largest_bucket",
            "max_bucket_size",
            "oversized_buckets",
            "pairs_skipped",
            "raw_pairs",
            "candidate_pairs",
        }
        if kind != "grid_bits":
            used.discard("agreement")
        else:
            used.add("agreement")
        used.add("per_key")  # (its table follows)
        rest = [(k, v) for k, v in blk.items() if k not in used]
        model = [(k, v) for k, v in shown if v is not None]
        counts = [(k, v) for k, v in stats if v is not None] + rest
        parts.append('<div class="grid">' + "".join(f"<div>{_kv_table(t)}</div>" for t in (model, counts) if t) + "</div>")
        parts.append(blocker_tables(blk, report.get("mode")))
    return "".join(parts)


def scores_section(report: dict[str, Any], scores: np.ndarray | None, pairs_file: Path | None) -> str:
    if scores is None:
        return _note("No pairs table (pairs.csv or pairs.parquet) in the output folder: no score histogram.")
    threshold = (report.get("verifier") or {}).get("threshold")
    verify: dict[str, Any] = next((s for s in report.get("stages") or [] if s.get("stage") == "verify"), {})
    parts = []
    if len(scores) == 0:
        parts.append(_note(f"{pairs_file.name if pairs_file else 'the pairs table'} is empty: no pair reached the threshold."))
    else:
        parts.append(plot_scores(scores, threshold))
    exact = (report.get("exact_duplicates") or {}).get("pairs") or 0
    text = (
        f"Only verified pairs are written, so the histogram starts at the verifier's threshold "
        f"({_fmt(threshold)}): the {_fmt(verify.get('rejected_pairs'))} candidate pairs scored below it "
        f"were dropped and are not in {pairs_file.name if pairs_file else 'the pairs table'}."
    )
    if exact:
        text += f" It includes the {_fmt(exact)} exact-duplicate pairs, written with score 1.0."
    parts.append(_note(text))
    parts.append(_quartiles(scores))
    return "".join(parts)


#: the quantiles of the written pairs' scores report.html shows: min, quartiles, max
QUARTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class WrittenScores:
    """The written pairs' count and the :data:`QUARTILES` of their scores (``np.quantile``'s, linear)."""

    count: int
    quantiles: tuple[float, ...]


def written_scores(scores: np.ndarray | WrittenScores | None) -> WrittenScores | None:
    """:class:`WrittenScores` of every written pair's score (None without pairs)."""
    if scores is None or isinstance(scores, WrittenScores):
        return scores if scores is None or scores.count else None
    if not len(scores):
        return None
    return WrittenScores(len(scores), tuple(float(q) for q in np.quantile(scores, QUARTILES)))


def _quartiles(scores: np.ndarray | WrittenScores | None) -> str:
    """The written pairs' count and score quartiles (empty without pairs)."""
    w = written_scores(scores)
    if w is None:
        return ""
    q = w.quantiles
    return _kv_table(
        [("pairs", w.count), ("min / median / max", f"{q[0]:.4f} / {q[2]:.4f} / {q[4]:.4f}"), ("quartiles", f"{q[1]:.4f}, {q[3]:.4f}")]
    )


def all_scores_section(section: dict[str, Any], scores: np.ndarray | WrittenScores | None) -> str:
    """Every candidate's score (report.json ``scores``), then the written pairs' quartiles."""
    body = candidate_scores(section)
    if written_scores(scores) is not None:
        body += "<h3>The pairs written</h3>" + _quartiles(scores)
    return body


def guarded(title: str, draw: Callable[[], str | None]) -> str | None:
    """A section's body, or a note when report.json's data for it is malformed (the page is still drawn)."""
    try:
        return draw()
    except Exception as exc:  # noqa: BLE001 - one odd section must not cost the whole page
        return _note(f"{title}: this section could not be drawn from report.json ({type(exc).__name__}: {exc}).")


def threshold_section(report: dict[str, Any]) -> str:
    """``threshold: auto``: how the threshold was chosen, with the evidence."""
    section = report.get("threshold") or {}
    fit = section.get("auto") or {}
    parts = [plot_threshold(fit) or _note("report.json holds no usable histogram of the candidate scores.")]
    verdict = "chosen from the scores" if fit.get("ok") else "fallback: no two groups of scores showed"
    parts.append(
        _note(
            f"Threshold {_fmt(section.get('value'))} ({verdict}): {fit.get('reason', '')} "
            "A fixed number (threshold: 0.4) replaces the choice; auto_threshold: {low, high, method, "
            "fallback} bounds it."
        )
    )
    evidence = fit.get("evidence") or {}
    parts.append(
        _kv_table(
            [
                ("method asked", fit.get("requested")),
                ("method used", fit.get("method")),
                ("candidate scores", fit.get("n_scores")),
                ("range", f"{fit.get('low')} – {fit.get('high')}"),
            ]
            + [(k, v) for k, v in evidence.items() if not isinstance(v, (list, dict))]
        )
    )
    return "".join(parts)


def pruning_section(report: dict[str, Any]) -> str:
    """``prune_shingles:``: which shingles were dropped for being in too many (or too few) records, and how much of each record."""
    st: dict[str, Any] = next((s for s in report.get("stages") or [] if s.get("stage") == "prune"), {})
    share = st.get("record_share_pruned") or {}
    text = (
        f"{_fmt(st.get('shingles_pruned'))} of {_fmt(st.get('vocabulary'))} distinct shingles were dropped from every "
        f"record's set before signing and verification: {_fmt(st.get('above_max_df'))} held by more than "
        f"{_fmt(st.get('max_records'))} of the {_fmt(st.get('records_counted'))} records (max_df {_fmt(st.get('max_df'))}), "
        f"{_fmt(st.get('below_min_df'))} by fewer than {_fmt(st.get('min_records'))} (min_df {_fmt(st.get('min_df'))}). "
        f"They were {_fmt(st.get('token_share_pruned'))} of all the records' shingles; per record the share pruned "
        f"has median {_fmt(share.get('median'))}, 90th percentile {_fmt(share.get('p90'))} and maximum "
        f"{_fmt(share.get('max'))}; {_fmt(st.get('records_emptied'))} records were left without shingles."
    )
    rows = [
        ("records holding each of the 10 most frequent shingles", st.get("most_frequent_df")),
        ("records that lost shingles", st.get("records_pruned")),
    ]
    return _note(text) + _kv_table(rows)


def chains_section(report: dict[str, Any]) -> str:
    """Clusters whose pairs look like a chain of two entities: a low-score bridge between dense parts."""
    ch = report.get("chains") or {}
    listed = ch.get("listed") or []
    text = (
        f"{_fmt(ch.get('flagged'))} of the {_fmt(ch.get('checked'))} clusters checked (of {_fmt(ch.get('clusters'))}; "
        f"{_fmt(ch.get('too_small'))} too small to split, {_fmt(ch.get('skipped_too_large'))} too large to check) "
        "can be cut into two dense parts joined by few, weaker pairs: two entities chained together, "
        "often by text they share (boilerplate). A non-chaining clusterer (louvain, label_propagation), "
        "cluster.split, prune_shingles or a higher threshold separates them."
    )
    if not listed:
        return _note(text)
    rows = []
    for f in listed:
        a, b = f.get("sides") or (None, None)
        da, db = f.get("side_density") or (None, None)
        ma, mb = f.get("side_median_score") or (None, None)
        bridge = f.get("bridge") or []
        shown = " ~ ".join(f"{s}:{i}" for s, i in bridge)
        rows.append(
            [
                f.get("cluster"),
                f.get("size"),
                f"{a} + {b}",
                f.get("cut_edges"),
                f.get("cut_max_score"),
                f"{_fmt(da)} / {_fmt(db)}",
                f"{_fmt(ma)} / {_fmt(mb)}",
                shown,
            ]
        )
    return _note(text) + _table(
        [
            "cluster",
            "records",
            "parts",
            "pairs across",
            "strongest across",
            "density of parts",
            "median score of parts",
            "strongest pair across",
        ],
        rows,
        [True, True, False, True, True, False, False, False],
    )


@dataclass
class ClusterView:
    """What the cluster sections show: every cluster's size (as the distinct sizes, ascending, and how many
    clusters have each), the ``top`` largest multi-record clusters with their members, and the written pair
    scores inside each of them."""

    distinct: np.ndarray
    counts: np.ndarray
    largest: list[tuple[str, list[tuple[str, str]]]]
    inside: dict[str, list[float]]
    #: the members' positions in the run's records, when drawn from memory
    rows: dict[tuple[str, str], int] = field(default_factory=dict)


def _points(value: str | None) -> np.ndarray | None:
    """``[[x, y, ...], ...]`` (e.g. minutiae) as an (n, 2) float array, else None."""
    if not value or not value.lstrip().startswith("[["):
        return None
    try:
        data = json.loads(value)
        pts = np.array([[float(p[0]), float(p[1])] for p in data], dtype=np.float64)
    except (ValueError, TypeError, IndexError, KeyError):
        return None
    return pts if pts.ndim == 2 and len(pts) and np.isfinite(pts).all() else None


Points = dict[tuple[str, str], np.ndarray]
#: The values of some records as read, their field names, and a problem reading them (or None).
Fetched = tuple[Values, list[str], str | None]


def cluster_sections(report: dict[str, Any], view: ClusterView | None, max_examples: int, fetched: Fetched) -> tuple[str, str]:
    """(cluster-size section body, largest-clusters section body)."""
    if view is None:
        msg = _note("No clusters table (clusters.csv or clusters.parquet) in the output folder.")
        return msg, msg
    distinct, counts = np.asarray(view.distinct, dtype=np.int64), np.asarray(view.counts, dtype=np.int64)
    dist = [plot_cluster_sizes(distinct, counts)] if len(distinct) else [_note("No records.")]
    dist.append(
        _note(
            f"{_fmt(int(counts.sum()))} clusters of {_fmt(int((distinct * counts).sum()))} records: "
            f"{_fmt(int(counts[distinct == 1].sum()))} singletons, largest {_fmt(int(distinct.max()) if len(distinct) else 0)}"
            f" (clusterer: {(report.get('clusterer') or {}).get('type', '?')})."
        )
    )
    largest = view.largest
    if not largest:
        return "".join(dist), _note("Every cluster is a singleton: no matches to show.")
    shown_members = {cid: m[:max_examples] for cid, m in largest}
    values, fields, problem = fetched
    points: Points = {}
    for m in shown_members.values():
        for rec in m:
            for f in fields:
                pts = _points((values.get(rec) or {}).get(f))
                if pts is not None:
                    points[rec] = pts
                    break
    parts = []
    if problem:
        parts.append(f'<p class="note warn">{_e(problem)}</p>')
    inside = view.inside
    for cid, m in largest:
        sc = inside.get(cid)
        score_text = ""
        if sc:
            plural = "pair" if len(sc) == 1 else "pairs"
            span = f"score {sc[0]:.3f}" if len(sc) == 1 else f"scores {min(sc):.3f}–{max(sc):.3f}"
            score_text = f"; {len(sc):,} written {plural} inside, {span}"
        parts.append(f"<h3>cluster {_e(cid)}: {len(m):,} records{_e(score_text)}</h3>")
        head = ["source", "id"] + (fields or ["record"])
        rows: list[list[Any]] = []
        for rec in shown_members[cid]:
            found = values.get(rec)
            if found is None:
                why = "(not shown)" if problem and not values else "(not found in the source any more)"
                cells: list[Any] = [("html", f'<span class="note">{why}</span>')] + [""] * (len(head) - 3)
            else:
                cells = [("html", f'<span class="rec">{_e(_snippet(found.get(f)))}</span>') for f in fields]
            rows.append([rec[0], ("html", _id_markup(rec[1])), *cells])
        table = _table(head, rows)
        cluster_points = [(rec[1], points[rec]) for rec in shown_members[cid] if rec in points]
        if cluster_points:
            plot = plot_points(cluster_points, report.get("shingler") or {})
            table = f'<div class="pair">{table}<div class="pts">{plot}</div></div>'
        parts.append(table)
        if len(m) > len(shown_members[cid]):
            parts.append(_note(f"… and {len(m) - len(shown_members[cid]):,} more records."))
    text = (
        f"Each field is shown up to its first {SNIPPET_CHARS} characters (whitespace folded); "
        "HTML columns as their page title and visible text."
    )
    if points:
        text += " Fields holding [x, y] points (minutiae) are also drawn, one colour per record, on the shingler's grid."
    parts.append(_note(text))
    return "".join(dist), "".join(parts)


def normalize_section(report: dict[str, Any]) -> str:
    """The ``normalize:`` chains' counts per field (report.json ``normalize``), and a warning for each field
    whose chain could not read more than :data:`~er_framework.normalize.UNPARSED_WARN_SHARE` of its present
    values (the same line as ``er run``'s summary)."""
    fields = report.get("normalize")
    if not isinstance(fields, dict) or not fields:
        return _note("No field is normalized (the job has no normalize: section).")
    warnings = [w for name, st in fields.items() if isinstance(st, dict) and (w := unparsed_warning(str(name), st)) is not None]
    rows = []
    for name, st in fields.items():
        if not isinstance(st, dict):
            continue
        share = st.get("unparseable_share")
        unparsed = st.get("unparseable")
        rows.append(
            [
                name,
                ", ".join(str(x) for x in st.get("steps") or []),
                st.get("values"),
                st.get("missing_before"),
                st.get("placeholders"),
                unparsed if not isinstance(share, (int, float)) or not unparsed else f"{unparsed:,} ({share:.1%})",
                ", ".join(repr(str(e)) for e in st.get("unparseable_examples") or []),
                st.get("distinct_before"),
                st.get("distinct_after"),
            ]
        )
    head = ["field", "chain", "values", "missing", "placeholders", "could not be read", "e.g.", "distinct before", "distinct after"]
    table = _table(head, rows, [False, False, True, True, True, True, False, True, True])
    note = _note(
        "Could not be read: present values (neither missing nor a placeholder such as N/A) that the chain turned into "
        "missing values; they take no part in matching. normalize_strict: true makes them an error."
    )
    return "".join(f'<p class="note warn">{_e(w)}</p>' for w in warnings) + table + note


def stages_section(report: dict[str, Any]) -> str:
    stages = report.get("stages") or []
    if not stages:
        return _note("report.json lists no stages.")
    longest = max((float(s.get("seconds") or 0.0) for s in stages), default=0.0) or 1.0
    skip = {"stage", "seconds", "peak_rss_mb", "peak_rss_scope"}
    rows = []
    for s in stages:
        sec = float(s.get("seconds") or 0.0)
        width = max(1, round(120 * sec / longest)) if sec > 0 else 0
        details = ", ".join(f"{k} {_fmt(v, 80)}" for k, v in s.items() if k not in skip)
        rows.append(
            [
                s.get("stage"),
                ("html", f"{_e(f'{sec:.4f}')}"),
                ("html", f'<span class="bar" style="width:{width}px"></span>'),
                s.get("peak_rss_mb"),
                s.get("peak_rss_scope"),
                details,
            ]
        )
    total = report.get("seconds_total")
    out = _table(
        ["stage", "seconds", "", "peak memory (MB)", "memory measured over", "details"], rows, [False, True, False, True, False, False]
    )
    if total is not None:
        out += _note(
            f"Total {_fmt(total)} s, peak memory {_fmt(report.get('peak_rss_mb'))} MB "
            "(the write stage is not in report.json: it is written during that stage)."
        )
    return out


def components_section(report: dict[str, Any]) -> str:
    parts = []
    for key, title in (("shingler", "shingler"), ("signature", "signature"), ("verifier", "verifier"), ("clusterer", "clusterer")):
        comp = report.get(key)
        if not comp:
            continue
        shown = {k: v for k, v in comp.items() if k != "type"}
        if key == "verifier" and isinstance(shown.get("per_field"), dict) and match_weights(report) is not None:
            shown["per_field"] = "m, u and weights: see Match weights per field"
        parts.append(f"<div><h3>{_e(title)}: {_e(comp.get('type', '?'))}</h3>" + _kv_table(shown.items()) + "</div>")
    sources = report.get("sources") or {}
    for name, stats in sources.items():
        if stats:
            parts.append(
                f"<div><h3>source {_e(name)}: reading</h3>"
                + _kv_table(stats.items() if isinstance(stats, dict) else [("stats", stats)])
                + "</div>"
            )
    return f'<div class="grid">{"".join(parts)}</div>' if parts else _note("report.json describes no components.")
