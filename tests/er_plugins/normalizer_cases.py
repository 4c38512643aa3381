"""Helpers of the built-in normalizer tests (tests/er_plugins/test_normalize_*.py): a normalizer over a column or
one value (a chain of one step, through :func:`er_framework.normalize.normalize_column`), and the idempotence
check with its strategy of texts."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from er_framework.normalize import normalize_column


def normalize(name: str, values, **options):
    """The normalizer ``name`` with ``options`` over a column (a chain of one step)."""
    return normalize_column(values, {"type": name, **options})


def norm(name: str, value, **options):
    return normalize(name, [value], **options)[0]


text_values = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40) | st.from_regex(
    r"[ A-Za-z0-9.,#'@+()/-]{0,40}", fullmatch=True
)


def idempotent(name: str, value: str, **options) -> None:
    once = norm(name, value, **options)
    assert once != ""
    if once is not None:
        assert norm(name, once, **options) == once, (value, once)


idempotence_settings = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
