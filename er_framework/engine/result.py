"""What a run produced, in memory, plus where it was written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Pairs, Records
from er_framework.engine.model import Model
from er_framework.engine.reprs import WARNINGS_SHOWN, box, kv_table, table_html, text_block
from er_framework.engine.stages.clustering import Answer
from er_framework.engine.stages.exact import Exact
from er_framework.normalize import unparsed_warning

__all__ = ["Result", "counts_text", "result_counts", "unparsed_lines", "warning_lines"]


def warning_lines(report: dict[str, Any]) -> list[str]:
    """The plausibility warnings of a run's report (``warnings``, :mod:`er_framework.engine.plausibility`),
    one ``warning: <message> - <fix>`` line each."""
    lines = []
    for w in report.get("warnings") or []:
        fix = f" - {w['fix']}" if w.get("fix") else ""
        lines.append(f"warning: {w['message']}{fix}")
    return lines


@dataclass
class Result:
    """Everything a run produced (in memory), plus where it was written.

    ``records`` holds every record's fields; the text columns of a large JSON
    Lines source (read file-backed, :data:`er_framework.engine.stages.reading.FILE_BACKED_MIN_BYTES`)
    are :class:`~er_framework.io.filetext.FileTexts`: sequences that read their
    values from the source file when asked (``col[i]``, ``col[a:b]``,
    iteration), so the file must stay as it was while they are used.
    """

    records: Records
    pairs: Pairs  # verified + exact-duplicate pairs, global indices, scored, normalized
    labels: npt.NDArray[np.int64]  # canonical cluster id per record
    report: dict[str, Any]
    outputs: dict[str, Path] = field(default_factory=dict)
    #: every candidate pair of the blockers (global indices) with its verifier score
    candidates: Pairs | None = None
    #: the pairs the job reports (pairs.csv): exact copies expanded, the final links of a pair-selecting clusterer
    answer: Answer | None = None
    #: the output tables by name (``pairs``, ``clusters``, ``verified_pairs``, ``candidates``, ``comparisons``),
    #: as columns: what was written, or would have been
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the verifier's comparisons of given pairs (global indices), where the run held the records
    explain_terms: Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None = None
    #: the exact-duplicate stage's groups (which records are copies of one text)
    exact: Exact | None = None
    #: the records with their fields as read (report.html's examples), where the run held them
    as_read: Records | None = None
    #: what the job learned (fitted by this run, or the saved model it applied): written as model.json
    model: Model | None = None

    def __repr__(self) -> str:
        """One line: the counts, the verifier and the threshold (never the data; no seconds: it is the same
        for the same run)."""
        return "<Result: " + counts_text([(k, v) for k, v in result_counts(self.report) if k != "seconds"]) + ">"

    def _repr_html_(self) -> str:
        """A notebook's view: the counts, the first rows of the pairs and the clusters, the warnings (escaped,
        small whatever the run's size: :mod:`er_framework.engine.reprs`)."""
        parts = [kv_table(result_counts(self.report))]
        for name in ("pairs", "clusters"):
            if self.tables.get(name):
                parts.append(table_html(f"{name}", self.tables[name]))
        warnings = warning_lines(self.report) + unparsed_lines(self.report)
        if warnings:
            more = [f"… {len(warnings) - WARNINGS_SHOWN} more warnings (report.json)"] if len(warnings) > WARNINGS_SHOWN else []
            parts.append(text_block("\n".join(warnings[:WARNINGS_SHOWN] + more), WARNINGS_SHOWN + 1))
        return box("er-framework result", "".join(parts))

    def summary(self) -> str:
        r = self.report
        lines = [
            f"records read      {r['records']['total']:>12,}",
            f"exact duplicates  {r['exact_duplicates']['records_collapsed']:>12,}",
            f"candidate pairs   {r['candidate_pairs']:>12,}",
            f"verified pairs    {r['verified_pairs']:>12,}",
            f"clusters          {r['clusters']['count']:>12,}  "
            f"(largest {r['clusters']['largest']}, singletons {r['clusters']['singletons']:,})",
            f"seconds           {r['seconds_total']:>12.2f}  peak memory {r['peak_rss_mb']:.0f} MB",
        ]
        link = r.get("link")
        if link and len(link["sources"]) == 2:
            a, b = link["sources"]
            lines.append(
                f"{b} records matched to {a}: {link['matched'][b]:,} of {r['records']['per_source'][b]:,} "
                f"(score >= {link['threshold']:g}, after clustering)"
            )
        elif link:  # three or more sources: each source's records matched to another source
            each = ", ".join(f"{name} {link['matched'][name]:,} of {r['records']['per_source'][name]:,}" for name in link["sources"])
            lines.append(f"records matched to another source: {each} (score >= {link['threshold']:g}, after clustering)")
        lines += unparsed_lines(r)
        lines += warning_lines(r)
        for path in self.outputs.values():
            lines.append(f"wrote {path}")
        database = r.get("outputs_database")
        if self.outputs and isinstance(database, dict):  # (written with the files)
            for table in database.get("tables", []):
                lines.append(f"wrote table {table['name']} ({table['rows']:,} row{'s' if table['rows'] != 1 else ''}) to {database['url']}")
        return "\n".join(lines)


def unparsed_lines(report: dict[str, Any]) -> list[str]:
    """The summary's warnings: one line per normalized field whose chain could not read more than
    :data:`~er_framework.normalize.UNPARSED_WARN_SHARE` of its present values (report.json ``normalize``)."""
    fields = report.get("normalize")
    if not isinstance(fields, dict):
        return []
    return [line for name, stats in fields.items() if (line := unparsed_warning(str(name), stats)) is not None]


def result_counts(report: dict[str, Any]) -> list[tuple[str, str]]:
    """What a result's ``repr`` and HTML view say of a run (from its report): records, candidate and verified pairs,
    clusters, the verifier, the threshold and the seconds; what the report lacks is left out."""
    clusters = report.get("clusters") or {}
    threshold = report.get("threshold") or {}
    verifier = report.get("verifier") or {}
    found: list[tuple[str, Any]] = [
        ("records", (report.get("records") or {}).get("total")),
        ("candidate pairs", report.get("candidate_pairs")),
        ("verified pairs", report.get("verified_pairs")),
        ("clusters", clusters.get("count")),
        ("verifier", verifier.get("type")),
        ("threshold", threshold.get("value")),
        ("seconds", report.get("seconds_total")),
    ]
    out: list[tuple[str, str]] = []
    for name, value in found:
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            out.append((name, f"{value:,}"))
        elif isinstance(value, float):
            out.append((name, f"{value:.2f}" if name == "seconds" else f"{value:g}"))
        else:
            out.append((name, str(value)))
    if report.get("warnings"):
        out.append(("warnings", str(len(report["warnings"]))))
    return out


def counts_text(counts: list[tuple[str, str]]) -> str:
    """:func:`result_counts` on one line: ``10,000 records, 4,999 verified pairs, …; verifier fellegi_sunter, …``."""
    numbers = [f"{v} {k}" for k, v in counts if k not in ("verifier", "threshold", "seconds", "warnings")]
    named = [f"{v} s" if k == "seconds" else f"{k} {v}" for k, v in counts if k in ("verifier", "threshold", "seconds", "warnings")]
    return ", ".join(numbers) + ("; " + ", ".join(named) if named else "")
