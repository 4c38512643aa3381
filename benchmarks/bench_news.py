"""News pages (SEEDS §7): which shingler sees the article through page chrome and ads?

For N comparisons from :func:`er_framework.synth.news.make_quadruples`
(article A, article B, ad sets X, Y, site templates T1, T2; the T2 page
carries A cut on ``--cut-rate`` of them) the pages page(A, X, T1),
page(A', Y, T2), page(B, X, T1) are rendered as HTML and their visible text
is extracted with the chrome and the ads kept (``er_framework.io.html.extract_text``,
``boilerplate="keep"``). Each shingler (the ``er_plugins`` components, default
text options) shingles all 3N pages; exact Jaccard gives

* J_article = J(page(A, X, T1), page(A', Y, T2))  — same article, other ads and site;
* J_chrome  = J(page(A, X, T1), page(B, X, T1))   — same ads and site, other article;

and the rate = share of comparisons with J_article > J_chrome.

Run from the repository root::

    python benchmarks/bench_news.py                       # 3,000 comparisons, seed 0
    python benchmarks/bench_news.py --n 3000 --seeds 0,1,2 --out /tmp/news-bench.json

Not a test: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.data import Records
from er_framework.kernels import jaccard_pairs
from er_framework.synth.news import make_quadruples
from er_plugins.documents import CharShingler, WordShingler
from er_plugins.news import StopwordShingler

SHINGLERS = {
    "stopword n=2 english": lambda: StopwordShingler(StopwordShingler.Params(n=2, language="english")),
    "char k=5": lambda: CharShingler(CharShingler.Params(k=5)),
    "word n=2": lambda: WordShingler(WordShingler.Params(n=2)),
}


def visible_text(pages: list[str]) -> list[str]:
    from er_framework.io.html import extract_text

    texts, _ = extract_text(pages, boilerplate="keep")
    return [t or "" for t in texts]


def run(n: int, seed: int, cut_rate: float, repeat: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    quads = make_quadruples(n, seed=seed, cut_rate=cut_rate)
    t_gen = time.perf_counter() - t0
    pages = [p for q in quads for p in (q.a_x_t1, q.a_y_t2, q.b_x_t1)]
    t0 = time.perf_counter()
    texts = visible_text(pages)
    t_text = time.perf_counter() - t0
    article = np.array([sum(len(p) for p in q.a.paragraphs) for q in quads], dtype=np.float64)
    page = np.array([len(texts[3 * i]) for i in range(n)], dtype=np.float64)
    cut = np.array([q.a_cut < len(q.a.paragraphs) for q in quads])
    recs = Records.from_columns([str(i) for i in range(len(texts))], {"text": texts})
    first = np.arange(0, len(texts), 3, dtype=np.int64)
    out: dict[str, Any] = {
        "n": n,
        "seed": seed,
        "cut_rate": cut_rate,
        "pages": len(pages),
        "cut_comparisons": int(cut.sum()),
        "seconds_generate": round(t_gen, 3),
        "seconds_extract_text": round(t_text, 3),
        "mean_page_chars": round(float(page.mean()), 1),
        "mean_article_chars": round(float(article.mean()), 1),
        "chrome_share": round(float(1 - article.sum() / page.sum()), 4),
        "shinglers": {},
    }
    for name, make in SHINGLERS.items():
        shingler = make()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            tokens = shingler.shingle(recs)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        j_article = jaccard_pairs(tokens, first, first + 1)
        j_chrome = jaccard_pairs(tokens, first, first + 2)
        t_jac = time.perf_counter() - t0
        wins = j_article > j_chrome
        out["shinglers"][name] = {
            "rate": round(float(wins.mean()), 4),
            "rate_uncut": round(float(wins[~cut].mean()), 4) if (~cut).any() else None,
            "rate_cut": round(float(wins[cut].mean()), 4) if cut.any() else None,
            "seconds_shingle": round(min(times), 3),
            "seconds_jaccard": round(t_jac, 4),
            "mean_tokens": round(float(tokens.sizes.mean()), 1),
            "J_article": {
                "mean": round(float(j_article.mean()), 4),
                "min": round(float(j_article.min()), 4),
                "max": round(float(j_article.max()), 4),
            },
            "J_chrome": {
                "mean": round(float(j_chrome.mean()), 4),
                "min": round(float(j_chrome.min()), 4),
                "max": round(float(j_chrome.max()), 4),
            },
        }
    return out


def table(res: dict[str, Any]) -> str:
    lines = [
        (
            f"{res['n']:,} comparisons (seed {res['seed']}, {res['cut_comparisons']} with A cut), "
            f"{res['pages']:,} pages; chrome + ads = {res['chrome_share']:.0%} of the visible text "
            f"(page {res['mean_page_chars']:.0f} chars, article {res['mean_article_chars']:.0f}); "
            f"generate {res['seconds_generate']:.2f} s, extract text {res['seconds_extract_text']:.2f} s"
        ),
        "",
        (
            "| shingler | rate | rate (A cut) | mean J same article | mean J same ads+site "
            "| min J same article | max J same ads+site | tokens/page | shingle s | Jaccard s |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in res["shinglers"].items():
        cut = "—" if s["rate_cut"] is None else f"{s['rate_cut']:.4f}"
        lines.append(
            f"| {name} | {s['rate']:.4f} | {cut} | {s['J_article']['mean']:.3f} | {s['J_chrome']['mean']:.3f} "
            f"| {s['J_article']['min']:.3f} | {s['J_chrome']['max']:.3f} | {s['mean_tokens']:.0f} "
            f"| {s['seconds_shingle']:.2f} | {s['seconds_jaccard']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3000, help="comparisons (quadruples) per seed")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds")
    ap.add_argument("--cut-rate", type=float, default=0.3, help="share of comparisons whose T2 page has A cut")
    ap.add_argument("--repeat", type=int, default=3, help="shingling runs per shingler (the fastest is reported)")
    ap.add_argument("--out", type=Path, default=None, help="save the results as JSON")
    args = ap.parse_args(argv)
    results = []
    for seed in [int(s) for s in args.seeds.split(",") if s.strip()]:
        res = run(args.n, seed, args.cut_rate, args.repeat)
        print(table(res), end="\n\n", flush=True)
        results.append(res)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "command": " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        }
        args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
        print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
