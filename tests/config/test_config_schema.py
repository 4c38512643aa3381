"""The job file's JSON Schema: one section per family of the family table, normalizers per field, executors
with their own options."""

from __future__ import annotations

from er_framework.components import FAMILIES
from er_framework.config.schema import job_json_schema
from er_framework.registry import build_registry


def test_every_family_has_its_job_keys() -> None:
    reg = build_registry(autoload=False)
    props = job_json_schema(reg)["properties"]
    for fam in FAMILIES.values():
        assert set(fam.sections) <= set(props)
    names = {opt["properties"]["type"]["const"] for opt in props["cluster"]["anyOf"]}
    assert names == set(reg.names("clusterer"))
    assert props["blockers"]["items"] == props["blocker"]


def test_normalize_is_per_field_names_or_steps_with_options() -> None:
    reg = build_registry(autoload=False)
    normalize = job_json_schema(reg)["properties"]["normalize"]
    assert normalize["type"] == "object" and "per field" in normalize["description"]
    step, chain = normalize["additionalProperties"]["anyOf"]
    assert chain == {"type": "array", "items": step}
    names, options = step["anyOf"]
    assert set(names["enum"]) == set(reg.names("normalizer"))
    phone = next(o for o in options["anyOf"] if o["properties"]["type"]["const"] == "phone")
    assert {"default_region", "min_digits"} <= set(phone["properties"]) and phone["additionalProperties"] is False


def test_the_executor_section_lists_each_executor_with_its_own_options() -> None:
    schema = job_json_schema(build_registry(autoload=False))
    options = {o["properties"]["type"]["const"]: o for o in schema["properties"]["executor"]["anyOf"]}
    assert set(options) >= {"local", "dask"}
    assert set(options["local"]["properties"]) == {"type"} and options["local"]["required"] == []  # the default
    dask = options["dask"]
    assert {"address", "local_cluster", "partition_mb", "cluster_on"} <= set(dask["properties"])
    assert dask["required"] == ["type"] and dask["additionalProperties"] is False
    ref = next(a["$ref"] for a in dask["properties"]["local_cluster"]["anyOf"] if "$ref" in a)
    assert ref.removeprefix("#/$defs/") in schema["$defs"]  # the nested model is in the document's $defs
    assert "ExecutorSpec" not in schema["$defs"]
