"""Fixtures of the index tests."""

from __future__ import annotations

import pytest
from index_docs import doc_texts


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return doc_texts(60, 150, seed=11)
