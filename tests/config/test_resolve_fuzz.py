"""Property-based fuzzing of the job loader (issue 18): any text gives a job or a ConfigError, nothing else.

Arbitrary text, and the shipped configs mutated (lines and characters
deleted, inserted, duplicated; YAML's special characters favoured), are fed
to :func:`parse_job` (what ``er validate`` and ``er run`` call). Every
outcome must be a :class:`Job` or a :class:`ConfigError` / :class:`InputError`
with at least one problem that renders; any other exception (RecursionError,
TypeError, an AssertionError of an error without a problem ...) fails.
Examples are bounded (a few hundred, derandomized) so the module runs in
seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.config.resolve import Job, parse_job
from er_framework.config.yaml_load import load_yaml
from er_framework.errors import ConfigError, InputError
from er_framework.registry import Registry, default_registry

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
TEXTS = [c.read_text(encoding="utf-8") for c in CONFIGS]
LINES = sorted({line for t in TEXTS for line in t.splitlines() if line.strip()})

#: characters that change what YAML means, favoured over the rest of Unicode
SPECIAL = list(":-[]{},&*!|>'\"%@`#?<=~\t\n\r\x00\x07\ufeff\u2028\ud800 ") + ["<<: ", "*a", "&a ", "!!python/name:x "]

FUZZ = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

_REGISTRY: list[Registry] = []


def registry() -> Registry:
    if not _REGISTRY:
        _REGISTRY.append(default_registry())
    return _REGISTRY[0]


def check(text: str, folder: Path, check_files: bool) -> None:
    """``text`` as a job file: a job, or an error holding problems; never another exception."""
    path = folder / "job.yaml"
    try:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    except UnicodeEncodeError:  # pragma: no cover - surrogatepass writes every str
        return
    try:
        job = parse_job(path, registry(), check_files=check_files)
    except (ConfigError, InputError) as exc:
        assert exc.problems, "an error with no problem"
        assert str(exc).count("\n") >= 1
        return
    assert isinstance(job, Job)
    job.config_hash()  # the resolved job can be hashed (what runs and indexes record)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A shipped config with up to 8 random edits of its lines and characters."""
    lines = draw(st.sampled_from(TEXTS)).splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["del_line", "dup_line", "ins_line", "del_char", "ins_char", "dup_chars", "indent"]))
        if not lines:
            lines = ["\n"]
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        if op == "del_line":
            del lines[i]
        elif op == "dup_line":
            lines.insert(i, line)
        elif op == "ins_line":
            lines.insert(i, draw(st.sampled_from(LINES) | st.text(max_size=40)) + "\n")
        elif op == "indent":
            lines[i] = draw(st.sampled_from(["", " ", "  ", "    ", "\t"])) + line.lstrip(" ")
        else:
            j = draw(st.integers(0, len(line)))
            if op == "del_char":
                lines[i] = line[:j] + line[j + 1 :]
            elif op == "ins_char":
                lines[i] = line[:j] + draw(st.sampled_from(SPECIAL) | st.characters()) + line[j:]
            else:
                k = draw(st.integers(j, min(len(line), j + 12)))
                lines[i] = line[:k] + line[j:k] * draw(st.integers(1, 5)) + line[k:]
    return "".join(lines)


@FUZZ
@given(text=st.lists(st.sampled_from(SPECIAL) | st.characters() | st.sampled_from(LINES).map(lambda x: x + "\n"), max_size=80).map("".join))
def test_arbitrary_text_gives_a_job_or_a_config_error(tmp_path: Path, text: str) -> None:
    check(text, tmp_path, check_files=True)


@FUZZ
@given(text=mutated(), check_files=st.booleans())
def test_mutated_configs_give_a_job_or_a_config_error(tmp_path: Path, text: str, check_files: bool) -> None:
    check(text, tmp_path, check_files=check_files)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=20,
    ),
    key=st.sampled_from(
        [
            "threshold",
            "seed",
            "sources",
            "verifier",
            "blockers",
            "normalize",
            "executor",
            "workers",
            "shingler",
            "exact_duplicates",
            "output",
            "cluster",
            "mode",
        ]
    ),
)
def test_any_value_under_any_key_gives_a_job_or_a_config_error(tmp_path_factory: pytest.TempPathFactory, value: object, key: str) -> None:
    """The documents config with one section replaced by an arbitrary (JSON-like) value."""
    import yaml

    data = yaml.safe_load(TEXTS[[c.name for c in CONFIGS].index("documents.yaml")])
    data[key] = value
    check(yaml.safe_dump(data, allow_unicode=True), tmp_path_factory.mktemp("v"), check_files=False)


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_the_shipped_configs_themselves_pass(config: Path) -> None:
    data, _, problems = load_yaml(config.read_text(encoding="utf-8"), config.name)
    assert problems == [] and isinstance(data, dict)
    assert isinstance(parse_job(config, registry()), Job)
