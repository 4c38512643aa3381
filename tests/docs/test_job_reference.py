"""docs/reference/job.md is what scripts/gen_job_reference.py makes of the job JSON Schema: it cannot drift."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.docs.doc_blocks import ROOT


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_job_reference", ROOT / "scripts" / "gen_job_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_job_reference_is_the_generated_one() -> None:
    committed = (ROOT / "docs" / "reference" / "job.md").read_text(encoding="utf-8")
    assert committed == generator().generate(), "docs/reference/job.md is stale: run python scripts/gen_job_reference.py"


def test_the_reference_names_every_key_and_component() -> None:
    from er_framework.config.schema import job_json_schema
    from er_framework.registry import build_registry

    registry = build_registry(autoload=False)
    schema = job_json_schema(registry)
    page = generator().render(schema)
    for key in schema["properties"]:
        assert f"| `{key}` |" in page
    for name, model in schema["$defs"].items():
        assert f"### {name}" in page
        for key in model.get("properties", {}):
            assert f"| `{key}` |" in page
    for family in ("shingler", "signature", "blocker", "verifier", "clusterer"):
        section = "cluster" if family == "clusterer" else family
        for name in registry.names(family):
            assert f"### `{section}: {name}`" in page
    assert "one of `dedup`, `link`, `link_and_dedup`" in page  # enum values
    assert "**required**" in page and "`0.95`" in page  # required keys, defaults
