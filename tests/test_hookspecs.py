"""The hook specifications (er_framework.hookspecs): one written-out hook per family of the family table."""

from __future__ import annotations

import inspect

from er_framework.components import FAMILIES
from er_framework.hookspecs import PROJECT, ErSpecs


def test_every_family_has_its_written_out_hookspec() -> None:
    hooks = {name for name in vars(ErSpecs) if name.startswith("er_register_")}
    assert hooks == {f.hook for f in FAMILIES.values()}
    source = inspect.getsource(ErSpecs)
    for fam in FAMILIES.values():
        spec = getattr(ErSpecs, fam.hook)
        assert f"def {fam.hook}(self)" in source  # greppable: written out, not made from the table
        assert spec.__qualname__ == f"ErSpecs.{fam.hook}"
        assert spec.__doc__ == f"Return {fam.base.__name__} classes: {fam.summary}."
        assert fam.base.__name__ in str(inspect.signature(spec).return_annotation)
        assert getattr(spec, f"{PROJECT}_spec", None) is not None  # marked with hookspec
