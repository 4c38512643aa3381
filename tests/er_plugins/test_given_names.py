"""The shipped given-name frequencies (er_plugins/given_names.py, written by scripts/make_given_names.py)
are Faker's en_US tables as the ``nickname`` normalizer reads them, and its table is the one Faker gives;
the shipped nickname table (er_plugins/nickname_names.py, by the same script) is the one computed from the
installed ``nicknames`` package."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

import er_plugins.normalize_names as nz
from er_plugins.given_names import GIVEN_NAME_FREQUENCIES

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    """scripts/make_given_names.py as a module."""
    spec = importlib.util.spec_from_file_location("make_given_names", ROOT / "scripts" / "make_given_names.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_frequencies_are_fakers() -> None:
    pytest.importorskip("faker")
    assert nz.faker_name_frequencies() == GIVEN_NAME_FREQUENCIES
    assert len(GIVEN_NAME_FREQUENCIES) > 500
    assert all(k == k.lower() and isinstance(v, float) and v > 0 for k, v in GIVEN_NAME_FREQUENCIES.items())


def test_the_script_writes_the_shipped_module() -> None:
    pytest.importorskip("faker")
    mod = _script()
    shipped = (ROOT / "er_plugins" / "given_names.py").read_text(encoding="utf-8")
    # the Faker release named in the shipped docstring (an environment may have another one whose
    # tables are the same: test_shipped_frequencies_are_fakers compares the tables themselves)
    m = re.search(r"from Faker (\S+)'s en_US tables", shipped)
    assert m is not None
    assert mod.module_text(nz.faker_name_frequencies(), m.group(1)) == shipped


def test_nickname_table_is_the_same_with_fakers_frequencies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nickname table from the shipped frequencies equals the one made with Faker imported."""
    pytest.importorskip("faker")
    shipped = dict(nz.nickname_table())
    monkeypatch.setattr(nz, "_name_frequencies", nz.faker_name_frequencies)
    assert nz.computed_nickname_table() == shipped
    assert shipped["bob"] == "robert" and shipped["bill"] == "william" and shipped["peggy"] == "margaret"


def test_shipped_nickname_table_is_the_one_computed_from_the_nicknames_package() -> None:
    """er_plugins/nickname_names.py is computed_nickname_table() of the installed nicknames package, and the
    script writes exactly the shipped module (with the release named in its docstring)."""
    from er_plugins.nickname_names import NICKNAME_TABLE

    assert nz.computed_nickname_table() == NICKNAME_TABLE == nz.nickname_table()
    assert len(NICKNAME_TABLE) > 500 and all(k == k.lower() and v == v.lower() for k, v in NICKNAME_TABLE.items())
    mod = _script()
    shipped = (ROOT / "er_plugins" / "nickname_names.py").read_text(encoding="utf-8")
    m = re.search(r"from the nicknames (\S+) package", shipped)
    assert m is not None
    assert mod.nickname_module_text(nz.computed_nickname_table(), m.group(1)) == shipped


def test_normalizers_import_neither_faker_nor_nicknames() -> None:
    import subprocess

    code = (
        "import sys\nimport er_plugins.normalizers\nfrom er_plugins.normalize_names import canonical_first_name\n"
        "assert canonical_first_name('bob') == 'robert'\nprint('faker' in sys.modules, 'nicknames' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
