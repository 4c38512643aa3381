"""Make configs/data/news/: news pages of 8 stories on 5 sites, and the truth.

Each story (real English prose: Python standard-library docstrings) is
published on 3-4 of the 5 sites; every site wraps it in its own chrome
(logo, navigation, market ticker, trending topics, related and most-read
headlines, cookie banner, newsletter box, footer) and its own ads, and some
sites cut the story's last paragraphs. All pages of a site share template and
ads. See :func:`er_framework.synth.news.sample_pages`. Writes

    configs/data/news/pages/<site>/<story-slug>.html
    configs/data/news/truth.csv     (id,story,site,paragraphs,cut; id = page path without .html)

The prose pool depends on the Python version's docstrings; the committed
sample was made with CPython 3.11. Run once; the output is committed:

    python scripts/make_news_pages.py
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from er_framework.synth.news import sample_pages


def main() -> None:
    out = Path(__file__).resolve().parent.parent / "configs" / "data" / "news"
    pages_dir = out / "pages"
    if pages_dir.exists():
        shutil.rmtree(pages_dir)
    pages = sample_pages()
    for p in pages:
        target = pages_dir / f"{p.page_id}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(p.html, encoding="utf-8")
    with open(out / "truth.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "story", "site", "paragraphs", "cut"])
        for p in pages:
            w.writerow([p.page_id, p.story, p.site, p.paragraphs, int(p.cut)])
    size = sum(f.stat().st_size for f in pages_dir.rglob("*.html"))
    stories = len({p.story for p in pages})
    sites = len({p.site for p in pages})
    print(f"{len(pages)} pages ({stories} stories on {sites} sites, {sum(p.cut for p in pages)} cut), {size / 1024:.0f} KB -> {out}")


if __name__ == "__main__":
    main()
