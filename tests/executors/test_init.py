"""Executors by name: the built-ins, one installed through an entry point, unknown names."""

from __future__ import annotations

import importlib.metadata as md
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from er_framework import Params, registry
from er_framework.config.resolve import parse_job
from er_framework.errors import ConfigError, PluginError
from er_framework.executors import get_executor, run_job
from er_framework.executors.local import run_local

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "configs" / "data" / "docs.jsonl"


def _job(tmp: Path, executor: str) -> Path:
    cfg = tmp / "job.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        threshold: 0.8
        sources: [{{name: docs, path: {DOCS}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 5}}
        signature: {{type: fss, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        executor: {executor}
    """),
        encoding="utf-8",
    )
    return cfg


def _with_entry_points(monkeypatch: pytest.MonkeyPatch, *eps: md.EntryPoint) -> None:
    real = md.entry_points

    def entry_points(**kw: Any) -> Any:
        if kw.get("group") == registry.EXECUTOR_GROUP:
            return list(eps)
        return real(**kw)

    monkeypatch.setattr(registry.md, "entry_points", entry_points)


def test_built_in_executors_by_name() -> None:
    assert get_executor("local") is run_local
    assert set(registry.executor_table()) >= {"local", "dask"}


def test_an_unknown_executor_is_a_config_error_with_did_you_mean(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse_job(_job(tmp_path, "{type: dsak, local_cluster: {n_workers: 2}}"))
    text = str(info.value)
    assert "no executor 'dsak'" in text and "did you mean 'dask'?" in text and "job.yaml:" in text


def test_an_executor_installed_through_an_entry_point_runs_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "my_executor.py"
    module.write_text(
        textwrap.dedent("""
        from er_framework.executors.local import run_local
        CALLS = []

        def run(job, out_dir=None, *, progress=None, write=True):
            CALLS.append(job.spec.executor.type)
            return run_local(job, out_dir, progress=progress, write=write)
    """),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _with_entry_points(monkeypatch, md.EntryPoint("mine", "my_executor:run", registry.EXECUTOR_GROUP))
    job = parse_job(_job(tmp_path, "{type: mine}"))
    result = run_job(job, tmp_path / "out")
    assert sys.modules["my_executor"].CALLS == ["mine"]
    assert result.report["executor"]["type"] == "mine"
    run_local(parse_job(_job(tmp_path, "{type: local}")), tmp_path / "local")
    assert (tmp_path / "out" / "pairs.csv").read_bytes() == (tmp_path / "local" / "pairs.csv").read_bytes()


def test_an_installed_executor_may_not_take_a_built_in_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_entry_points(monkeypatch, md.EntryPoint("dask", "elsewhere:run", registry.EXECUTOR_GROUP))
    with pytest.raises(PluginError, match="takes the built-in name 'dask'"):
        registry.executor_table()


def test_an_executor_that_cannot_be_loaded_is_a_plugin_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with_entry_points(
        monkeypatch,
        md.EntryPoint("gone", "no_such_module_for_er:run", registry.EXECUTOR_GROUP),
        md.EntryPoint("typo", "er_framework.executors.local:run_lcoal", registry.EXECUTOR_GROUP),
    )
    with pytest.raises(PluginError, match="executor 'gone'.*cannot be loaded: ModuleNotFoundError"):
        get_executor("gone")
    with pytest.raises(PluginError, match="executor 'typo'.*cannot be loaded: AttributeError"):
        run_job(parse_job(_job(tmp_path, "{type: typo}")), tmp_path / "out")
    assert not (tmp_path / "out").exists()


QUEUED = textwrap.dedent("""
    from pydantic import Field

    from er_framework import Params
    from er_framework.executors.local import run_local

    SEEN = []


    class QueueParams(Params):
        \"\"\"Sends the job to a queue.\"\"\"

        queue: str = Field(description="the queue the job is sent to")
        retries: int = Field(default=0, ge=0, le=5, description="times a failed job is sent again")


    def run(job, out_dir=None, *, progress=None, write=True):
        SEEN.append(job.executor_params)
        return run_local(job, out_dir, progress=progress, write=write)


    run.Params = QueueParams
""")


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, name: str = "queued") -> None:
    """``module`` written from ``source`` and installed as the executor ``name`` (its function ``run``)."""
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    _with_entry_points(monkeypatch, md.EntryPoint(name, f"{module}:run", registry.EXECUTOR_GROUP))


def test_an_installed_executor_validates_its_own_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, monkeypatch, "queued_executor", QUEUED)
    model = registry.executor_params_model("queued")  # imports the executor's module
    module = sys.modules["queued_executor"]
    assert model is module.QueueParams
    job = parse_job(_job(tmp_path, "{type: queued, queue: fast, retries: 2}"))
    assert job.executor_params == module.QueueParams(queue="fast", retries=2)
    run_job(job, tmp_path / "out")
    assert [module.QueueParams(queue="fast", retries=2)] == module.SEEN
    # unknown keys with did-you-mean, bad values and missing keys: each with its YAML path and line
    cfg = _job(tmp_path, "{type: queued}")
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("{type: queued}", "\n  type: queued\n  retrys: 2"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        parse_job(cfg)
    assert [(p.where.rsplit("/", 1)[-1], p.path, p.message) for p in info.value.problems] == [
        ("job.yaml:10", "executor.retrys", "unknown key 'retrys'"),
        ("job.yaml:9", "executor.queue", "required key 'queue' is missing"),
    ]
    assert info.value.problems[0].fix.startswith("did you mean 'retries'? allowed keys of executor 'queued': queue, retries, type")
    with pytest.raises(ConfigError) as info:
        parse_job(_job(tmp_path, "{type: queued, queue: fast, retries: 9}"))
    assert [(p.path, p.message) for p in info.value.problems] == [("executor.retries", "Input should be less than or equal to 5 (got 9)")]
    # and the JSON schema of job files describes them
    from er_framework.config.schema import job_json_schema

    options = {o["title"]: o for o in job_json_schema()["properties"]["executor"]["anyOf"]}
    assert set(options) >= {"executor local", "executor dask", "executor queued"}
    assert options["executor queued"]["required"] == ["type", "queue"]
    assert options["executor queued"]["properties"]["type"] == {"const": "queued", "description": "Sends the job to a queue."}


def test_an_installed_executor_without_a_params_model_takes_no_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(tmp_path, monkeypatch, "plain_executor", "from er_framework.executors.local import run_local as run\n")
    assert parse_job(_job(tmp_path, "{type: queued}")).executor_params == Params()
    with pytest.raises(ConfigError, match=r"executor.queue: unknown key 'queue'"):
        parse_job(_job(tmp_path, "{type: queued, queue: fast}"))


@pytest.mark.parametrize("model", ["dict", "pydantic.BaseModel", "type('Open', (Params,), {'model_config': {'extra': 'allow'}})"])
def test_an_options_model_must_be_params_that_forbid_unknown_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    module = f"bad_model_{abs(hash(model))}"
    _install(
        tmp_path,
        monkeypatch,
        module,
        "import pydantic\nfrom er_framework import Params\n"
        f"from er_framework.executors.local import run_local\n\ndef run(*a, **k):\n    return run_local(*a, **k)\n\n"
        f"run.Params = {model}\n",
    )
    with pytest.raises(PluginError, match="is not a subclass of er_framework.Params that forbids unknown keys"):
        parse_job(_job(tmp_path, "{type: queued}"))
