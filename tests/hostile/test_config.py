"""Hostile job files (issue 18, cases 9, 14 and 22): every one a whole ``er validate`` / ``er run`` process.

Exit 2, no traceback, a message naming the file and line and what is wrong;
the alias bomb within a small, measured peak RSS.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Er = Callable[..., Any]

GOOD = """\
name: docs
mode: dedup
seed: 1
threshold: 0.8
sources:
  - name: docs
    path: docs.jsonl
    id: id
    fields: [text]
shingler:
  type: char
  k: 5
signature:
  type: minhash
  num_perm: 64
blockers:
  - type: lsh_bands
verifier:
  type: jaccard
cluster:
  type: connected_components
"""


def job(tmp_path: Path, text: str, name: str = "job.yaml") -> Path:
    rows = [{"id": f"r{i}", "text": f"document number {i} with some text"} for i in range(6)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The 'billion laughs': each level a list of ``width`` aliases of the level below (width**levels values)."""
    out = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(out) + "\n"


def merge_bomb(levels: int = 9, width: int = 9) -> str:
    """The same through merge keys: ``<<: [*a, *a, ...]`` (PyYAML's own merge copies entries at every level)."""
    out = ["m0: &m0 {" + ", ".join(f"k{i}: v" for i in range(width)) + "}"]
    for i in range(1, levels):
        out.append(f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * width) + "]}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- case 9: the alias bomb


@pytest.mark.parametrize("verb", ["validate", "run"])
def test_an_alias_bomb_is_refused_in_small_memory(er: Er, tmp_path: Path, verb: str) -> None:
    bomb = alias_bomb()
    assert len(bomb) < 1024  # 9**9 = 387 million values from under a kilobyte
    path = job(tmp_path, bomb + GOOD)
    out = tmp_path / "out"
    args = [verb, path] + (["--out", out] if verb == "run" else [])
    ran = er(args, limit_mb=1500, timeout=120)
    ran.assert_clean_error(2, "job.yaml:5", "the alias *a3 expands to more than 10,000 values", "billion laughs", "write the values out")
    assert ran.peak_mb < 500, ran.peak_mb
    assert not out.exists() or not any(out.iterdir())


def test_a_merge_key_bomb_is_refused_in_small_memory(er: Er, tmp_path: Path) -> None:
    path = job(tmp_path, merge_bomb() + GOOD)
    ran = er(["validate", path], limit_mb=1500, timeout=120)
    ran.assert_clean_error(2, "job.yaml:", "expands to more than 10,000 values", "write the values out")
    assert ran.peak_mb < 500, ran.peak_mb


def test_a_long_string_repeated_by_aliases_is_refused(er: Er, tmp_path: Path) -> None:
    """Few values, much text: 2 KB x 1,000 aliases is 2 MB of expanded text from a 5 KB file."""
    text = "big: &big " + "x" * 2000 + "\nmany: [" + ", ".join(["*big"] * 1000) + "]\n"
    ran = er(["validate", job(tmp_path, text + GOOD)], limit_mb=1500, timeout=120)
    ran.assert_clean_error(2, "job.yaml:2", "the alias *big expands to more than", "1,000,000 characters")


def test_an_alias_inside_its_own_anchor_is_refused(er: Er, tmp_path: Path) -> None:
    for i, text in enumerate(["loop: &a [1, *a]\n", "loop: &a {x: 1, <<: *a}\n"]):
        ran = er(["validate", job(tmp_path, text + GOOD, f"j{i}.yaml")], limit_mb=1500, timeout=120)
        ran.assert_clean_error(2, f"j{i}.yaml:1", "an alias refers to the mapping or list that holds it")


