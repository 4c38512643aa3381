"""``er synth fingerprints|customers|persons|inventors|news``: test data with known truth.

Every size is checked before anything is generated: the data are built in
memory, so each size has a maximum (:data:`MAX_CUSTOMERS`, :data:`MAX_PRINTS`,
:data:`MAX_CELLS`, :data:`MAX_NEWS_PAGES`, :data:`MAX_PERSONS`, :data:`MAX_INVENTOR_MENTIONS`) that keeps a run within
a few GB, and a bad value is a message with exit 2, never a traceback or a run that eats the machine.

Every file is written through :mod:`er_framework.io.safe_write` (:mod:`er_framework.synth.files`): a file of
the same name already in ``--out`` is replaced only when it is one synth wrote (the CSV header, the JSONL keys,
the Parquet columns, the page frame synth writes), so re-running a command into the same folder works and a
user's own ``truth.csv`` is refused (exit 2, nothing written: every target is checked before any is written).
``er synth news --force`` removes the ``.html`` pages of an earlier corpus in ``--out/pages`` before writing
the new one: only pages synth wrote; another ``.html`` file there is refused (and nothing is removed).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from er_framework.errors import ErError, Problem, os_problem

__all__ = [
    "MAX_CELLS",
    "MAX_CUSTOMERS",
    "MAX_INVENTOR_MENTIONS",
    "MAX_NEWS_PAGES",
    "MAX_PERSONS",
    "MAX_PRINTS",
    "add_parser",
    "cmd_synth_customers",
    "cmd_synth_fingerprints",
    "cmd_synth_inventors",
    "cmd_synth_news",
    "cmd_synth_persons",
    "count_arg",
]

#: most records per company: both companies are generated in memory, about 1.1 KB per record
#: (measured: 318 MB peak for 2 x 200k), so 2 x 5M records take about 11 GB
MAX_CUSTOMERS = 5_000_000
#: most person records: generated in memory one Python dict per record, about 2 KB each
#: (measured: 250 MB peak and 10 s for 100,000 records), so 2M records take about 4 GB and four minutes
MAX_PERSONS = 2_000_000
#: most inventor mentions: generated in memory one Python dict per mention plus the inventors and teams, about 2 KB
#: each (measured: 20,000 mentions in about 2 s), so 2M mentions take about 4 GB
MAX_INVENTOR_MENTIONS = 2_000_000
#: most prints (fingers x impressions): simulated in memory, about 6.5 KB per print
#: (measured: 1.3 GB peak for 200k geometric prints), so 1M prints take about 6.5 GB
MAX_PRINTS = 1_000_000
#: most cells of a cells-mode grid (COLS x ROWS): 256 x 256; a print's cells are a bit vector
MAX_CELLS = 1 << 16
#: most impressions per finger
MAX_IMPRESSIONS = 1000
#: most news pages: generated in memory, about 20 KB of HTML each (plus the truth), so 50,000 take about 1.5 GB
MAX_NEWS_PAGES = 50_000
#: seeds numpy accepts
MAX_SEED = 2**63 - 1


def count_arg(text: str) -> int:
    """A whole number as typed: ``2000``, ``2_000`` or ``2e3`` (a float notation only when whole)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or x != int(x):
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(x)


def _size_problem(flag: str, value: int, lo: int, hi: int, why: str) -> list[Problem]:
    if lo <= value <= hi:
        return []
    return [Problem(where=flag, message=f"must be from {lo:,} to {hi:,}, got {value:,}", fix=why)]


def _folder_problem(cmd: str, out: Path) -> list[Problem]:
    """``--out`` names a file where a folder is wanted (a missing folder is created)."""
    if out.exists() and not out.is_dir():
        message = f"{str(out)!r} is a file, not a folder"
        return [Problem(where=f"{cmd} --out", message=message, fix="name a folder (it is created when missing)")]
    return []


def _seed_problem(cmd: str, seed: int) -> list[Problem]:
    return _size_problem(f"{cmd} --seed", seed, 0, MAX_SEED, "a seed is a whole number >= 0 (below 2**63)")


