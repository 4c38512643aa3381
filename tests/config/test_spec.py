"""The job schema (pass 2): unknown keys, wrong types, out-of-range values, numbers and booleans as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from job_files import GOOD, expect_error

from er_framework.config.spec import JobSpec, flow_yaml, type_problems


def test_unknown_top_level_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("threshold: 0.8", "treshold: 0.8\nthreshold: 0.8"),
        "job.yaml:3",
        "unknown key 'treshold'",
        "did you mean 'threshold'?",
    )


def test_threshold_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("threshold: 0.8", "threshold: 1.5"), "job.yaml:3", "threshold", "at most 1", "(got 1.5)")


def test_unknown_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("mode: dedup", "mode: dedupe"), "job.yaml:1", "mode", "'dedup'")


def test_type_problems_refuse_bools_and_strings_for_numbers_only() -> None:
    lines: dict = {}
    assert [p.path for p in type_problems({"threshold": True, "seed": "1", "chunk_records": 5.0}, JobSpec, (), "j", lines)] == [
        "threshold",
        "seed",
    ]
    assert type_problems({"threshold": 1, "workers": "auto", "name": "x", "mode": "link"}, JobSpec, (), "j", lines) == []
    found = type_problems({"exact_duplicates": {"enabled": 0}, "sources": [{"max_record_mb": "2"}]}, JobSpec, (), "j", lines)
    assert [(p.path, p.message) for p in found] == [
        ("exact_duplicates.enabled", "0 is a whole number; expected true or false"),
        ("sources[0].max_record_mb", '"2" is a string; expected a number'),
    ]


def test_flow_yaml_writes_one_line_of_yaml() -> None:
    import yaml

    value = [{"field": ["address", "city"], "name": "location", "levels": [100, 85.5]}, {"field": "a b", "x": None, "y": True}]
    text = flow_yaml(value)
    assert text == '[{field: [address, city], name: location, levels: [100, 85.5]}, {field: "a b", x: null, y: true}]'
    assert yaml.safe_load(text) == value
    assert flow_yaml("true") == '"true"' and flow_yaml("7up") == '"7up"' and yaml.safe_load(flow_yaml("7up")) == "7up"


def test_a_job_without_the_verifiers_fields_gets_one_problem_with_an_example(tmp_path: Path) -> None:
    """A verifier has no default fields: leaving them out is one problem naming the verifier, whose fix is
    an example list (not one problem per column of a default the user never wrote)."""
    import yaml

    from er_framework.config import parse_job
    from er_framework.errors import ConfigError

    (tmp_path / "p.csv").write_text("id,given,family\n1,ann,lee\n")
    for verifier, first in (("fellegi_sunter", "first_name"), ("field_score", "[first_name, last_name]")):
        (tmp_path / "job.yaml").write_text(
            "sources: [{name: p, path: p.csv, id: id, fields: [given, family]}]\n"
            "blockers: [{type: field_hash, fields: [family]}]\n"
            f"verifier: {{type: {verifier}, threshold: 0.5}}\n"
        )
        with pytest.raises(ConfigError) as got:
            parse_job(tmp_path / "job.yaml")
        assert len(got.value.problems) == 1
        problem = got.value.problems[0]
        assert problem.path == "verifier.fields" and problem.message == f"verifier {verifier!r} needs 'fields'"
        assert problem.fix.startswith(f"add e.g. fields: [{{field: {first},")
        example = yaml.safe_load(problem.fix.removeprefix("add e.g. fields: "))
        assert isinstance(example, list) and all("field" in f for f in example)


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        ("1e-6", "write 1.0e-6"),
        ("1e9", "write 1.0e+9"),
        ("2.5e3", "write 2.5e+3"),
        ("-1E-3", "write -1.0e-3"),
        ("0.5", "write 0.5 without quotes"),
    ],
)
def test_a_number_yaml_read_as_text_gets_a_fix_that_parses(text: str, fix: str) -> None:
    import yaml

    from er_framework.config.spec import numeric_text_hint

    hint = numeric_text_hint(text)
    assert hint.startswith(fix)
    written = hint.split()[1]
    assert isinstance(yaml.safe_load(written), float)  # the fix is a number to YAML


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
@pytest.mark.parametrize("where", ["top", "verifier", "auto"])
def test_nan_and_infinity_are_no_settings_value(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, where: str) -> None:
    if where == "top":
        text = GOOD.replace("threshold: 0.8", f"threshold: {value}")
    elif where == "verifier":
        text = GOOD.replace("  type: jaccard\n", f"  type: jaccard\n  threshold: {value}\n")
    else:
        text = GOOD.replace("threshold: 0.8", f"threshold: auto\nauto_threshold: {{low: 0.3, high: {value}}}")
    err = expect_error(tmp_path, capsys, text, "finite number", command="validate")
    assert "duplicate" not in err
