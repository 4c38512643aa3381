"""Every bad-config and bad-input case: the message, the location, the fix, exit code 2, no output.

Problems found when the job is resolved (pass 3: components, their options and rules, fields, sources);
those of the YAML text are in test_yaml_load.py, those of the job schema in test_spec.py."""

from __future__ import annotations

import textwrap
import types
from pathlib import Path

import pytest
from job_files import GOOD, expect_error, run_cli, setup
from pydantic import BaseModel, Field

from er_framework import hookimpl
from er_framework.components import FieldRef, Normalizer, Params, Shingler
from er_framework.config.executor_params import DaskParams, LocalParams
from er_framework.config.resolve import field_references, parse_job
from er_framework.data import TokenSets
from er_framework.errors import ConfigError
from er_framework.executors import run_job
from er_framework.registry import build_registry


def test_good_config_validates_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = setup(tmp_path, GOOD)
    code, out, err = run_cli(["validate", str(job)], capsys)
    assert code == 0, err
    assert "valid" in out
    code, out, err = run_cli(["run", str(job), "--out", str(tmp_path / "o")], capsys)
    assert code == 0, err
    assert {p.name for p in (tmp_path / "o").iterdir()} == {"pairs.csv", "clusters.csv", "report.json", "report.html", "model.json"}


def test_unknown_component_name_suggests_and_lists_installed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("type: minhash", "type: minhsh"),
        "job.yaml:13",
        "signature.type",
        "unknown signature 'minhsh'",
        "did you mean 'minhash'?",
        "installed: bitvector, fss, minhash, oph",
    )


def test_unknown_component_parameter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("  k: 5", "  kk: 5"),
        "job.yaml:11",
        "shingler.kk",
        "shingler 'char' has no parameter 'kk'",
        "did you mean 'k'?",
    )


def test_out_of_range_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("num_perm: 128", "num_perm: 0"),
        "job.yaml:14",
        "signature.num_perm",
        "greater than or equal to 1",
        "(got 0)",
    )


def test_bands_times_rows_exceeds_num_perm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("  - type: lsh_bands", "  - type: lsh_bands\n    bands: 20\n    rows: 10"),
        "blockers[0]",
        "bands * rows = 20 * 10 = 200 exceeds num_perm = 128",
        "raise signature.num_perm",
    )


def test_bands_without_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("  - type: lsh_bands", "  - type: lsh_bands\n    bands: 20"), "set both 'bands' and 'rows'")


def test_threshold_unreachable_with_num_perm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("num_perm: 128", "num_perm: 4").replace("threshold: 0.8", "threshold: 0.2"),
        "blockers[0]",
        "num_perm",
    )


def test_missing_data_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("path: docs.jsonl", "path: nope.jsonl"),
        "job.yaml:6",
        "sources[0].path",
        "data file 'nope.jsonl' does not exist",
        "relative to the YAML file",
    )


def test_missing_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("fields: [text]", "fields: [txt]"), "docs.jsonl", "txt", "text")


def test_duplicate_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": "a", "text": "x one"}, {"id": "b", "text": "x two"}, {"id": "a", "text": "x three"}]
    expect_error(tmp_path, capsys, GOOD, "docs.jsonl", "'a'", "unique", rows=rows)


def test_mode_link_needs_two_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("mode: dedup", "mode: link"), "mode 'link' needs at least two sources, got 1")


def test_verifier_without_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path, capsys, GOOD.replace("threshold: 0.8\n", ""), "jaccard needs a threshold", "no threshold to choose bands and rows"
    )


def test_signature_needed_by_lsh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.replace("signature:\n  type: minhash\n  num_perm: 128\n", "")
    expect_error(tmp_path, capsys, text, "needs signatures, but no 'signature' section is set")


def test_all_problems_are_reported_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        GOOD.replace("mode: dedup", "mode: dedup\ncolour: red")
        .replace("type: char", "type: chars")
        .replace("num_perm: 128", "num_perm: -3")
        .replace("path: docs.jsonl", "path: missing.jsonl")
    )
    err = expect_error(tmp_path, capsys, text, "unknown key 'colour'", "unknown shingler 'chars'", "signature.num_perm", "missing.jsonl")
    assert "4 problems found" in err