def _float_problem(flag: str, value: float, lo: float, hi: float, *, lo_open: bool = False) -> list[Problem]:
    ok = math.isfinite(value) and (lo < value if lo_open else lo <= value) and value <= hi
    if ok:
        return []
    left = "(" if lo_open else "["
    hi_text = "inf" if math.isinf(hi) else f"{hi:g}"
    return [Problem(where=flag, message=f"must be a finite number in {left}{lo:g}, {hi_text}], got {value!r}")]


def cmd_synth_customers(args: argparse.Namespace) -> int:
    from er_framework.synth.customers import MAX_SOURCES, generate_customers, write_customers

    cmd = "er synth customers"
    problems = (
        _size_problem(
            f"{cmd} --n",
            args.n,
            1,
            MAX_CUSTOMERS,
            f"the records of both companies are generated in memory (about 1.1 KB each: {MAX_CUSTOMERS:,} per "
            "company take about 11 GB); generate several smaller files with different --seed values instead",
        )
        + _size_problem(f"{cmd} --sources", args.sources, 2, MAX_SOURCES, "the companies are named A to Z")
        + _seed_problem(cmd, args.seed)
        + _float_problem(f"{cmd} --overlap", args.overlap, 0.0, 1.0)
        + _folder_problem(cmd, Path(args.out))
    )
    if not problems and args.n * args.sources > 2 * MAX_CUSTOMERS:
        problems += _size_problem(
            f"{cmd} --n",
            args.n,
            1,
            2 * MAX_CUSTOMERS // args.sources,
            f"the records of all {args.sources} companies are generated in memory (about 1.1 KB each: at most "
            f"{2 * MAX_CUSTOMERS:,} records in all); generate several smaller files with different --seed values instead",
        )
    if problems:
        raise ErError(problems)
    try:
        data = generate_customers(args.n, args.overlap, args.seed, sources=args.sources)
    except ValueError as exc:
        raise ErError(f"er synth customers: {exc}") from None
    paths = write_customers(data, args.out)
    files = ", ".join(f"{paths[side]} ({args.n:,} records)" for side in paths if side != "truth")
    print(f"wrote {files}, {paths['truth']} ({len(data.truth):,} pairs)")
    return 0


def cmd_synth_persons(args: argparse.Namespace) -> int:
    """Person records for deduplication: OUT/persons.csv (or .parquet) and OUT/truth.csv (id, entity)."""
    from er_framework.synth.persons import generate_persons, write_persons

    cmd = "er synth persons"
    problems = _size_problem(
        f"{cmd} --n",
        args.n,
        2,
        MAX_PERSONS,
        f"the records are generated in memory (about 2 KB each: {MAX_PERSONS:,} take about 4 GB); "
        "generate several smaller files with different --seed values instead",
    ) + _seed_problem(cmd, args.seed)
    if not problems:
        problems += _size_problem(
            f"{cmd} --duplicates", args.duplicates, 0, args.n - 1, "each duplicate copies another record: fewer duplicates than --n"
        )
    if not problems:
        problems += _size_problem(
            f"{cmd} --triples", args.triples, 0, args.duplicates // 2, "a triple is two of the duplicates (copies of one person)"
        )
    if args.float_dates is not None:
        problems += _float_problem(f"{cmd} --float-dates", args.float_dates, 0.0, 1.0)
    out = Path(args.out)
    problems += _folder_problem(cmd, out)
    if problems:
        raise ErError(problems)
    try:
        data = generate_persons(args.n, args.duplicates, args.seed, triples=args.triples)
    except ValueError as exc:
        raise ErError(f"{cmd}: {exc}") from None
    paths = write_persons(data, out, fmt=args.format, float_share=args.float_dates)
    pairs = args.duplicates + args.triples
    print(f"wrote {paths['persons']} ({args.n:,} records, {pairs:,} duplicate pairs) and {paths['truth']} (id, entity)")
    return 0


