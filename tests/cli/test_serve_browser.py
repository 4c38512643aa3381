"""``er review OUT --serve`` in a real browser: Debian's chromium, headless, driven by Selenium through
Debian's chromedriver (given explicitly: Selenium Manager downloads nothing).

``er review OUT --serve --no-open`` runs as a user runs it (a subprocess) on a finished run of
configs/febrl4.yaml; the test labels 5 pairs with the keyboard (with a skip, an undo and the arrow keys on
the way), checks the labels file holds them, splits a cluster with the mouse and stops the server with
Ctrl+C. Skipped with a message where no browser (or no selenium) is installed; with ``ER_REQUIRE_BROWSER=1``
(CI) it fails instead.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from er_framework.cli.main import main
from er_framework.io.labels_file import read_labels_file

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("ER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ER_CHROMEDRIVER", "/usr/bin/chromedriver")
#: a guard against a hung browser, not a limit on speed: every wait ends as soon as its condition holds
GUARD_SECONDS = 300


def missing(why: str) -> None:
    if os.environ.get("ER_REQUIRE_BROWSER") == "1":
        pytest.fail(f"ER_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(f"{why}: install Debian's chromium and chromium-driver and `pip install selenium` to run this test")


def browser_parts() -> Any:
    for path, what in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromedriver")):
        if not (Path(path).is_file() and os.access(path, os.X_OK)) and shutil.which(path) is None:
            missing(f"no {what} at {path}")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing("the selenium package is not installed")
    return webdriver, Service


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Any]:
    webdriver, service = browser_parts()
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1280,1400",
    ):
        opts.add_argument(flag)
    d = webdriver.Chrome(service=service(CHROMEDRIVER), options=opts)
    try:
        yield d
    finally:
        d.quit()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, subprocess.Popen[str]]]:
    """``er review OUT --serve --no-open`` on a run of configs/febrl4.yaml: (the page's address, the labels file,
    the process)."""
    out = tmp_path / "febrl4"
    assert main(["run", str(ROOT / "configs" / "febrl4.yaml"), "--out", str(out), "--quiet"]) == 0
    labels = tmp_path / "labels.csv"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    cmd = [sys.executable, "-m", "er_framework", "review", str(out), "--serve", "--no-open", "--labels", str(labels)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        assert proc.stdout is not None
        for line in proc.stdout:  # ends when the process does
            found = re.match(r"open (http://127\.0\.0\.1:\d+/\?token=[\w-]+)$", line.strip())
            if found:
                url = found.group(1)
                break
        assert url, f"no address printed; stderr: {proc.stderr.read() if proc.stderr else ''}"
        yield url, labels, proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_for(d: Any, condition: Callable[[Any], Any]) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(d, GUARD_SECONDS, poll_frequency=0.05).until(condition)


def text_of(d: Any, element_id: str) -> str:
    return str(d.find_element("id", element_id).text)


def press(d: Any, key: str, until: Callable[[Any], Any]) -> None:
    d.find_element("tag name", "body").send_keys(key)
    wait_for(d, until)


def test_label_five_pairs_by_keyboard_then_split_a_cluster(driver: Any, server: tuple[str, Path, subprocess.Popen[str]]) -> None:
    from selenium.webdriver.common.keys import Keys

    url, labels, proc = server
    d = driver
    d.get(url)
    wait_for(d, lambda d: text_of(d, "progress") == "0 of 20 labelled" and text_of(d, "where").startswith("pair 1 of 20"))
    assert "<svg" in d.find_element("id", "pair").get_attribute("innerHTML")  # the waterfall

    def labelled(k: int, at: int) -> Callable[[Any], bool]:
        return lambda d: text_of(d, "progress") == f"{k} of 20 labelled" and text_of(d, "where").startswith(f"pair {at} of 20")

    press(d, "m", labelled(1, 2))  # pair 1: a match
    press(d, "n", labelled(2, 3))  # pair 2: not a match
    press(d, "s", labelled(2, 4))  # pair 3: skipped
    press(d, "m", labelled(3, 5))  # pair 4: a match
    press(d, "n", labelled(4, 6))  # pair 5: not a match ...
    press(d, "u", labelled(3, 5))  # ... undone: back on pair 5
    assert text_of(d, "status").startswith("undone:")
    press(d, "y", labelled(4, 6))  # pair 5: a match
    press(d, Keys.ARROW_LEFT, labelled(4, 5))
    press(d, Keys.ARROW_LEFT, labelled(4, 4))
    press(d, Keys.ARROW_LEFT, labelled(4, 3))
    press(d, "m", labelled(5, 4))  # pair 3: a match

    rows = read_labels_file(labels, fix="-").records()
    assert len(rows) == 20  # the 20 pairs proposed, as er review writes them
    filled = [(r["left_id"], r["right_id"], r["match"]) for r in rows if r["match"]]
    assert len(filled) == 5
    assert [m for _, _, m in filled] == ["1", "0", "1", "1", "1"]  # pairs 1 to 5 in file order
    assert [(r["left_id"], r["right_id"]) for r in rows[:5]] == [f[:2] for f in filled]

    # the next round: the model refitted from the labels so far, 20 new pairs
    press(d, "r", lambda d: text_of(d, "summary").startswith("round 2: 20 new pairs") and text_of(d, "progress") == "0 of 20 labelled")
    assert len(read_labels_file(labels, fix="-").rows) == 40

    # the cluster view: open the largest cluster, put its second record in group B, save the split
    press(d, "c", lambda d: d.find_elements("css selector", "#clusters button.c"))
    first = d.find_elements("css selector", "#clusters button.c")[0]
    cid = first.get_attribute("data-id")
    first.click()
    wait_for(d, lambda d: d.find_elements("css selector", '#cluster tr[data-i="1"] input[value="1"]'))
    d.find_element("css selector", '#cluster tr[data-i="1"] input[value="1"]').click()
    d.find_element("id", "bsplit").click()
    wait_for(d, lambda d: text_of(d, "status").startswith(f"saved the split of cluster {cid}"))
    assert "labelled not a match (0)" in text_of(d, "status")
    split = [r for r in read_labels_file(labels, fix="-").records() if r["reason"] == f"split of cluster {cid}"]
    assert split and {r["match"] for r in split} <= {"0", "1"} and "0" in {r["match"] for r in split}
    assert not [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]  # no script error, nothing blocked

    # Ctrl+C stops the server
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate()
    assert proc.returncode == 0 and "stopped" in out