def test_no_output_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = setup(tmp_path, GOOD)
    code, _, err = run_cli(["run", str(job), "--quiet"], capsys)
    assert code == 2 and "no output folder given" in err and "--out" in err


def test_tune_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["tune", "--threshold", "1.4"], capsys)
    assert code == 2 and "--threshold" in err and "Traceback" not in err


def test_component_field_not_read_by_any_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("  k: 5", "  k: 5\n  fields: [txt]"),
        "job.yaml:12",
        "shingler.fields[0]",
        "field 'txt' is not read by any source",
        "did you mean 'text'?",
    )


def test_html_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.replace(
        "    fields: [text]\n", "    fields: [text]\n    html: {fields: [body], boilerplate: drop, language: Englsh, colour: 1}\n"
    )
    expect_error(
        tmp_path,
        capsys,
        text,
        "sources[0].html.colour",
        "html field 'body' is not one of the source's fields",
        "Englsh",
        "did you mean 'English'?",
    )


def test_unknown_key_in_a_nested_parameter_lists_the_nested_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.replace("  type: connected_components", "  type: louvain\n  split: {min_cutt: 2}")
    expect_error(tmp_path, capsys, text, "cluster.split.min_cutt", "did you mean 'min_cut'?", "allowed: bridge_max_score")


def test_wrong_shapes_are_reported_once_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.replace("blockers:\n  - type: lsh_bands\n", "blockers: {type: lsh_bands}\n").replace(
        "verifier:\n  type: jaccard\n", "verifier: jaccard\n"
    )
    err = expect_error(tmp_path, capsys, text, "blockers must be a list", "verifier: expected a mapping with 'type: …'")
    assert "2 problems found" in err


# ---------------------------------------------------------------------------
# normalizers from plugins, and field references found by their type


class KeepParams(Params):
    length: int = Field(default=3, ge=1, strict=True, description="characters kept")
    upper: bool = Field(default=False, strict=True, description="upper-case the result")


class KeepFirst(Normalizer[KeepParams]):
    """A third-party normalizer: the first ``length`` characters of each word."""

    name = "keep_first"
    summary = "first characters of each word"
    Params = KeepParams

    def per_value(self):
        p = self.params

        def f(s: str) -> str:
            out = " ".join(w[: p.length] for w in s.split())
            return out.upper() if p.upper else out

        return f


class Inner(BaseModel):
    src: FieldRef
    label: str = "x"  # not a field: never checked


class OddParams(Params):
    columnz: list[FieldRef] = Field(default_factory=list)
    pick: Inner | None = None
    weights: dict[FieldRef, int] = Field(default_factory=dict)
    fields: list[str] = Field(default_factory=list, description="named like a field list, typed as plain strings")


class OddShingler(Shingler):
    """Params that name columns under unusual names: checked by their type."""

    name = "odd_shingler"
    Params = OddParams

    def shingle(self, records):  # pragma: no cover - never run
        return TokenSets.from_sets([[]] * len(records))


PLUGIN = types.ModuleType("erx_test_plugin")
PLUGIN.er_register_normalizers = hookimpl(lambda: [KeepFirst])  # type: ignore[attr-defined]
PLUGIN.er_register_shinglers = hookimpl(lambda: [OddShingler])  # type: ignore[attr-defined]


def plugin_registry():
    return build_registry(extra_modules=[PLUGIN], autoload=False)


NORMALIZED = GOOD + "normalize:\n  text: [strip, {type: keep_first, length: 2, upper: true}]\n"


