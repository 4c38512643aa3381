"""Built-in golden rules: how a golden record's field is chosen among its cluster's values (``output.golden``).

Every rule works on all clusters at once (:class:`~er_framework.components.GoldenValues`) and never
chooses a missing value while the cluster has a present one. Ties go to the more trusted source (the
field's ``order:``, else the sources' order in the job), then to the first record in input order
(:meth:`~er_framework.components.GoldenValues.best`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from er_framework.components import GoldenRule, GoldenValues

__all__ = ["BUILTIN_GOLDEN_RULES", "Longest", "MostFrequent", "MostRecent", "SourcePriority", "value_counts"]

Int64Array = npt.NDArray[np.int64]


def value_counts(values: GoldenValues) -> npt.NDArray[np.float64]:
    """Per row, how many records of its cluster hold its value (0 for a missing value)."""
    n = len(values.codes)
    out = np.zeros(n, dtype=np.float64)
    grp, rows = values.with_value()
    if len(rows) == 0:
        return out
    codes = values.codes[rows]
    order = np.lexsort((codes, grp))
    g, c = grp[order], codes[order]
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (c[1:] != c[:-1])
    run = np.cumsum(new) - 1
    sizes = np.bincount(run)
    out[rows[order]] = sizes[run]
    return out


class MostFrequent(GoldenRule):
    name = "most_frequent"
    summary = "the value most records of the cluster hold (ties: source priority, then the first record)"

    def choose(self, values: GoldenValues) -> Int64Array:
        return values.best(value_counts(values))


class MostRecent(GoldenRule):
    name = "most_recent"
    summary = "the value of the record with the latest by: date (ISO 8601 or a number; records without one lose)"
    needs_by = True

    def choose(self, values: GoldenValues) -> Int64Array:
        if values.dates is None:
            raise ValueError("most_recent needs by: (the field holding each record's date)")
        return values.best(values.dates)


class Longest(GoldenRule):
    name = "longest"
    summary = "the longest value, in characters (ties: source priority, then the first record)"

    def choose(self, values: GoldenValues) -> Int64Array:
        return values.best(values.lengths.astype(np.float64))


class SourcePriority(GoldenRule):
    name = "source_priority"
    summary = "the first present value by source, most trusted first (order:, else the sources' order in the job)"

    def choose(self, values: GoldenValues) -> Int64Array:
        return values.best(np.zeros(len(values.codes), dtype=np.float64))


BUILTIN_GOLDEN_RULES: list[type[GoldenRule]] = [MostFrequent, MostRecent, Longest, SourcePriority]
