"""Start-up of the ``er`` command: what ``import er_framework.cli.main``, ``er --help`` and ``er validate``
import (in a fresh interpreter), not how long they take (the benchmarks time them).

Each command imports only what it needs: the parser loads no numpy, pydantic or YAML; validation loads
the job's schema and the plugins, but no matplotlib, Dask, DataFrame library, reader, engine or report.
The lazy name tables of ``er_framework``, ``er_framework.kernels`` and ``er_framework.io`` are checked
against their ``__all__``.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
MARK = "MODULES:"

#: third-party packages no command below may import
NEVER = ("matplotlib", "dask", "distributed", "pandas", "polars", "splink", "tqdm", "faker", "selectolax", "lxml", "justext")
#: nor these modules of the framework (the engine, the executors, the readers, the report, the Python API)
NEVER_OURS = (
    "er_framework.engine",
    "er_framework.executors",
    "er_framework.report",
    "er_framework.api",
    "er_framework.index",
    "er_framework.evaluate",
    "er_framework.synth",
    "er_framework.io.data_file",
    "er_framework.io.csv_read",
    "er_framework.io.jsonl_read",
    "er_framework.io.parquet_read",
    "er_framework.io.source_files",
    "er_framework.io.table_file",
    "er_framework.io.output_write",
    "er_framework.io.output_read",
    "er_framework.io.frames",
    "er_framework.io.outputs",
    "er_framework.kernels.threshold",
    "er_framework.kernels.chains",
    "er_framework.kernels.df",
)
#: what the parser alone does not need either
NOT_FOR_THE_PARSER = (
    "numpy",
    "pydantic",
    "yaml",
    "pluggy",
    "scipy",
    "networkx",
    "pyarrow",
    "rapidfuzz",
    "er_framework.components",
    "er_framework.data",
    "er_framework.config",
    "er_framework.kernels",
    "er_framework.registry",
)
#: heavy imports the built-in plugins make only where they are used (clusterers: networkx and scipy.sparse,
#: records_scoring: pyarrow and scipy.special, news: justext and lxml for its stop lists, listed without them)
PLUGIN_HEAVY = ("networkx", "scipy", "pyarrow", "justext", "lxml")


def loaded_after(code: str) -> set[str]:
    """The modules in ``sys.modules`` after ``code`` ran in a fresh interpreter (from the repository root)."""
    script = f"import sys, json\n{code}\nprint({MARK!r} + json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith(MARK))
    return set(json.loads(line[len(MARK) :]))


def run_main(*argv: str) -> str:
    """Code running ``er ARGV`` in-process (argparse's exit for --help caught) and checking its exit code."""
    return (
        "from er_framework.cli.main import main\n"
        "try:\n"
        f"    code = main({list(argv)!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "assert code == 0, code\n"
    )


def found(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The names that are in ``modules``, themselves or by one of their submodules."""
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.fixture(scope="module")
def help_modules() -> set[str]:
    return loaded_after(run_main("--help"))


def test_the_names_checked_exist() -> None:
    """A module renamed away would make the checks below pass for nothing."""
    for name in NEVER_OURS + NOT_FOR_THE_PARSER:
        if name.startswith("er_framework"):
            assert importlib.util.find_spec(name) is not None, name
    for name in ("numpy", "pydantic", "yaml", "pluggy", "scipy", "networkx", "pyarrow", "rapidfuzz"):
        assert importlib.util.find_spec(name) is not None, name


def test_importing_the_command_loads_nothing_heavy() -> None:
    modules = loaded_after("import er_framework.cli.main")
    assert "er_framework.cli.main" in modules
    assert found(modules, NEVER + NEVER_OURS + NOT_FOR_THE_PARSER) == []


def test_help_loads_nothing_heavy(help_modules: set[str]) -> None:
    assert "er_framework.cli.validate" in help_modules  # every verb's parser was built
    assert found(help_modules, NEVER + NEVER_OURS + NOT_FOR_THE_PARSER) == []


def test_version_loads_nothing_heavy() -> None:
    """``er --version`` reads the installed metadata: no plugin, no contract, no engine is imported."""
    modules = loaded_after(run_main("--version"))
    assert found(modules, NEVER + NEVER_OURS + NOT_FOR_THE_PARSER + ("er_plugins",)) == []


def test_importing_the_package_loads_no_contract_until_used() -> None:
    modules = loaded_after("import er_framework\nassert er_framework.ErError.__name__ == 'ErError'")
    assert found(modules, ("numpy", "pydantic", "pluggy", "er_framework.components", "er_framework.data")) == []
    modules = loaded_after("from er_framework import Shingler, hookimpl")
    assert {"er_framework.components", "er_framework.hookspecs", "numpy", "pydantic"} <= modules
    assert found(modules, NEVER + NEVER_OURS) == []


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_validate_loads_no_engine_report_or_dataframes(config: Path) -> None:
    modules = loaded_after(run_main("validate", str(config.relative_to(ROOT))))
    assert {"er_framework.config.resolve", "er_framework.registry", "pydantic", "yaml"} <= modules  # it did validate
    assert found(modules, tuple(n for n in NEVER if n not in PLUGIN_HEAVY) + NEVER_OURS) == []


def test_validate_loads_no_plugin_heavy_modules() -> None:
    for config in ("configs/customers.yaml", "configs/news.yaml"):
        modules = loaded_after(run_main("validate", config))
        assert found(modules, PLUGIN_HEAVY) == [], config


def test_the_shipped_configs_are_found() -> None:
    assert len(CONFIGS) >= 5


@pytest.mark.parametrize("package", ["er_framework", "er_framework.kernels", "er_framework.io"])
def test_lazy_names_are_those_of_their_modules(package: str) -> None:
    """Every name of ``__all__`` resolves (to the object of the module that defines it), is listed by
    ``dir()``, and an unknown name is an AttributeError."""
    mod = importlib.import_module(package)
    for name in mod.__all__:
        value = getattr(mod, name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith(package) and home != package:
            assert getattr(importlib.import_module(home), name) is value, name
    assert set(mod.__all__) <= set(dir(mod))
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mod.no_such_name  # noqa: B018


def test_boilerplate_languages_are_justexts_stop_lists() -> None:
    """Listed from justext's folder without importing it; the same names as justext's own function."""
    modules = loaded_after("from er_framework.io.html import boilerplate_languages\nassert 'English' in boilerplate_languages()")
    assert "justext" not in modules
    import justext

    from er_framework.io.html import boilerplate_languages

    assert boilerplate_languages() == sorted(justext.get_stoplists())


def test_a_csv_record_job_loads_no_arrow_or_database_driver(tmp_path: Path) -> None:
    """``er run configs/febrl3.yaml`` (CSV in, CSV out, no golden records, no database) loads neither pyarrow
    (~36 MB of memory) nor a database driver: those come with the features that need them."""
    modules = loaded_after(run_main("run", str(ROOT / "configs" / "febrl3.yaml"), "--out", str(tmp_path / "out"), "-q"))
    assert found(modules, ("pyarrow", "duckdb", "psycopg")) == []
