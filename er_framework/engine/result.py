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
from er_framework.engine.stages.clustering import Answer
from er_framework.engine.stages.exact import Exact
from er_framework.normalize import unparsed_warning

__all__ = ["Result", "unparsed_lines", "warning_lines"]


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