def test_a_plugin_normalizer_is_usable_from_yaml_with_options(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": "  quick brown fox "}, {"id": "b", "text": "n/a"}, {"id": "c", "text": "qu br fo"}]
    job = parse_job(setup(tmp_path, NORMALIZED, rows), registry=plugin_registry())
    chain = job.normalizers["text"]
    assert [s.cls.name for s in chain] == ["strip", "keep_first"]
    assert chain[1].params == KeepParams(length=2, upper=True) and chain[1].yaml_path == "normalize.text[1]"
    assert job.resolved()["normalize"] == {"text": [{"type": "strip"}, {"type": "keep_first", "length": 2, "upper": True}]}
    res = run_job(job, write=False)
    assert res.records.fields["text"] == ["QU BR FO", None, "QU BR FO"]
    assert res.report["normalize"]["text"]["placeholders"] == 1
    # the two records with the same key are one cluster
    assert len(set(res.labels.tolist())) == 2


def _problems(tmp_path: Path, text: str, rows: list[dict] | None = None) -> str:
    with pytest.raises(ConfigError) as exc:
        parse_job(setup(tmp_path, text, rows), registry=plugin_registry())
    rendered = str(exc.value)
    assert "Traceback" not in rendered
    return rendered


def test_a_bad_option_of_a_plugin_normalizer_names_file_line_and_option(tmp_path: Path) -> None:
    text = GOOD + "normalize:\n  text:\n    - strip\n    - {type: keep_first, lenght: 2}\n    - {type: keep_first, length: 0}\n"
    err = _problems(tmp_path, text)
    assert "job.yaml:24: normalize.text[1].lenght: normalizer 'keep_first' has no option 'lenght'" in err
    assert "did you mean 'length'? valid options: length, upper" in err
    assert "job.yaml:25: normalize.text[2].length: option 'length' of normalizer 'keep_first' must be >= 1, got 0" in err
    assert "fix: use a value >= 1" in err
    err = _problems(tmp_path, GOOD + "normalize: {text: {type: keep_first, upper: yes please}}\n")
    assert "job.yaml:21: normalize.text.upper: option 'upper' of normalizer 'keep_first' must be a boolean" in err


def test_an_unknown_normalizer_suggests_the_closest(tmp_path: Path) -> None:
    err = _problems(tmp_path, GOOD + "normalize:\n  text: [strip, keep_frist]\n")
    assert "job.yaml:22: normalize.text[1]: unknown normalizer 'keep_frist'" in err
    assert "did you mean 'keep_first'?" in err and "installed: address, date" in err
    err = _problems(tmp_path, GOOD + "normalize:\n  text: {keep_first: {length: 2}}\n")
    assert "needs a 'type' key" in err and "write {type: keep_first, ...options}" in err


def test_normalizers_are_checked_even_when_the_schema_fails(tmp_path: Path) -> None:
    err = _problems(tmp_path, GOOD.replace("mode: dedup", "mode: dedupe") + "normalize: {text: txet}\n")
    assert "dedupe" in err and "unknown normalizer 'txet'" in err and "did you mean 'text'?" in err


ODD = GOOD.replace(
    "  type: char\n  k: 5\n",
    "  type: odd_shingler\n  columnz: [text, txt]\n  pick: {src: body, label: txt}\n"
    "  weights: {tetx: 2, text: 1}\n  fields: [not_a_column]\n",
)


def test_field_references_are_found_by_type_not_by_name(tmp_path: Path) -> None:
    err = _problems(tmp_path, ODD)
    assert "shingler.columnz[1]: field 'txt' is not read by any source" in err
    assert "shingler.pick.src: field 'body' is not read by any source" in err
    assert "shingler.weights.tetx: field 'tetx' is not read by any source" in err and "did you mean 'text'?" in err
    assert "job.yaml:11: shingler.columnz[1]" in err and "job.yaml:13: shingler.weights.tetx" in err
    # a plain-string parameter named 'fields', and a string inside a nested model, are not field references
    assert "not_a_column" not in err and "'x'" not in err and "label" not in err
    assert "3 problems found" in err


def test_field_references_of_the_built_in_components() -> None:
    reg = build_registry(autoload=False)
    fh = reg.components["blocker"]["field_hash"].cls
    sn = reg.components["blocker"]["sorted_neighbourhood"].cls
    fs = reg.components["verifier"]["field_score"].cls
    grid = reg.components["shingler"]["grid_cells"].cls
    assert field_references(fh.Params(fields=[["first", "last"], "zip"], max_block_size=9)) == [
        (("fields", 0, 0), "first"),
        (("fields", 0, 1), "last"),
        (("fields", 1), "zip"),
    ]
    assert field_references(sn.Params(key=["last", "first"], prefix={"first": 1})) == [
        (("key", 0), "last"),
        (("key", 1), "first"),
        (("prefix", "first"), "first"),
    ]
    refs = field_references(fs.Params(fields=[{"field": ["a", "b"], "name": "ab"}, {"field": "c"}]))
    assert refs == [(("fields", 0, "field", 0), "a"), (("fields", 0, "field", 1), "b"), (("fields", 1, "field"), "c")]
    assert field_references(grid.Params(field="x", y_field="y", normalized=True)) == [(("field",), "x"), (("y_field",), "y")]
    assert field_references(OddParams(columnz=["a"], pick=Inner(src="b", label="c"), weights={"d": 1}, fields=["e"])) == [
        (("columnz", 0), "a"),
        (("pick", "src"), "b"),
        (("weights", "d"), "d"),
    ]


def test_workers_setting_is_validated(tmp_path: Path) -> None:
    from er_framework.errors import ConfigError

    cfg = tmp_path / "w.yaml"
    cfg.write_text("sources: [{name: d, path: x.jsonl}]\nworkers: 0\nverifier: {type: jaccard, threshold: 0.5}\n")
    with pytest.raises(ConfigError, match="workers must be a whole number from 1 to 1024 or 'auto'"):
        parse_job(cfg)


# ---------------------------------------------------------------------------
# the executor's options, checked by the executor's own model


def _executor_problems(tmp_path: Path, executor: str) -> list[tuple[str, str, str, str]]:
    """(where, path, message, fix) of each problem of GOOD with ``executor:`` written as given (its first line is line 21)."""
    with pytest.raises(ConfigError) as exc:
        parse_job(setup(tmp_path, GOOD + "executor:\n" + textwrap.indent(textwrap.dedent(executor), "  ")))
    return [(p.where.rsplit("/", 1)[-1], p.path, p.message, p.fix) for p in exc.value.problems]


def test_the_executor_options_are_validated_into_the_job(tmp_path: Path) -> None:
    assert parse_job(setup(tmp_path, GOOD)).executor_params == LocalParams()
    job = parse_job(setup(tmp_path, GOOD + "executor: {type: dask, address: 'tcp://h:8786', partition_mb: 8}\n"))
    assert job.spec.executor.type == "dask"
    assert job.executor_params == DaskParams(address="tcp://h:8786", partition_mb=8.0)


def test_an_unknown_option_of_the_local_executor_is_named_with_path_line_and_did_you_mean(tmp_path: Path) -> None:
    assert _executor_problems(tmp_path, "type: local\npartition_mb: 4\n") == [
        (
            "job.yaml:23",
            "executor.partition_mb",
            "unknown key 'partition_mb'",
            "'partition_mb' is an option of executor dask, not of 'local'; allowed keys of executor 'local': type",
        )
    ]
    # without a type the job runs locally: a misspelt 'type' is found
    assert _executor_problems(tmp_path, "typ: dask\n") == [
        ("job.yaml:22", "executor.typ", "unknown key 'typ'", "did you mean 'type'? allowed keys of executor 'local': type")
    ]


def test_an_unknown_option_of_the_dask_executor_is_named_with_path_line_and_did_you_mean(tmp_path: Path) -> None:
    found = _executor_problems(
        tmp_path,
        """\
        type: dask
        local_cluster:
          n_worker: 2
        partiton_mb: 4
    """,
    )
    assert [(where, path, message) for where, path, message, _ in found] == [
        ("job.yaml:25", "executor.partiton_mb", "unknown key 'partiton_mb'"),
        ("job.yaml:24", "executor.local_cluster.n_worker", "unknown key 'n_worker'"),
    ]
    assert found[0][3] == (
        "did you mean 'partition_mb'? allowed keys of executor 'dask': address, cluster_on, local_cluster, partition_mb, type"
    )
    assert found[1][3].startswith("did you mean 'n_workers'?")


def test_bad_values_of_the_dask_executor_are_named_once_each(tmp_path: Path) -> None:
    found = _executor_problems(tmp_path, "type: dask\naddress: nope\npartition_mb: '64'\ncluster_on: both\n")
    assert [(where, path) for where, path, _, _ in found] == [
        ("job.yaml:24", "executor.partition_mb"),
        ("job.yaml:23", "executor.address"),
        ("job.yaml:25", "executor.cluster_on"),
    ]
    assert '"64" is a string; expected a number' in found[0][2] and "not an address of the form" in found[1][2]
    assert [(path, message) for _, path, message, _ in _executor_problems(tmp_path, "type: dask\npartition_mb: 0\n")] == [
        ("executor.partition_mb", "Input should be greater than 0 (got 0)")
    ]
    found = _executor_problems(tmp_path, "type: dask\npartition_mb: 8\n")
    assert [(where, path) for where, path, _, _ in found] == [("job.yaml:22", "executor")]  # the mapping's first line
    assert "needs exactly one of 'address' (a running scheduler) or 'local_cluster'" in found[0][2]


def test_an_unknown_executor_is_reported_once_with_its_options_unchecked(tmp_path: Path) -> None:
    found = _executor_problems(tmp_path, "type: dsak\nlocal_cluster: {n_workers: 2}\n")
    assert [(where, path) for where, path, _, _ in found] == [("job.yaml:22", "executor.type")]
    assert "no executor 'dsak'; did you mean 'dask'?" in found[0][2]


def test_the_executor_options_are_checked_even_when_the_schema_fails(tmp_path: Path) -> None:
    text = GOOD.replace("mode: dedup", "mode: dedupe") + "executor: {type: dask, adress: 'tcp://h:1'}\n"
    with pytest.raises(ConfigError) as exc:
        parse_job(setup(tmp_path, text))
    assert [p.path for p in exc.value.problems] == ["mode", "executor.adress", "executor"]


# ---------------------------------------------------------------------------
# from the job loader's tests: problems found when the job is resolved


def test_missing_verifier_is_one_named_problem(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"id": 1, "t": "x"}\n')
    path = tmp_path / "j.yaml"
    path.write_text("sources: [{name: d, path: d.jsonl, fields: [t]}]\nblockers: [{type: field_hash, fields: [t]}]\n")
    with pytest.raises(ConfigError) as info:
        parse_job(path)
    assert [(p.path, p.message) for p in info.value.problems] == [("verifier", "required — the job has none: every job chooses a verifier")]
    assert "verifier: {type: jaccard}" in info.value.problems[0].fix


def test_a_schema_error_keeps_the_threshold_for_component_checks(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"id": 1, "t": "x"}\n')
    path = tmp_path / "j.yaml"
    path.write_text(
        "threshold: 0.8\nmode: dedupp\nsources: [{name: d, path: d.jsonl, fields: [t]}]\n"
        "shingler: {type: char}\nsignature: {type: minhash}\nblockers: [{type: lsh_bands}]\nverifier: {type: jaccard}\n"
    )
    with pytest.raises(ConfigError) as info:
        parse_job(path)
    assert [p.path for p in info.value.problems] == ["mode"]


def test_an_empty_cluster_section_is_named(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"id": 1, "t": "x"}\n')
    path = tmp_path / "j.yaml"
    path.write_text(
        "sources: [{name: d, path: d.jsonl, fields: [t]}]\nshingler: {type: char}\n"
        "blockers: [{type: field_hash, fields: [t]}]\nverifier: {type: jaccard, threshold: 0.5}\ncluster:\n"
    )
    with pytest.raises(ConfigError) as info:
        parse_job(path)
    assert [(p.where, p.path, p.message) for p in info.value.problems] == [
        (f"{path}:5", "cluster", "it is empty: the job must choose a clusterer here")
    ]


def test_a_yaml_mapping_that_is_no_job_is_not_quoted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shadow = tmp_path / "shadow"
    shadow.write_text("root:SECRET-HASH:20228:0:99999:7:::\nbin:*:20228:0:99999:7:::\n", encoding="utf-8")
    code, out, err = run_cli(["validate", str(shadow)], capsys)
    assert code == 2 and "not an er job file" in err
    assert "SECRET-HASH" not in err and "SECRET-HASH" not in out


def test_a_job_with_a_typo_in_every_key_is_still_quoted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("sourcse: []\n", encoding="utf-8")
    code, _, err = run_cli(["validate", str(job)], capsys)
    assert code == 2 and "did you mean 'sources'" in err


def test_looks_like_job() -> None:
    from er_framework.config.resolve import looks_like_job

    assert looks_like_job({"sources": []}) and looks_like_job({"verifer": {}})
    assert not looks_like_job({"root:*:1:2": None}) and not looks_like_job({}) and not looks_like_job({1: 2})


# ---------------------------------------------------------------- columns:, csv: and the header check (issue 33)

DOCS_CSV = [["id", "body", "title"]] + [[f"r{i}", f"document number {i} with some text", f"t{i}"] for i in range(5)]


def write_rows(path: Path, rows: list[list[str]], delimiter: str = ",", encoding: str = "utf-8") -> Path:
    import csv

    with open(path, "w", encoding=encoding, newline="") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


def csv_job(source: str) -> str:
    """GOOD with its source replaced by ``source`` (YAML lines of one source, indented by four)."""
    head, rest = GOOD.split("sources:\n", 1)
    return (
        head + "sources:\n  - name: docs\n" + textwrap.indent(textwrap.dedent(source), "    ") + "shingler:" + rest.split("shingler:", 1)[1]
    )


def test_validate_reports_every_missing_column_at_its_yaml_path_and_run_says_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_rows(tmp_path / "a.csv", DOCS_CSV)
    yaml = csv_job("""\
        path: a.csv
        id: key
        fields: [text, titel]
        columns: {text: bdy}
        """)
    err = expect_error(
        tmp_path,
        capsys,
        yaml,
        "sources[0].id: id column 'key' is not in the file a.csv (source 'docs'); columns present: body, id, title",
        "sources[0].columns.text: column 'bdy' (field text, via columns:) is not in the file a.csv",
        "did you mean 'body'?",
        "sources[0].fields[1]: column 'titel' is not in the file a.csv",
        "did you mean 'title'?",
        command="validate",
    )
    assert "3 problems found" in err
    run_err = expect_error(tmp_path, capsys, yaml, "column 'bdy' (field text, via columns:) is not in the file a.csv")
    assert "sources[0].columns.text" in run_err


def test_a_mapped_csv_job_runs_as_the_job_over_the_file_renamed_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [["id", "body"]] + [[f"r{i}", "the same words every time" if i < 3 else f"other text {i}"] for i in range(6)]
    write_rows(tmp_path / "renamed.csv", [["id", "text"], *rows[1:]])
    write_rows(tmp_path / "latin.csv", [["id", "body"], *[[i, t.replace("words", "wördß")] for i, t in rows[1:]]], ";", "latin-1")
    write_rows(tmp_path / "utf8.csv", [["id", "body"], *[[i, t.replace("words", "wördß")] for i, t in rows[1:]]])
    outs = {}
    for name, source in {
        "by_hand": "path: renamed.csv\nfields: [text]\n",
        "mapped": "path: utf8.csv\nfields: [text]\ncolumns: {text: body}\n",
        "latin": 'path: latin.csv\nfields: [text]\ncolumns: {text: body}\ncsv: {delimiter: ";", encoding: latin-1}\n',
    }.items():
        if name == "by_hand":
            write_rows(tmp_path / "renamed.csv", [["id", "text"], *[[i, t.replace("words", "wördß")] for i, t in rows[1:]]])
        job = tmp_path / f"{name}.yaml"
        job.write_text(csv_job(source))
        code, _, err = run_cli(["validate", str(job)], capsys)
        assert code == 0, err
        code, _, err = run_cli(["run", str(job), "--out", str(tmp_path / name), "--quiet"], capsys)
        assert code == 0, err
        outs[name] = (tmp_path / name / "pairs.csv").read_bytes(), (tmp_path / name / "clusters.csv").read_bytes()
    assert outs["mapped"] == outs["by_hand"] == outs["latin"]
    assert outs["by_hand"][0].count(b"\n") == 4  # a header and the three pairs of the three copies


def test_validate_checks_the_first_file_of_a_glob_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "p1.csv", [["id", "body"], ["a", "x"]])
    write_rows(tmp_path / "p2.csv", [["id", "text"], ["b", "y"]])
    expect_error(
        tmp_path,
        capsys,
        csv_job("path: p*.csv\nfields: [text]\n"),
        "column 'text' is not in the file p1.csv (the first of 2 files matching 'p*.csv')",
        command="validate",
    )


