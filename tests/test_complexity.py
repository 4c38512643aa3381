"""The McCabe complexity baseline: it only goes down.

``ruff check --select C901`` (McCabe complexity above :data:`MAX_COMPLEXITY`) over er_framework/ and er_plugins/
must find no function that the baseline (``tests/complexity_baseline.json``: ``"path:function" -> complexity``)
does not list, none more complex than listed, and no more of them in all. Lower a function's complexity, then
write the baseline again (it may only shrink)::

    python tests/test_complexity.py --write
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = Path(__file__).with_name("complexity_baseline.json")
MAX_COMPLEXITY = 10
_MESSAGE = re.compile(r"`(?P<name>[^`]+)` is too complex \((?P<value>\d+) > \d+\)")


def measured() -> dict[str, int]:
    """``"path:function" -> complexity`` of every function over :data:`MAX_COMPLEXITY`, by ruff."""
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--select",
            "C901",
            "--config",
            f"lint.mccabe.max-complexity={MAX_COMPLEXITY}",
            "--output-format",
            "json",
            "--no-cache",
            "--exit-zero",
            "er_framework",
            "er_plugins",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, int] = {}
    for item in json.loads(got.stdout):
        m = _MESSAGE.fullmatch(item["message"])
        assert m, item["message"]
        key = f"{Path(item['filename']).resolve().relative_to(ROOT).as_posix()}:{m['name']}"
        out[key] = max(out.get(key, 0), int(m["value"]))
    return out


def test_no_function_grows_more_complex_than_the_baseline() -> None:
    baseline: dict[str, int] = json.loads(BASELINE.read_text(encoding="utf-8"))
    now = measured()
    new = {k: v for k, v in now.items() if k not in baseline}
    worse = {k: (baseline[k], v) for k, v in now.items() if k in baseline and v > baseline[k]}
    assert not new, f"functions above McCabe {MAX_COMPLEXITY} not in the baseline (split them): {new}"
    assert not worse, f"functions more complex than the baseline allows (baseline, now): {worse}"
    assert len(now) <= len(baseline)


def test_the_check_finds_a_complex_function(tmp_path: Path) -> None:
    """The measurement is real: a function of 12 branches is reported."""
    body = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(12))
    (tmp_path / "m.py").write_text(f"def branchy(x):\n{body}\n    return -1\n")
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity=10",
            "--output-format",
            "json",
            "--no-cache",
            "--exit-zero",
            str(tmp_path / "m.py"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [_MESSAGE.fullmatch(i["message"])["name"] for i in json.loads(got.stdout)] == ["branchy"]  # type: ignore[index]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_complexity.py --write")
    now = measured()
    if BASELINE.exists():
        old = json.loads(BASELINE.read_text(encoding="utf-8"))
        grown = {k: v for k, v in now.items() if k not in old or v > old[k]}
        if grown:
            sys.exit(f"not written: these would raise the baseline: {grown}")
    BASELINE.write_text(json.dumps(dict(sorted(now.items())), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {BASELINE}: {len(now)} functions above {MAX_COMPLEXITY}")
