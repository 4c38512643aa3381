"""Metrics of a run against ground truth (pairwise, B-cubed, pair completeness)."""