def test_a_semicolon_file_without_csv_settings_is_refused_by_validate_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_rows(tmp_path / "a.csv", DOCS_CSV, ";")
    expect_error(tmp_path, capsys, csv_job("path: a.csv\nfields: [body]\n"), 'set csv: {delimiter: ";"} on the source', command="validate")


@pytest.mark.parametrize(
    ("source", "needles"),
    [
        ("path: docs.jsonl\nfields: [text]\ncsv: {delimiter: ';'}\n", ["sources[0].csv: csv: describes a CSV or TSV file", "a jsonl file"]),
        ("path: a.csv\nfields: [body]\ncsv: {encoding: klingon}\n", ["sources[0].csv.encoding: unknown encoding 'klingon'"]),
        (
            'path: a.csv\nfields: [body]\ncsv: {delimiter: "\'", quote: "\'"}\n',
            ["sources[0].csv: csv: delimiter and quote are both", "must differ"],
        ),
        ("path: a.csv\nfields: [body]\ncsv: {encoding: utf-16}\n", ["cannot be read as utf-16", "utf-16-le"]),
    ],
)
def test_csv_settings_that_cannot_apply_are_config_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, needles: list[str]
) -> None:
    write_rows(tmp_path / "a.csv", DOCS_CSV)
    expect_error(tmp_path, capsys, csv_job(source), *needles, command="validate")


