"""The plugin system: entry points, duplicates, blocking, autoload switch, a third-party package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from er_framework import Shingler, TokenSets, hookimpl
from er_framework.errors import PluginError
from er_framework.registry import build_registry, describe_params

PLUGIN_SOURCE = textwrap.dedent(
    '''
    """A throwaway third-party plugin: word-set shingles of a chosen field."""
    import numpy as np
    from pydantic import Field

    from er_framework import Params, Shingler, TokenSets, hookimpl
    from er_framework.kernels import hash_strings


    class VowelParams(Params):
        min_len: int = Field(default=1, ge=1, description="shortest word kept")


    class VowelWords(Shingler[VowelParams]):
        """Tokens = the set of words, with vowels removed."""

        name = "devowel_words"
        summary = "words without vowels"
        Params = VowelParams

        def shingle(self, records):
            rows = []
            for text in records.text():
                words = {w.translate(str.maketrans("", "", "aeiou")) for w in text.lower().split()}
                words = sorted(w for w in words if len(w) >= self.params.min_len)
                rows.append(np.unique(hash_strings(words)) if words else np.zeros(0, np.uint64))
            indptr = np.zeros(len(rows) + 1, dtype=np.int64)
            indptr[1:] = np.cumsum([len(r) for r in rows])
            tokens = np.concatenate(rows) if rows else np.zeros(0, np.uint64)
            return TokenSets(indptr, tokens.astype(np.uint64))


    @hookimpl
    def er_register_shinglers():
        return [VowelWords]
    '''
)


def make_plugin_package(
    root: Path, dist: str = "erx-devowel", module: str = "erx_devowel", ep_name: str = "devowel", source: str = PLUGIN_SOURCE
) -> Path:
    """A package with its own entry point, visible to importlib.metadata via PYTHONPATH."""
    pkg = root / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(source)
    info = root / f"{dist.replace('-', '_')}-0.3.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.3.1\n")
    (info / "entry_points.txt").write_text(f"[er_framework]\n{ep_name} = {module}\n")
    return root


def run_er(args: list[str], env_extra: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "er_framework", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_builtins_are_loaded_through_entry_points() -> None:
    reg = build_registry()
    names = {p.name: p for p in reg.plugins}
    assert {"core", "documents"} <= set(names)
    assert names["documents"].distribution == "er-framework"
    assert reg.names("shingler")[:2] == ["char", "word"] or {"char", "word"} <= set(reg.names("shingler"))
    assert "minhash" in reg.names("signature")
    assert "lsh_bands" in reg.names("blocker")
    assert "jaccard" in reg.names("verifier")
    assert {"connected_components", "label_propagation", "louvain"} <= set(reg.names("clusterer"))


def test_describe_params_lists_defaults() -> None:
    reg = build_registry()
    params = {p["name"]: p for p in describe_params(reg.components["shingler"]["char"].cls)}
    assert params["k"]["default"] == 5
    assert params["lowercase"]["default"] is True


def _module_with(cls_name: str, name: str) -> types.ModuleType:
    mod = types.ModuleType(f"fake_{cls_name}")

    class Dup(Shingler):
        def shingle(self, records):  # pragma: no cover - never run
            return TokenSets.from_sets([[]] * len(records))

    Dup.name = name
    Dup.__qualname__ = cls_name

    @hookimpl
    def er_register_shinglers():
        return [Dup]

    mod.er_register_shinglers = er_register_shinglers  # type: ignore[attr-defined]
    return mod


def test_two_components_with_one_name_is_an_error_naming_both() -> None:
    with pytest.raises(PluginError) as err:
        build_registry(extra_modules=[_module_with("MyChar", "char")])
    text = str(err.value)
    assert "two components are named 'char'" in text
    assert "er_plugins.documents" in text and "fake_MyChar" in text


def test_a_plugin_can_be_blocked_by_name() -> None:
    reg = build_registry(block=["documents"])
    assert "char" not in reg.names("shingler")
    assert "documents" in reg.blocked
    assert "connected_components" in reg.names("clusterer")


def test_blocked_via_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ER_FRAMEWORK_BLOCK_PLUGINS", "documents")
    assert "minhash" not in build_registry().names("signature")


def test_non_component_returned_by_a_hook_is_reported() -> None:
    mod = types.ModuleType("fake_bad")

    @hookimpl
    def er_register_shinglers():
        return [dict]

    mod.er_register_shinglers = er_register_shinglers  # type: ignore[attr-defined]
    with pytest.raises(PluginError, match="not a subclass of Shingler"):
        build_registry(extra_modules=[mod])


DOCS = [
    {"id": "a", "text": "the quick brown fox jumps over the lazy dog"},
    {"id": "b", "text": "the quick brown fox jumped over the lazy dog"},
    {"id": "c", "text": "an entirely different sentence about cats and mice"},
]


def write_job(tmp: Path, shingler: str) -> Path:
    data = tmp / "docs.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    job = tmp / "job.yaml"
    job.write_text(
        textwrap.dedent(
            f"""
            mode: dedup
            threshold: 0.5
            sources: [{{name: docs, path: docs.jsonl, id: id, fields: [text]}}]
            shingler: {{type: {shingler}}}
            signature: {{type: minhash, num_perm: 64}}
            blockers: [{{type: lsh_bands, bands: 32, rows: 2}}]
            verifier: {{type: jaccard}}
            """
        )
    )
    return job


def test_third_party_package_with_entry_point_runs_a_job(tmp_path: Path) -> None:
    site = make_plugin_package(tmp_path / "site")
    job = write_job(tmp_path, "devowel_words")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}

    listing = run_er(["plugins", "--json"], env)
    assert listing.returncode == 0, listing.stderr
    comps = {c["name"]: c for c in json.loads(listing.stdout)["components"]}
    assert comps["devowel_words"]["distribution"] == "erx-devowel"
    assert comps["devowel_words"]["version"] == "0.3.1"
    assert comps["devowel_words"]["params"][0]["name"] == "min_len"

    out = tmp_path / "out"
    res = run_er(["run", str(job), "--out", str(out), "--quiet"], env)
    assert res.returncode == 0, res.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["versions"]["components"]["shingler:devowel_words"]["distribution"] == "erx-devowel"
    pairs = (out / "pairs.csv").read_text().splitlines()
    assert pairs[0] == "left_source,left_id,right_source,right_id,score"
    assert [p.split(",")[1::2] for p in pairs[1:]] == [["a", "b"]]

    # autoload off: the third-party plugin is not loaded, built-ins still are
    res = run_er(["validate", str(job)], {**env, "ER_FRAMEWORK_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert res.returncode == 2
    assert "unknown shingler 'devowel_words'" in res.stderr
    assert "Traceback" not in res.stderr
    # ... unless named explicitly
    res = run_er(
        ["validate", str(job)],
        {**env, "ER_FRAMEWORK_DISABLE_PLUGIN_AUTOLOAD": "1", "ER_FRAMEWORK_PLUGINS": "erx_devowel"},
    )
    assert res.returncode == 0, res.stderr
    # blocked by name
    res = run_er(["validate", str(job)], {**env, "ER_FRAMEWORK_BLOCK_PLUGINS": "devowel"})
    assert res.returncode == 2 and "unknown shingler 'devowel_words'" in res.stderr


def test_broken_third_party_plugin_gives_a_message_not_a_traceback(tmp_path: Path) -> None:
    site = make_plugin_package(tmp_path / "site", source="raise RuntimeError('boom at import')\n")
    res = run_er(["plugins"], {"PYTHONPATH": str(site)})
    assert res.returncode == 2
    assert "cannot import erx_devowel: RuntimeError: boom at import" in res.stderr
    assert "ER_FRAMEWORK_BLOCK_PLUGINS=devowel" in res.stderr
    assert "Traceback" not in res.stderr


def test_duplicate_component_across_packages_names_both_distributions(tmp_path: Path) -> None:
    clash = PLUGIN_SOURCE.replace('name = "devowel_words"', 'name = "char"')
    site = make_plugin_package(tmp_path / "site", source=clash)
    res = run_er(["plugins"], {"PYTHONPATH": str(site)})
    assert res.returncode == 2
    assert "two components are named 'char'" in res.stderr
    assert "er-framework" in res.stderr and "erx-devowel" in res.stderr


# ---------------------------------------------------------------------------
# the family table, normalizers as a family


def test_one_family_table_drives_hooks_registry_and_job_keys() -> None:
    from er_framework.components import FAMILIES, Component, Family
    from er_framework.config.spec import JobSpec
    from er_framework.hookspecs import ErSpecs

    hooks = {name for name in dir(ErSpecs) if name.startswith("er_register_")}
    assert hooks == {f.hook for f in FAMILIES.values()}
    assert list(FAMILIES) == ["normalizer", "shingler", "signature", "blocker", "verifier", "clusterer", "golden_rule"]
    reg = build_registry()
    assert list(reg.components) == list(FAMILIES)
    for fam in FAMILIES.values():
        assert fam.base.family == fam.name and set(fam.sections) <= set(JobSpec.model_fields)
        assert getattr(ErSpecs, fam.hook).__doc__.startswith(f"Return {fam.base.__name__} classes")
    with pytest.raises(TypeError, match="family is ''"):
        Family("odd", Component, "er_register_odds", "odd", "nothing")


def test_builtin_normalizers_are_a_plugin_like_the_others() -> None:
    reg = build_registry(autoload=False)
    phone = reg.components["normalizer"]["phone"]
    assert phone.plugin.name == "normalizers" and phone.plugin.distribution == "er-framework"
    assert {"text", "name", "nickname", "phone", "address", "email", "date"} <= set(reg.names("normalizer"))
    assert "phone" not in build_registry(block=["normalizers"]).names("normalizer")
    params = {p["name"]: p for p in describe_params(phone.cls)}
    assert params["default_region"]["type"] == "str | null" and params["default_region"]["default"] == "US"
    assert params["foreign_country_code"]["type"] == "'keep' | 'strip'"


def test_field_parameters_are_described_as_fields() -> None:
    reg = build_registry(autoload=False)
    fh = {p["name"]: p for p in describe_params(reg.components["blocker"]["field_hash"].cls)}
    sn = {p["name"]: p for p in describe_params(reg.components["blocker"]["sorted_neighbourhood"].cls)}
    assert fh["fields"]["type"] == "list[field | list[field] | AnyOrderKey]"
    assert sn["prefix"]["type"] == "dict[field, int]" and sn["key"]["type"] == "list[field] | AnyOrderKey | null"


def test_a_non_normalizer_returned_by_the_normalizer_hook_is_reported() -> None:
    mod = types.ModuleType("fake_bad_normalizer")
    mod.er_register_normalizers = hookimpl(lambda: [Shingler])  # type: ignore[attr-defined]
    with pytest.raises(PluginError, match="er_register_normalizers\\(\\) returned .* not a subclass of Normalizer"):
        build_registry(extra_modules=[mod])


NORMALIZER_PLUGIN = textwrap.dedent(
    '''
    """A third-party normalizer: Soundex-like keys (first letter + consonant classes)."""
    from pydantic import Field

    from er_framework import Normalizer, Params, hookimpl

    CODES = {c: str(d) for d, letters in enumerate(["aeiouyhw", "bfpv", "cgjkqsxz", "dt", "l", "mn", "r"]) for c in letters}


    class SoundParams(Params):
        length: int = Field(default=4, ge=1, le=12, description="characters of the key")


    class Sound(Normalizer[SoundParams]):
        name = "sound_key"
        summary = "first letter and consonant classes"
        Params = SoundParams

        def normalize(self, values):
            out = []
            for v in values:
                letters = [c for c in v.lower() if c in CODES]
                if not letters:
                    out.append(None)
                    continue
                digits = [CODES[c] for c in letters]
                kept = [d for i, d in enumerate(digits[1:], 1) if d != "0" and d != digits[i - 1]]
                out.append((letters[0] + "".join(kept) + "000000000000")[: self.params.length])
            return out


    @hookimpl
    def er_register_normalizers():
        return [Sound]
    '''
)


def test_third_party_normalizer_package_lists_and_runs(tmp_path: Path) -> None:
    site = make_plugin_package(tmp_path / "site", dist="erx-sound", module="erx_sound", ep_name="sound", source=NORMALIZER_PLUGIN)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    listing = run_er(["plugins", "--json"], env)
    assert listing.returncode == 0, listing.stderr
    data = json.loads(listing.stdout)
    comps = {(c["family"], c["name"]): c for c in data["components"]}
    assert comps[("normalizer", "sound_key")]["distribution"] == "erx-sound"
    assert [o["name"] for o in {n["name"]: n for n in data["normalizers"]}["sound_key"]["options"]] == ["length"]
    text = run_er(["plugins"], env).stdout
    assert "sound_key" in text and "length" in text and "default 4" in text

    (tmp_path / "people.csv").write_text("id,name\n1,Robert\n2,Rupert\n3,Tymczak\n4,n/a\n5,Rubin\n")
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent(
            """
        mode: dedup
        sources: [{name: p, path: people.csv, id: id, fields: [name]}]
        normalize:
          name: [text, {type: sound_key, length: 3}]
        blockers: [{type: field_hash, fields: [name]}]
        verifier: {type: field_score, threshold: 100, fields: [{field: name, scorer: ratio}]}
        cluster: {type: connected_components}
        """
        )
    )
    res = run_er(["run", str(job), "--out", str(tmp_path / "out"), "--quiet"], env)
    assert res.returncode == 0, res.stderr
    pairs = (tmp_path / "out" / "pairs.csv").read_text().splitlines()[1:]
    assert [p.split(",")[1::2] for p in pairs] == [["1", "2"]]  # Robert and Rupert: r16; Rubin r15
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["normalize"]["name"]["placeholders"] == 1
    assert report["versions"]["components"]["normalizer:sound_key"]["distribution"] == "erx-sound"
    assert report["versions"]["components"]["normalizer:text"]["plugin"] == "normalizers"

    job.write_text(job.read_text().replace("length: 3", "length: 30"))
    res = run_er(["validate", str(job)], env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "job.yaml:5: normalize.name[1].length: option 'length' of normalizer 'sound_key' must be <= 12, got 30" in res.stderr


# ---------------------------------------------------------------------------
# executors: each with its own options model, looked up lazily


def test_each_built_in_executor_names_its_options_model() -> None:
    from er_framework.config.executor_params import DaskParams, LocalParams
    from er_framework.errors import ConfigError
    from er_framework.registry import BUILTIN_EXECUTORS, executor_params_model, executor_table

    assert executor_params_model("local") is LocalParams and executor_params_model("dask") is DaskParams
    assert executor_table()["dask"] == BUILTIN_EXECUTORS["dask"].run == "er_framework.executors.dask:run_dask"
    with pytest.raises(ConfigError, match="(?s)no executor 'dsak'.*did you mean 'dask'"):
        executor_params_model("dsak")


def test_the_dask_options_model_is_found_without_importing_dask_or_the_executors() -> None:
    code = (
        "import sys\nfrom er_framework.registry import executor_params_model\n"
        "assert executor_params_model('dask').__name__ == 'DaskParams'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')"
        " or m.startswith(('er_framework.executors', 'er_framework.engine'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