def test_small_aliases_and_merge_keys_still_work(er: Er, tmp_path: Path) -> None:
    """Aliases are capped, not banned: re-using a block of settings is ordinary YAML."""
    text = GOOD.replace("shingler:\n  type: char\n  k: 5\n", "shingler: &sh\n  type: char\n  k: 5\n").replace(
        "verifier:\n  type: jaccard\n", "verifier:\n  type: jaccard\n  <<: {threshold: 0.7}\n"
    )
    ran = er(["validate", job(tmp_path, text)], timeout=120)
    assert ran.code == 0, ran.err
    assert "valid" in ran.out


def _index_with_stored_job(er: Er, tmp_path: Path, stored: str) -> Path:
    """A real index whose meta table then holds ``stored`` as its job (as a stranger's index could)."""
    text = textwrap.dedent("""\
        mode: dedup
        sources:
          - {name: docs, path: docs.jsonl, id: id, fields: [text]}
        blockers:
          - {type: field_hash, fields: [text]}
        verifier: {type: field_score, fields: [{field: text, scorer: ratio}], threshold: 50}
        cluster: {type: connected_components}
        """)
    path = job(tmp_path, text, "index_job.yaml")
    index = tmp_path / "docs.erx"
    built = er(["index", "build", path, "--index", index], timeout=300)
    assert built.code == 0, built.err
    conn = sqlite3.connect(str(index))
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'config_yaml'", (stored,))
    conn.close()
    return index


def test_an_alias_bomb_stored_in_an_index_is_refused_when_opened(er: Er, tmp_path: Path) -> None:
    index = _index_with_stored_job(er, tmp_path, alias_bomb() + GOOD)
    for args in (["index", "info", index], ["query", index, "--source", "docs", "--record", '{"text": "document"}']):
        ran = er(args, limit_mb=1500, timeout=120)
        ran.assert_clean_error(2, "the alias *a3 expands to more than 10,000 values")
        assert ran.peak_mb < 500, (args, ran.peak_mb)


# ---------------------------------------------------------------- case 14: NUL, deep nesting


def test_a_nul_character_is_named_with_its_line(er: Er, tmp_path: Path) -> None:
    path = job(tmp_path, GOOD.replace("name: docs\n", "name: do\x00cs\n", 1))
    for verb in ("validate", "run"):
        ran = er([verb, path, *(["--out", tmp_path / "o"] if verb == "run" else [])], timeout=120)
        ran.assert_clean_error(2, "job.yaml:1", "a character yaml does not allow: nul", "column 9")


@pytest.mark.parametrize(
    "nested",
    [
        "x: " + "[" * 10_000 + "]" * 10_000 + "\n",
        "x: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n",
        "".join("  " * i + "a:\n" for i in range(2_000)) + "  " * 2_000 + "a: 1\n",
    ],
    ids=["flow-lists", "flow-mappings", "block-mappings"],
)
def test_deep_nesting_is_refused_without_a_traceback(er: Er, tmp_path: Path, nested: str) -> None:
    ran = er(["validate", job(tmp_path, GOOD + nested)], limit_mb=1500, timeout=120)
    ran.assert_clean_error(2, "job.yaml:", "nested more than 50 levels deep; a job file needs at most a few")
    assert "RecursionError" not in ran.err


def test_deep_nesting_through_aliases_is_refused(er: Er, tmp_path: Path) -> None:
    text = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 80))
    ran = er(["validate", job(tmp_path, text + GOOD)], limit_mb=1500, timeout=120)
    ran.assert_clean_error(2, "nested more than 50 levels deep")


# ---------------------------------------------------------------- case 22: tags named, not dropped


@pytest.mark.parametrize(
    "value, tag",
    [
        ('!!python/object/apply:os.system ["touch PWNED"]', "!!python/object/apply:os.system"),
        ('!!python/object/new:os.system ["touch PWNED"]', "!!python/object/new:os.system"),
        ("!!python/name:os.system", "!!python/name:os.system"),
        ("!!binary aGVsbG8=", "!!binary"),
        ("!!set {a, b}", "!!set"),
        ("!custom 1", "!custom"),
    ],
)
def test_a_tag_is_named_as_a_problem(er: Er, tmp_path: Path, value: str, tag: str) -> None:
    path = job(tmp_path, GOOD.replace("name: docs\n", f"name: {value}\n", 1))
    for verb in ("validate", "run"):
        ran = er([verb, path, *(["--out", tmp_path / "o"] if verb == "run" else [])], cwd=tmp_path, timeout=120)
        ran.assert_clean_error(2, "job.yaml:1", f"name: tag {tag} is not allowed in a job file", "remove the tag")
    assert not (tmp_path / "PWNED").exists()