def test_jsonl_parquet_and_page_folder_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    expect_error(
        tmp_path, capsys, csv_job("path: docs.jsonl\nfields: [txt]\n"), "column 'txt' is not in the file docs.jsonl", command="validate"
    )
    pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), tmp_path / "a.parquet")
    expect_error(
        tmp_path, capsys, csv_job("path: a.parquet\nfields: [text]\ncolumns: {text: bod}\n"), "did you mean 'body'?", command="validate"
    )
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "a.html").write_text("<p>x</p>")
    expect_error(
        tmp_path,
        capsys,
        csv_job("path: pages\nfields: [text]\n"),
        "column 'text' is not in the page folder pages (source 'docs'); columns present: html, id",
        command="validate",
    )
    job = setup(tmp_path, csv_job("path: pages\nfields: [text]\ncolumns: {text: html}\n"))
    assert parse_job(job).spec.sources[0].column_of("text") == "html"


def test_a_jsonl_key_absent_from_the_first_objects_of_a_longer_file_is_left_to_the_reader(tmp_path: Path) -> None:
    from er_framework.io.source_header import HEADER_OBJECTS

    rows = [{"id": f"r{i}"} for i in range(HEADER_OBJECTS)] + [{"id": "late", "text": "x"}]
    job = setup(tmp_path, GOOD, rows)  # "text" first appears after the first objects: it may be a key left out when null
    parse_job(job)