def cmd_synth_inventors(args: argparse.Namespace) -> int:
    """Inventor mentions of patents: OUT/inventors.csv (or .parquet) and OUT/truth.csv (id, entity)."""
    from er_framework.synth.inventors import generate_inventors, write_inventors

    cmd = "er synth inventors"
    problems = _size_problem(
        f"{cmd} --n",
        args.n,
        1,
        MAX_INVENTOR_MENTIONS,
        f"the mentions are generated in memory (about 2 KB each: {MAX_INVENTOR_MENTIONS:,} take about 4 GB); "
        "generate several smaller files with different --seed values instead",
    ) + _seed_problem(cmd, args.seed)
    out = Path(args.out)
    problems += _folder_problem(cmd, out)
    if problems:
        raise ErError(problems)
    try:
        data = generate_inventors(args.n, args.seed)
    except ValueError as exc:
        raise ErError(f"{cmd}: {exc}") from None
    paths = write_inventors(data, out, fmt=args.format)
    n_inventors = len({e for _, e in data.truth})
    n_patents = len(set(data.records["patent_id"]))
    print(
        f"wrote {paths['inventors']} ({args.n:,} mentions of {n_inventors:,} inventors on {n_patents:,} patents) "
        f"and {paths['truth']} (id, entity)"
    )
    return 0


