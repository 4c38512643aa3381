"""The built-in normalizers are registered by er_plugins.normalizers (the ``normalizers`` plugin)."""

from __future__ import annotations

from er_framework.registry import build_registry

BUILTINS = build_registry(autoload=False).components["normalizer"]


def test_registry_names_and_descriptions():
    assert set(BUILTINS) == {
        "text", "name", "nickname", "phone", "address", "email", "date", "digits", "lower", "strip", "split",
    }  # fmt: skip
    for name, info in BUILTINS.items():
        assert info.cls.name == name and info.plugin.name == "normalizers"
        assert isinstance(info.cls.summary, str) and 10 < len(info.cls.summary) < 120
        assert info.cls.Params()  # every option has a valid default
        for opt, f in info.cls.Params.model_fields.items():
            assert f.description, (name, opt)
