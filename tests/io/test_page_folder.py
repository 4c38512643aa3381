"""The walk of a page folder (er_framework/io/page_folder.py): er output folders, stages and pseudo file systems
left out and counted, the walk bounded, system folders refused, pages too large for the memory refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from er_framework.errors import InputError
from er_framework.io.page_folder import check_pages_fit, html_stem, list_pages, pseudo_mount_points


def page(path: Path, text: str = "<html><body>hi</body></html>") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def er_report(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps({"config_hash": "x", "versions": {}, "outputs": ["pairs.csv"]}), encoding="utf-8")
    page(folder / "report.html")


def test_er_outputs_stages_and_journals_are_skipped_and_counted(tmp_path: Path) -> None:
    page(tmp_path / "a.html")
    page(tmp_path / "site" / "b.htm")
    er_report(tmp_path / "out")
    page(tmp_path / ".er-tmp-9" / "report.html")
    page(tmp_path / "committing" / "report.html")
    (tmp_path / "committing" / ".er-commit.json").write_text("{}", encoding="utf-8")
    page(tmp_path / "running" / ".er-tmp-1" / "x.html")
    page(tmp_path / "running" / "report.html")
    # a report.json that is not er's keeps its folder a page folder
    page(tmp_path / "other" / "c.html")
    (tmp_path / "other" / "report.json").write_text("{}", encoding="utf-8")
    found = list_pages(tmp_path, pseudo=frozenset())
    assert found.pages == [("a.html", "a"), ("other/c.html", "other/c"), ("site/b.htm", "site/b")]
    assert found.er_outputs == [".er-tmp-9/", "committing/", "out/", "running/"]
    assert found.stats() == {"skipped_er_outputs": 4, "skipped_er_output_examples": [".er-tmp-9/", "committing/", "out/", "running/"]}
    assert "other/report.json" in found.others


def test_pseudo_file_systems_are_not_walked(tmp_path: Path) -> None:
    page(tmp_path / "a.html")
    page(tmp_path / "fakeproc" / "b.html")
    found = list_pages(tmp_path, pseudo=frozenset({str(tmp_path / "fakeproc")}))
    assert found.pages == [("a.html", "a")] and found.pseudo == ["fakeproc/"]
    assert found.stats()["skipped_pseudo_filesystems"] == 1


def test_pseudo_mount_points_from_the_mount_table() -> None:
    table = "proc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\n/dev/sda1 / ext4 rw 0 0\nproc /srv/my\\040proc proc rw 0 0\n"
    points = pseudo_mount_points(table)
    assert "/srv/my proc" in points and "/" not in points and {"/proc", "/sys", "/dev"} <= points


def test_the_walk_stops_past_the_limit(tmp_path: Path) -> None:
    for i in range(30):
        page(tmp_path / f"p{i}.html")
    with pytest.raises(InputError) as e:
        list_pages(tmp_path, max_entries=20)
    text = str(e.value)
    assert "more than 20 files and folders" in text and "JSON Lines" in text
    assert len(list_pages(tmp_path, max_entries=30).pages) == 30


@pytest.mark.parametrize("root", ["/", "/usr", "/etc"])
def test_system_folders_are_refused_before_the_walk(root: str) -> None:
    with pytest.raises(InputError, match="a folder of the operating system"):
        list_pages(Path(root))


def test_pages_larger_than_the_memory_are_refused(tmp_path: Path) -> None:
    page(tmp_path / "a.html", "x" * 1000)
    page(tmp_path / "b.html", "x" * 1000)
    pages = list_pages(tmp_path, pseudo=frozenset()).pages
    assert check_pages_fit(tmp_path, pages, memory=4000) == 2000
    with pytest.raises(InputError, match="the 2 pages of the folder"):
        check_pages_fit(tmp_path, pages, memory=3000)


def test_html_stem() -> None:
    assert html_stem("a.HTML") == "a" and html_stem("b.htm") == "b" and html_stem(".html") is None and html_stem("c.txt") is None
