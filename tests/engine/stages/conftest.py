"""The planted document corpus of the shingle and verify stage tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from er_framework.synth.documents import planted_documents


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = planted_documents(120, copies_per_family=(1, 3), words=(40, 120), edit_rates=(0.0, 0.1), n_singletons=300, seed=5)
    path = tmp_path_factory.mktemp("stream") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(d.texts)))
    return path