def cmd_synth_fingerprints(args: argparse.Namespace) -> int:
    """Simulated prints as JSONL minutiae plus a truth CSV (id, finger)."""
    from er_framework.synth.fingerprints import simulate_cells, simulate_minutiae, write_prints_jsonl

    memory = f"the prints are simulated in memory (about 6.5 KB each: {MAX_PRINTS:,} take about 6.5 GB)"
    cmd = "er synth fingerprints"
    problems = _size_problem(f"{cmd} --fingers", args.fingers, 1, MAX_PRINTS, memory)
    problems += _size_problem(f"{cmd} --impressions", args.impressions, 1, MAX_IMPRESSIONS, "a few impressions per finger")
    prints = args.fingers * args.impressions
    if not problems and prints > MAX_PRINTS:
        problems.append(
            Problem(
                where=f"{cmd} --fingers x --impressions",
                message=f"{prints:,} prints is more than the maximum {MAX_PRINTS:,}",
                fix=f"{memory}; lower --fingers or --impressions",
            )
        )
    try:
        gx, gy = (int(v) for v in args.grid.lower().split("x"))
        if gx < 1 or gy < 1:
            raise ValueError
    except ValueError:
        problems.append(Problem(where=f"{cmd} --grid", message=f"{args.grid!r} is not COLSxROWS", fix="e.g. --grid 20x20"))
        gx = gy = 1
    if gx * gy > MAX_CELLS:
        problems.append(
            Problem(
                where=f"{cmd} --grid",
                message=f"{args.grid} has {gx * gy:,} cells, more than {MAX_CELLS:,}",
                fix="at most 256x256 cells (each print keeps a bit per cell); e.g. --grid 20x20",
            )
        )
    problems += _seed_problem(cmd, args.seed)
    problems += _float_problem(f"{cmd} --occupancy", args.occupancy, 0.0, 1.0)
    problems += _float_problem(f"{cmd} --agreement", args.agreement, 0.0, 1.0, lo_open=True)
    problems += _float_problem(f"{cmd} --width", args.width, 0.0, 1e9, lo_open=True)
    problems += _float_problem(f"{cmd} --height", args.height, 0.0, 1e9, lo_open=True)
    problems += _float_problem(f"{cmd} --sigma", args.sigma, 0.0, math.inf)
    problems += _folder_problem(cmd, Path(args.out))
    if problems:
        raise ErError(problems)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.mode == "cells":
        import numpy as np

        from er_framework.kernels.bits import unpack_bits

        bits, finger = simulate_cells(args.fingers, args.impressions, gx * gy, args.occupancy, args.agreement, seed=args.seed)
        cells = unpack_bits(bits, gx * gy)
        cw, ch = args.width / gx, args.height / gy
        centres = []
        for i in range(len(cells)):  # one step per print: cell centres as minutiae
            c = cells.row(i).astype("int64")
            centres.append(((c % gx + 0.5) * cw, (c // gx + 0.5) * ch))
        minutiae = [np.column_stack(xy) if len(xy[0]) else np.zeros((0, 2)) for xy in centres]
    else:
        minutiae, finger = simulate_minutiae(args.fingers, args.impressions, args.width, args.height, sigma=args.sigma, seed=args.seed)
    ids = [f"f{int(f)}-{i % args.impressions}" for i, f in enumerate(finger)]
    write_prints_jsonl(out / "prints.jsonl", ids, minutiae, truth_path=out / "truth.csv", finger=finger)
    print(f"wrote {len(ids):,} prints of {args.fingers:,} fingers to {out / 'prints.jsonl'} (truth: {out / 'truth.csv'})")
    return 0


def _earlier_pages(pages_dir: Path) -> list[Path]:
    """The ``.html``/``.htm`` files below ``pages_dir`` (deepest first); none when it is not a folder."""
    if not pages_dir.is_dir() or pages_dir.is_symlink():
        return []
    found = (f for f in pages_dir.rglob("*.htm*") if f.suffix.lower() in (".html", ".htm"))
    return sorted((f for f in found if f.is_file() or f.is_symlink()), reverse=True)


def _synth_page(path: Path) -> bool:
    """``path`` is a regular file (not a link) holding a page er synth news wrote (:data:`PAGE_KIND`)."""
    from er_framework.io.safe_write import HEAD_BYTES
    from er_framework.synth.news_corpus import PAGE_KIND

    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            return PAGE_KIND.recognizes(fh.read(HEAD_BYTES))
    except OSError:
        return False


def cmd_synth_news(args: argparse.Namespace) -> int:
    """News pages of the template families with truth: OUT/pages/<site>/<story>.html, truth.csv, shared.csv."""
    from er_framework.synth.files import check_targets
    from er_framework.synth.news_corpus import make_corpus, resolve_families, table_targets, write_corpus

    cmd = "er synth news"
    problems = (
        _size_problem(
            f"{cmd} --pages",
            args.pages,
            1,
            MAX_NEWS_PAGES,
            f"the pages are generated in memory (about 20 KB each: {MAX_NEWS_PAGES:,} take about 1.5 GB); "
            "generate several corpora with different --seed values instead",
        )
        + _seed_problem(cmd, args.seed)
        + _float_problem(f"{cmd} --chrome-scale", args.chrome_scale, 0.0, 4.0, lo_open=True)
    )
    try:
        resolve_families(args.families)
    except ValueError as exc:
        problems.append(Problem(where=f"{cmd} --families", message=str(exc), fix="e.g. --families heldout"))
    out = Path(args.out)
    pages_dir = out / "pages"
    problems += _folder_problem(cmd, out)
    if out.is_dir() and pages_dir.is_dir() and any(pages_dir.iterdir()) and not args.force:
        problems.append(
            Problem(
                where=f"{cmd} --out",
                message=f"{str(pages_dir)!r} already holds pages (of an earlier corpus?)",
                fix="choose an empty or new folder, or add --force to replace its .html pages, truth.csv and shared.csv",
            )
        )
    old_pages = _earlier_pages(pages_dir) if args.force and not problems else []
    foreign = [f for f in old_pages if not _synth_page(f)]
    if foreign:
        problems.append(
            Problem(
                where=f"{cmd} --force",
                message=f"{str(pages_dir)!r} holds {len(foreign):,} .html file(s) er synth news did not write "
                f"(e.g. {str(foreign[0])!r}): --force replaces only the pages of an earlier corpus",
                fix="move those files away, or choose an empty or new folder",
            )
        )
    if problems:
        raise ErError(problems)
    try:
        corpus = make_corpus(args.pages, args.families, args.seed, chrome_scale=args.chrome_scale)
    except ValueError as exc:
        raise ErError(f"{cmd}: {exc}") from None
    check_targets(table_targets(out))  # truth.csv and shared.csv before any page is removed
    if old_pages:  # --force: only the pages an earlier corpus wrote (checked above), then empty folders
        try:
            for f in old_pages:
                f.unlink()
            for d in sorted((d for d in pages_dir.rglob("*") if d.is_dir() and not d.is_symlink()), reverse=True):
                if not any(d.iterdir()):
                    d.rmdir()
        except OSError as exc:
            raise ErError(os_problem(exc, str(pages_dir), "remove the pages of the earlier corpus")) from None
    out.mkdir(parents=True, exist_ok=True)
    paths = write_corpus(corpus, out)
    n_sites = len({p.site for p in corpus.pages})
    print(
        f"wrote {len(corpus.pages):,} pages of {len(corpus.stories):,} stories on {n_sites} sites "
        f"(families: {', '.join(corpus.families)}) to {paths['pages']} (truth: {paths['truth']}, "
        f"shared text: {paths['shared']})"
    )
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("synth", help="generate test data with known truth", description="Generate test data with ground truth.")
    synth_sub = p.add_subparsers(dest="domain", metavar="DOMAIN", required=True)
    f = synth_sub.add_parser(
        "fingerprints",
        help="simulated prints (JSONL minutiae + truth.csv)",
        description="Simulate fingerprints: 'cells' follows the seed's model (each cell occupied with probability p, "
        "a second impression keeps each occupied cell with probability q; minutiae at cell centres), "
        "'geometric' draws minutiae with displacement noise, drops and spurious points.",
    )
    f.add_argument("--fingers", type=count_arg, required=True, help=f"number of fingers (fingers x impressions at most {MAX_PRINTS:,})")
    f.add_argument("--impressions", type=count_arg, default=2, help="impressions per finger (2)")
    f.add_argument("--mode", choices=["cells", "geometric"], default="geometric")
    f.add_argument("--grid", default="20x20", help="cells mode: COLSxROWS (20x20)")
    f.add_argument("--occupancy", type=float, default=0.2, help="cells mode: p (0.2)")
    f.add_argument("--agreement", type=float, default=0.8, help="cells mode: q (0.8)")
    f.add_argument("--width", type=float, default=500.0, help="frame width (500)")
    f.add_argument("--height", type=float, default=500.0, help="frame height (500)")
    f.add_argument("--sigma", type=float, default=3.0, help="geometric mode: displacement noise (3.0)")
    f.add_argument("--seed", type=count_arg, default=0)
    f.add_argument("--out", required=True, metavar="DIR", help="folder for prints.jsonl and truth.csv")
    f.set_defaults(func=cmd_synth_fingerprints)
    f = synth_sub.add_parser(
        "customers",
        help="customer records of two or more companies (a.csv, b.csv, …, truth.csv)",
        description="Customer records of company A and company B: B holds corrupted copies of OVERLAP*N of A's "
        "customers (typos, nicknames, swapped names, changed phones, moved addresses, missing fields, other "
        "formatting) and new people; truth.csv lists the pairs (a_id,b_id). With --sources 3 or more, companies "
        "C, D, … follow (c.csv, …; A and B are as with two): each holds corrupted copies of OVERLAP*N distinct "
        "people of the companies before it and new people, so every pair of companies shares customers, and "
        "truth.csv (left_id,right_id) lists every pair of records of one person in two companies (er evaluate "
        "reads it; ids start with their company's letter). Deterministic for a seed (with the same Faker and "
        "nicknames versions).",
    )
    f.add_argument("--n", type=count_arg, required=True, help=f"records per company (at most {MAX_CUSTOMERS:,})")
    f.add_argument("--overlap", type=float, default=0.5, help="share of each later company's records copied from the earlier ones (0.5)")
    f.add_argument("--sources", type=count_arg, default=2, help="companies: 2 (A, B) to 26 (A … Z) (2)")
    f.add_argument("--seed", type=count_arg, default=0)
    f.add_argument("--out", required=True, metavar="DIR", help="folder for a.csv, b.csv (c.csv, …) and truth.csv")
    f.set_defaults(func=cmd_synth_customers)
    f = synth_sub.add_parser(
        "persons",
        help="person records to deduplicate (persons.csv or .parquet, truth.csv)",
        description="Person records with DUPLICATES copies of other records' people, every copy with at least one "
        "error (typos, nicknames, swapped names, day/month swapped, year off by one, a missing part, a move, a "
        "married surname, a new phone); skewed name frequencies, households sharing surname and address, clustered "
        "birth years. Deterministic for a seed (with the same Faker and nicknames versions).",
    )
    f.add_argument("--n", type=count_arg, default=10_000, help=f"records, duplicates included (10,000; at most {MAX_PERSONS:,})")
    f.add_argument("--duplicates", type=count_arg, default=1_000, help="records that copy another record's person (1,000)")
    f.add_argument("--triples", type=count_arg, default=0, help="of the duplicates, second copies of a person that has one (0)")
    f.add_argument("--format", choices=["csv", "parquet"], default="csv", help="persons.csv or persons.parquet (csv)")
    f.add_argument(
        "--float-dates",
        type=float,
        default=None,
        metavar="SHARE",
        help="share of the rows whose birth year, month and day are written as floats (1999.0), as pandas writes a "
        "column with missing values (CSV: 0.2; Parquet: 0, any share > 0 makes the three columns float64)",
    )
    f.add_argument("--seed", type=count_arg, default=0)
    f.add_argument("--out", required=True, metavar="DIR", help="folder for persons.csv (or .parquet) and truth.csv")
    f.set_defaults(func=cmd_synth_persons)
    f = synth_sub.add_parser(
        "inventors",
        help="inventor mentions of patents to disambiguate (inventors.csv or .parquet, truth.csv)",
        description="Inventor mentions: one record per inventor named on a patent (id, patent_id, first, middle and "
        "last name, city, state, country, assignee, coinventors and classes as lists), the truth says which mentions "
        "are one inventor. Heavy-tailed patents per inventor (most 1-2, some 50+), teams of 1-6 inventors per patent "
        "sharing assignee, classes and city, many different inventors with one full name (common Chinese, Korean, "
        "Japanese, Vietnamese names), careers that change city and employer, noisy mentions (initials, middle names "
        "present or not, typos, assignee spellings). Lists are ';'-joined in CSV, list<string> in Parquet. "
        "Deterministic for a seed (with the same Faker version).",
    )
    f.add_argument("--n", type=count_arg, default=20_000, help=f"mentions (20,000; at most {MAX_INVENTOR_MENTIONS:,})")
    f.add_argument("--format", choices=["csv", "parquet"], default="csv", help="inventors.csv or inventors.parquet (csv)")
    f.add_argument("--seed", type=count_arg, default=0)
    f.add_argument("--out", required=True, metavar="DIR", help="folder for inventors.csv (or .parquet) and truth.csv")
    f.set_defaults(func=cmd_synth_inventors)
    f = synth_sub.add_parser(
        "news",
        help="news pages of template families (pages/<site>/<story>.html, truth.csv, shared.csv)",
        description="News pages with known truth: wire stories published on 1-6 sites, cut and edited copies, "
        "disclaimers and background sentences shared between different stories, and site chrome of eight "
        "template families (four for tuning, four held out; see er_framework.synth.news_corpus). "
        "Deterministic for a seed and a Python version.",
    )
    f.add_argument("--pages", type=count_arg, required=True, help=f"number of pages (at most {MAX_NEWS_PAGES:,})")
    f.add_argument("--families", default="tune", help="tune, heldout, all, or comma-separated family names (tune)")
    f.add_argument("--chrome-scale", type=float, default=1.0, help="multiplies the length of the families' chrome text (1.0; at most 4)")
    f.add_argument("--seed", type=count_arg, default=0)
    f.add_argument("--out", required=True, metavar="DIR", help="folder for pages/, truth.csv and shared.csv")
    f.add_argument(
        "--force", action="store_true", help="replace the .html pages of an earlier corpus in DIR/pages (other files are left alone)"
    )
    f.set_defaults(func=cmd_synth_news)