def test_every_tag_is_reported_at_once(er: Er, tmp_path: Path) -> None:
    text = GOOD.replace("name: docs\n", "name: !!python/name:os.system\n", 1).replace("seed: 1", "seed: !!binary AA==")
    ran = er(["validate", job(tmp_path, text)], timeout=120)
    ran.assert_clean_error(2, "2 problems found", "job.yaml:1", "!!python/name:os.system", "job.yaml:3", "!!binary")


# ---------------------------------------------------------------- case 22: only real problems


def test_a_top_level_error_adds_no_spurious_threshold_problem(er: Er, tmp_path: Path) -> None:
    # a typo'd required key (the schema fails) with a valid top-level threshold: one real fault, reported once
    ran = er(["validate", job(tmp_path, GOOD.replace("sources:", "sourcs:"))], timeout=120)
    ran.assert_clean_error(2, "2 problems found", "unknown key 'sourcs'", "did you mean 'sources'?", "required key 'sources' is missing")
    assert "no threshold" not in ran.err and "needs a threshold" not in ran.err


def test_a_bad_threshold_is_one_problem_not_three(er: Er, tmp_path: Path) -> None:
    for i, bad in enumerate(["1.5", "high", "true", "[0.8]"]):
        ran = er(["validate", job(tmp_path, GOOD.replace("threshold: 0.8", f"threshold: {bad}"), f"j{i}.yaml")], timeout=120)
        ran.assert_clean_error(2, "1 problem found", f"j{i}.yaml:4", "threshold")
        assert "no threshold" not in ran.err and "needs a threshold" not in ran.err, ran.err


# ---------------------------------------------------------------- case 22: numbers and booleans as written


@pytest.mark.parametrize(
    "old, new, needles",
    [
        ("threshold: 0.8", "threshold: true", ("job.yaml:4", "threshold: true is a boolean; expected a number")),
        (
            "num_perm: 64",
            "num_perm: '64'",
            ("job.yaml:15", 'signature.num_perm: "64" is a string; expected a whole number', "write 64 without quotes"),
        ),
        ("num_perm: 64", "num_perm: true", ("signature.num_perm: true is a boolean; expected a whole number",)),
        ("seed: 1", "seed: '1'", ("job.yaml:3", 'seed: "1" is a string; expected a whole number')),
        ("  k: 5", "  k: false", ("shingler.k: false is a boolean; expected a whole number",)),
        (
            "    fields: [text]",
            "    fields: [text]\n    max_record_mb: yes",
            ("sources[0].max_record_mb: true is a boolean; expected a number",),
        ),
        (
            "cluster:",
            "exact_duplicates: {enabled: 1}\ncluster:",
            ("exact_duplicates.enabled: 1 is a whole number; expected true or false",),
        ),
        ("  type: jaccard", "  type: jaccard\n  threshold: '0.5'", ('verifier.threshold: "0.5" is a string; expected a number',)),
    ],
)
def test_numbers_and_booleans_are_not_coerced(er: Er, tmp_path: Path, old: str, new: str, needles: tuple[str, ...]) -> None:
    assert old in GOOD
    path = job(tmp_path, GOOD.replace(old, new, 1))
    for verb in ("validate", "run"):
        ran = er([verb, path, *(["--out", tmp_path / "o"] if verb == "run" else [])], timeout=120)
        ran.assert_clean_error(2, "1 problem found", *needles)


