"""The job loader on hostile YAML (issue 18): bounded, every refusal a problem with its line.

``load_yaml`` is also what opens a job stored in an index, so these bounds
hold for an index from a stranger too.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from job_files import GOOD, expect_error, run_cli

from er_framework.components import Context
from er_framework.config.resolve import parse_job
from er_framework.config.yaml_load import MAX_ALIAS_NODES, MAX_DEPTH, MAX_NODES, fail, load_yaml
from er_framework.errors import ConfigError, Problem

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


def bomb(levels: int = 9, width: int = 9) -> str:
    out = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    out += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(out) + "\n"


def test_the_alias_bomb_is_refused_without_expanding_it() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data, _, problems = load_yaml(bomb(), "bomb.yaml")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert data is None
    assert [p.where for p in problems] == ["bomb.yaml:5"]
    assert f"the alias *a3 expands to more than {MAX_ALIAS_NODES:,} values" in problems[0].message
    assert grown_mb < 100, grown_mb


def test_aliases_within_the_budget_expand_with_lines() -> None:
    text = "base: &b {k: 5, lowercase: true}\nshingler:\n  <<: *b\n  type: char\n  k: 7\nboth: [*b, *b]\n"
    data, lines, problems = load_yaml(text, "j.yaml")
    assert problems == []
    assert data["shingler"] == {"k": 7, "lowercase": True, "type": "char"}  # its own keys win over merged ones
    assert data["both"] == [{"k": 5, "lowercase": True}] * 2
    assert data["both"][0] is not data["both"][1]  # expanded: a later change to one is not a change to the other
    assert lines[("shingler", "k")] == 5


def test_merge_of_a_list_takes_the_earlier_mapping_first() -> None:
    data, _, problems = load_yaml("a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\nc: {<<: [*a, *b], w: 3}\n", "j.yaml")
    assert problems == []
    assert data["c"] == {"x": 1, "y": 1, "z": 2, "w": 3}


def test_a_merge_of_a_scalar_is_a_problem() -> None:
    data, _, problems = load_yaml("a: &a [1]\nc: {<<: *a}\n", "j.yaml")
    assert data is None
    assert "a merge key '<<' takes a mapping or a list of mappings" in problems[0].message


@pytest.mark.parametrize("text", ["x: &a [1, *a]\n", "x: &a {b: 1, <<: *a}\n", "x: &a {b: [{c: *a}]}\n"])
def test_a_value_containing_itself_is_refused(text: str) -> None:
    data, _, problems = load_yaml(text, "j.yaml")
    assert data is None
    assert "an alias refers to the mapping or list that holds it" in problems[-1].message


@pytest.mark.parametrize("depth, ok", [(MAX_DEPTH, True), (MAX_DEPTH + 1, False), (10_000, False)])
def test_nesting_is_capped(depth: int, ok: bool) -> None:
    data, _, problems = load_yaml("[" * depth + "]" * depth, "j.yaml")
    assert (data is not None) == ok, problems
    if not ok:
        assert problems[0].where == "j.yaml:1"
        assert f"nested more than {MAX_DEPTH} levels deep" in problems[0].message


def test_block_nesting_is_capped_too() -> None:
    text = "".join("  " * i + "a:\n" for i in range(5_000)) + "  " * 5_000 + "a: 1\n"
    data, _, problems = load_yaml(text, "j.yaml")
    assert data is None
    line = int(problems[0].where.removeprefix("j.yaml:"))
    assert MAX_DEPTH - 1 <= line <= MAX_DEPTH + 1  # where the nesting passes the limit, not line 5,000


@pytest.mark.parametrize(
    "text, where, needle",
    [
        ("name: a\x00b\n", "j.yaml:1", "NUL (column 8)"),
        ("a: 1\nb: \x07\n", "j.yaml:2", "#x0007"),
    ],
)
def test_characters_yaml_does_not_allow_are_named_with_the_line(text: str, where: str, needle: str) -> None:
    data, _, problems = load_yaml(text, "j.yaml")
    assert data is None
    assert problems[0].where == where
    assert needle in problems[0].message


@pytest.mark.parametrize(
    "text, tag",
    [
        ("x: !!python/object/apply:os.system ['true']\n", "!!python/object/apply:os.system"),
        ("x: !!python/object:builtins.dict {a: 1}\n", "!!python/object:builtins.dict"),
        ("? !!python/name:os.system\n: 1\n", "!!python/name:os.system"),
        ("x: !!omap [{a: 1}]\n", "!!omap"),
        ("x: !!binary aGk=\n", "!!binary"),
        ("x: !!set {a}\n", "!!set"),
        ("x: !local 1\n", "!local"),
        ("x: !<tag:example.com,2000:app/foo> 1\n", "tag:example.com,2000:app/foo"),
    ],
)
def test_tags_are_named_never_dropped(text: str, tag: str) -> None:
    data, _, problems = load_yaml(text, "j.yaml")
    assert data is None
    assert [p.message for p in problems] == [f"tag {tag} is not allowed in a job file"]
    assert problems[0].where == "j.yaml:1"


def test_plain_tags_are_kept() -> None:
    data, _, problems = load_yaml("a: !!str 64\nb: !!int '7'\nc: !!float 1\nd: !!bool true\ne: !!null ''\n", "j.yaml")
    assert problems == []
    assert data == {"a": "64", "b": 7, "c": 1.0, "d": True, "e": None}


def test_an_impossible_date_is_a_problem_not_a_crash() -> None:
    data, _, problems = load_yaml("a: 1\nd: 2024-02-30\n", "j.yaml")
    assert data is None
    assert problems[0].where == "j.yaml:2"
    assert "cannot read the value '2024-02-30'" in problems[0].message


def test_complex_keys_are_problems_without_building_them() -> None:
    # a key made of aliases is not built (nor printed in the message): only its kind is named
    data, _, problems = load_yaml("a: &a [1]\n? [*a, *a]\n: 1\n? {b: *a}\n: 2\n", "j.yaml")
    assert data == {"a": [1]}
    assert [(p.where, p.message) for p in problems] == [
        ("j.yaml:2", "keys must be plain scalars, got a list"),
        ("j.yaml:4", "keys must be plain scalars, got a mapping"),
    ]


def test_a_config_error_always_has_a_problem() -> None:
    with pytest.raises(AssertionError):
        fail([])
    with pytest.raises(ConfigError, match="1 problem found"):
        fail([Problem(where="j.yaml", message="x")])


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_every_shipped_config_still_loads_and_parses(config: Path) -> None:
    data, _, problems = load_yaml(config.read_text(), str(config))
    assert problems == [] and isinstance(data, dict)
    job = parse_job(config)
    assert job.verifier is not None
    assert isinstance(job.context, Context)


@pytest.mark.parametrize("text", ["null\n", "~\n", "!\n", "--- \n...\n"])
def test_a_null_document_is_named(text: str) -> None:
    data, _, problems = load_yaml(text, "j.yaml")
    assert data is None and len(problems) == 1
    assert problems[0].message in ("the file holds no job: its only value is null", "the file is empty")


@pytest.mark.parametrize("n, ok", [(MAX_NODES - 3, True), (MAX_NODES - 2, False)])
def test_the_values_written_are_capped(n: int, ok: bool) -> None:
    # the top mapping, its key and the list are 3 nodes, then n numbers
    data, _, problems = load_yaml("x: [" + ",".join(["1"] * n) + "]\n", "j.yaml")
    assert (data is not None) == ok, problems
    if not ok:
        assert problems[0].message == f"more than {MAX_NODES:,} values (a job holds a few dozen): not a job file"


# ---------------------------------------------------------------------------
# through the er command


def test_duplicate_yaml_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("  k: 5", "  k: 5\n  k: 7"), "job.yaml:12", "duplicate key 'k' (first defined on line 11)")


def test_yaml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("fields: [text]", "fields: [text"), "not valid YAML", "job.yaml:")


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["validate", str(tmp_path / "none.yaml")], capsys)
    assert code == 2 and "none.yaml" in err and "no such file" in err