def test_ints_are_still_numbers(er: Er, tmp_path: Path) -> None:
    text = GOOD.replace("threshold: 0.8", "threshold: 1").replace("    fields: [text]", "    fields: [text]\n    max_record_mb: 2")
    ran = er(["validate", job(tmp_path, text)], timeout=120)
    assert ran.code == 0, ran.err


# ---------------------------------------------------------------- issue 16 item 6: a missing section is named


def test_a_job_without_a_verifier_names_it(er: Er, tmp_path: Path) -> None:
    ran = er(["validate", job(tmp_path, GOOD.replace("verifier:\n  type: jaccard\n", ""))], timeout=120)
    ran.assert_clean_error(2, "1 problem found", "job.yaml: verifier: required", "add e.g. 'verifier: {type: jaccard}'")
    assert "0 problems" not in ran.err


def test_an_empty_verifier_names_it(er: Er, tmp_path: Path) -> None:
    ran = er(["validate", job(tmp_path, GOOD.replace("verifier:\n  type: jaccard\n", "verifier:\n"))], timeout=120)
    ran.assert_clean_error(2, "1 problem found", "job.yaml:18: verifier: required", "verifier: {type: jaccard}")


@pytest.mark.parametrize(
    "old, new, needles",
    [
        (
            "sources:\n  - name: docs\n    path: docs.jsonl\n    id: id\n    fields: [text]\n",
            "",
            ("job.yaml: sources: required key 'sources' is missing", "sources: [{name: docs, path: docs.jsonl, fields: [text]}]"),
        ),
        ("  - name: docs\n    path", "  - path", ("sources[0].name: required key 'name' is missing", "add name: NAME")),
        ("    path: docs.jsonl\n", "", ("sources[0].path: required key 'path' is missing", "add path: FILE")),
        ("    fields: [text]\n", "", ("sources[0].fields: required key 'fields' is missing", "add fields: [COLUMN")),
        ("  type: jaccard\n", "  threshold: 0.5\n", ("verifier.type: no component chosen for verifier", "add type: NAME")),
    ],
)
def test_every_required_key_is_named(er: Er, tmp_path: Path, old: str, new: str, needles: tuple[str, ...]) -> None:
    assert old in GOOD
    ran = er(["validate", job(tmp_path, GOOD.replace(old, new, 1))], timeout=120)
    ran.assert_clean_error(2, *needles)
    assert "0 problems" not in ran.err


# ---------------------------------------------------------------- the job file itself


def test_a_device_or_a_huge_file_is_not_read_whole(er: Er, tmp_path: Path) -> None:
    ran = er(["validate", "/dev/zero"], limit_mb=1500, timeout=120)
    ran.assert_clean_error(2, "/dev/zero: this is a device, not a job file")
    big = tmp_path / "big.yaml"
    with big.open("w") as fh:
        fh.write("# " + "x" * (5 << 20) + "\n")
    ran = er(["validate", big], limit_mb=1500, timeout=120)
    ran.assert_clean_error(2, "larger than 4 MB: not a job file")


def test_a_wide_file_is_refused_before_it_is_built(er: Er, tmp_path: Path) -> None:
    """3.8 MB of one list (1.9 million numbers): PyYAML's nodes of it would take 1.7 GB."""
    wide = tmp_path / "wide.yaml"
    wide.write_text("x: [" + ",".join(["1"] * 1_900_000) + "]\n" + GOOD)
    ran = er(["validate", wide], limit_mb=1500, timeout=300)
    ran.assert_clean_error(2, "wide.yaml:1", "more than 100,000 values (a job holds a few dozen): not a job file")
    assert ran.peak_mb < 500, ran.peak_mb


def test_a_binary_file_is_not_utf8(er: Er, tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(b"name: docs\nseed: \xff\xfe\n")
    ran = er(["validate", path], timeout=120)
    ran.assert_clean_error(2, "job.yaml:2", "not UTF-8 text")
