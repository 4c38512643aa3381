"""``er index build|add|remove|info`` and ``er query`` (see :mod:`er_framework.index.store` and :mod:`er_framework.index.build`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from er_framework.cli.common import json_terminal_text, run_with_progress, say, terminal_text, workers_arg
from er_framework.errors import ErError, Problem

if TYPE_CHECKING:
    from er_framework.data import Records


def _source(index: Any, name: str | None, flag: str = "--source") -> tuple[int, Any]:
    """The index's source spec named ``name`` (the only one when ``name`` is None)."""
    sources = index.job.spec.sources
    if name is None:
        if len(sources) > 1:
            raise ErError(
                Problem(
                    where=flag,
                    message=f"this index has several sources ({', '.join(s.name for s in sources)})",
                    fix=f"name one: {flag} NAME",
                )
            )
        return 0, sources[0]
    for i, s in enumerate(sources):
        if s.name == name:
            return i, s
    raise ErError(Problem(where=flag, message=f"no source {name!r} in this index", fix=f"sources: {', '.join(s.name for s in sources)}"))


def read_items(index: Any, path: str, source: str | None, flag: str = "FILE") -> Records:
    """New items from a file in the format of the index's source (its id column and fields).

    ``path`` is a command-line argument: a relative path is relative to the
    current working directory (not to the job file, whose paths the job's own
    sources follow).
    """
    from er_framework.io.source_files import read_source_with_stats

    _, spec = _source(index, source)
    p = Path(path).absolute()
    if not p.exists():
        parent = p.parent
        more = "" if parent.is_dir() else f" (the folder {parent} does not exist either)"
        raise ErError(
            Problem(
                where=flag,
                message=f"no such file: {path}{more}",
                fix=f"check the path; a relative path is relative to the current directory ({Path.cwd()})",
            )
        )
    recs, _ = read_source_with_stats(p, where=f"items for source {spec.name!r}", **spec.read_options())
    return recs


def _record_arg(index: Any, text: str, source: str | None) -> Records:
    _, spec = _source(index, source)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ErError(Problem(where="--record", message=f"not JSON: {exc}", fix='e.g. --record \'{"name": "Ann"}\'')) from None
    if not isinstance(obj, dict):
        raise ErError(Problem(where="--record", message="expected a JSON object of field values"))
    unknown = sorted(set(obj) - set(spec.fields) - {spec.id})
    if unknown:
        raise ErError(
            Problem(
                where="--record",
                message=f"unknown field(s): {', '.join(unknown)}",
                fix=f"fields of source {spec.name!r}: {', '.join(spec.fields)}",
            )
        )
    from er_framework.data import Records

    rec_id = str(obj.get(spec.id, "query"))
    fields: dict[str, Sequence[str | None]] = {f: [None if obj.get(f) is None else str(obj.get(f))] for f in spec.fields}
    return Records.from_columns([rec_id], fields, spec.name)


def _text_arg(index: Any, texts: list[str], source: str | None) -> Records:
    _, spec = _source(index, source)
    if len(spec.fields) != 1:
        raise ErError(
            Problem(
                where="--text",
                message=f"source {spec.name!r} has {len(spec.fields)} fields ({', '.join(spec.fields)})",
                fix="give the item as --record JSON",
            )
        )
    from er_framework.data import Records

    return Records.from_columns([f"q{i}" for i in range(len(texts))], {spec.fields[0]: texts}, spec.name)


def cmd_index_build(args: argparse.Namespace) -> int:
    from er_framework.engine.model import load_model
    from er_framework.index.build import build_index

    model = load_model(args.model) if args.model else None
    # build_index checks the --index path (folder, permissions, an existing file) before the job runs
    index, rep = run_with_progress(args, lambda job, update: build_index(job, args.index, force=args.force, progress=update, model=model))
    info = index.info()
    index.close()
    if not args.quiet:
        say(
            f"index {args.index}: {info['records']:,} records, {info['clusters']:,} clusters, {info['pairs']:,} pairs, "
            f"{info['bucket_entries']:,} bucket entries, {info['bytes_on_disk'] / 2**20:.1f} MB "
            f"(run {rep['run_seconds']:.2f} s, total {rep['seconds']:.2f} s); model: {rep['model']}"
        )
        for note in rep.get("notes", []):
            say(f"note: {note}")
    return 0


def cmd_index_refit(args: argparse.Namespace) -> int:
    from er_framework.index.build import open_index

    with open_index(args.index) as index:
        stats = index.refit()
    if args.json:
        say(json_terminal_text(json.dumps(stats)))
    else:
        m = stats["model"]
        lam = (
            ""
            if m["lambda_after"] is None
            else (
                f"; lambda {m['lambda_before']:.4g} -> {m['lambda_after']:.4g}"
                if m["lambda_before"] is not None
                else f"; lambda {m['lambda_after']:.4g}"
            )
        )
        say(
            f"refitted {args.index}: {stats['records']:,} records, {stats['pairs']:,} pairs; "
            f"{stats['clusters_changed']:,} of {stats['clusters_after']:,} clusters changed "
            f"({stats['clusters_before']:,} before), {stats['records_moved']:,} records moved{lam} "
            f"({stats['seconds']:.2f} s)"
        )
    return 0


def cmd_index_add(args: argparse.Namespace) -> int:
    from er_framework.index.build import open_index

    with open_index(args.index) as index:
        items = read_items(index, args.file, args.source)  # before anything is written
        stats = index.add(items, source=args.source)
    say(json.dumps(stats) if args.json else _describe_write("added", stats))
    return 0


def cmd_index_remove(args: argparse.Namespace) -> int:
    from er_framework.index.build import open_index

    ids = list(args.ids)
    if args.file:
        try:
            ids += [line.strip() for line in Path(args.file).read_text(encoding="utf-8").splitlines() if line.strip()]
        except OSError as exc:
            raise ErError(Problem(where=args.file, message=f"cannot read: {exc}")) from None
    if not ids:
        raise ErError(Problem(where="er index remove", message="no ids given", fix="pass ids as arguments or --file IDS.txt"))
    with open_index(args.index) as index:
        stats = index.remove(ids, source=args.source)
    say(json.dumps(stats) if args.json else _describe_write("removed", stats))
    return 0


def _describe_write(verb: str, s: dict[str, Any]) -> str:
    lines = [f"{verb} {s.get('added', s.get('removed', 0)):,} records in {s['seconds']:.2f} s"]
    if "joined_existing" in s:
        lines.append(
            f"  {s['joined_existing']:,} joined an existing cluster, {s['new_clusters']:,} new clusters, "
            f"{s.get('exact_copies', 0):,} exact copies, {s.get('verified_pairs', 0):,} verified pairs "
            f"of {s.get('candidate_pairs', 0):,} candidates"
        )
    lines.append(
        f"  cluster ids changed for {s['ids_changed']:,} existing records: {s['merged']:,} clusters merged "
        f"into a larger one, {s['split']:,} split off, {s['retired']:,} retired "
        f"(er index info lists every change)"
    )
    if s.get("buckets_over_cap"):
        lines.append(f"  {s['buckets_over_cap']:,} buckets are over the blocker's size cap: they add no new pairs")
    return "\n".join(lines)


def cmd_index_golden(args: argparse.Namespace) -> int:
    """``er index golden INDEX [--out FILE] [--json]``: the index's golden records, as CSV (stdout or FILE) or JSON."""
    import csv
    import io

    from er_framework.index.build import open_index
    from er_framework.io.safe_write import write_text_file

    with open_index(args.index, readonly=True) as index:
        table = index.golden()
    if args.json:
        text = json.dumps(table, ensure_ascii=False) + "\n"
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(list(table))
        w.writerows(zip(*[["" if v is None else v for v in col] for col in table.values()]))
        text = buf.getvalue()
    if args.out:
        path = write_text_file(args.out, text, what="golden records", inputs=[Path(args.index)])
        if not args.quiet:
            say(f"wrote {len(table['cluster_id']):,} golden records to {path}")
    else:
        # to the terminal, control characters in values are shown escaped (--out writes the values exactly)
        sys.stdout.write(json_terminal_text(text) if args.json else terminal_text(text))
    return 0


def cmd_index_info(args: argparse.Namespace) -> int:
    from er_framework.index.build import open_index

    with open_index(args.index, readonly=True) as index:
        integrity = index.check() if args.check or index.check_is_cheap() else None
        if integrity is not None and integrity != "ok":
            from er_framework.index.sqlite import damaged

            raise damaged(args.index, f"quick_check: {integrity}", index.meta.get("config_path"))
        info = index.info()
        changes = index.latest_changes(20)
    if integrity is not None:
        info["integrity"] = integrity
    if args.json:
        say(json_terminal_text(json.dumps(info, indent=2)))
        return 0
    for key in (
        "path",
        "job",
        "config",
        "mode",
        "records",
        "per_source",
        "clusters",
        "largest_cluster",
        "singletons",
        "pairs",
        "exact_copies",
        "bucket_entries",
        "blockers",
        "verifier",
        "clusterer",
        "threshold",
        "built_with",
    ):
        say(f"{key:<16} {info[key]}")
    say(f"{'integrity':<16} " + ("ok (SQLite quick_check)" if integrity else "not checked (a large file): er index info --check"))
    say(f"{'size':<16} {info['bytes_on_disk'] / 2**20:.1f} MB")
    say("history:")
    for e in info["events"]:
        rest = {k: v for k, v in e.items() if k not in ("seq", "at", "command")}
        say(f"  {e['seq']:>4} {e['at']} {e['command']:<7} {json.dumps(rest)}")
    if changes:
        say("latest cluster id changes (seq, kind, id, now, records):")
        for row in changes:
            say("  " + "  ".join("-" if v is None else str(v) for v in row))
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from er_framework.index.build import open_index

    given = [x for x in (args.text, args.record, args.file) if x]
    if len(given) != 1:
        raise ErError(Problem(where="er query", message="give exactly one of --text, --record, --file"))
    if args.top_k is not None and args.top_k < 1:
        raise ErError(Problem(where="--top-k", message=f"{args.top_k} must be >= 1"))
    with open_index(args.index, readonly=True) as index:
        if args.text:
            items = _text_arg(index, args.text, args.source)
        elif args.record:
            items = _record_arg(index, args.record, args.source)
        else:
            items = read_items(index, args.file, args.source, "--file")
        results = index.query(items, source=args.source, top_k=args.top_k)
    out = sys.stdout
    for matches in results:
        for m in matches:
            out.write(json_terminal_text(json.dumps(m.as_dict(), ensure_ascii=False)) + "\n")
    return 0


def add_parser(sub: Any) -> None:
    """``er index build|add|remove|refit|info`` and ``er query``."""
    p = sub.add_parser(
        "index",
        help="a persistent index: build, add, remove, info",
        description="A saved index that answers queries and grows without recomputing everything; "
        "cluster ids stay stable (see docs/guide/persistent-index.md).",
    )
    isub = p.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    b = isub.add_parser("build", help="run a job and persist it as an index")
    b.add_argument("config", help="the job's YAML file")
    b.add_argument("--index", required=True, metavar="PATH", help="the index file to write")
    b.add_argument("--force", action="store_true", help="replace an existing index")
    b.add_argument("--model", metavar="FILE", help="apply a saved model (er train) instead of fitting one")
    b.add_argument("--quiet", "-q", action="store_true")
    b.add_argument("--workers", type=workers_arg, metavar="N|auto", help="threads for the run (overrides the YAML)")
    b.set_defaults(func=cmd_index_build)
    a = isub.add_parser("add", help="add new items: block, verify, cluster; ids of untouched clusters stay")
    a.add_argument("index", metavar="PATH")
    a.add_argument(
        "file",
        help="new items, in the format of the source (its id column and fields); a relative path is relative to the current directory",
    )
    a.add_argument("--source", help="the source the items belong to (needed when the index has several)")
    a.add_argument("--json", action="store_true", help="print the statistics as JSON")
    a.set_defaults(func=cmd_index_add)
    r = isub.add_parser("remove", help="remove records by id")
    r.add_argument("index", metavar="PATH")
    r.add_argument("ids", nargs="*", help="ids to remove")
    r.add_argument("--file", help="a file with one id per line (relative to the current directory)")
    r.add_argument("--source", help="the source of the ids (needed when the index has several)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_index_remove)
    f = isub.add_parser("refit", help="fit the job's model again on every record; re-score and re-cluster")
    f.add_argument("index", metavar="PATH")
    f.add_argument("--json", action="store_true", help="print the statistics as JSON")
    f.set_defaults(func=cmd_index_refit)
    i = isub.add_parser("info", help="counts, the job, the history of writes")
    i.add_argument("index", metavar="PATH")
    i.add_argument("--json", action="store_true")
    i.add_argument(
        "--check",
        action="store_true",
        help="check the file's integrity even when it is large (SQLite quick_check: reads every page, "
        "~1 s per GB); a file up to 256 MB is always checked",
    )
    i.set_defaults(func=cmd_index_info)

    g = isub.add_parser("golden", help="the golden records (output.golden): one merged record per cluster, with provenance")
    g.add_argument("index", metavar="PATH")
    g.add_argument("--out", metavar="FILE", help="write the CSV (or JSON) to FILE instead of printing it")
    g.add_argument("--json", action="store_true", help="JSON columns instead of CSV")
    g.add_argument("--quiet", "-q", action="store_true")
    g.set_defaults(func=cmd_index_golden)

    q = sub.add_parser(
        "query",
        help="near-duplicates of new items in an index (JSON lines)",
        description="Candidates from the index's buckets, verified with the job's exact score, best first, "
        "with their cluster ids; one JSON object per match. Items are not added.",
    )
    q.add_argument("index", metavar="PATH")
    q.add_argument("--text", action="append", help="an item's text (sources with one field); repeatable")
    q.add_argument("--record", help="an item as a JSON object of field values")
    q.add_argument(
        "--file", help="items in the format of the source (its id column and fields); a relative path is relative to the current directory"
    )
    q.add_argument("--source", help="the items' source (needed when the index has several)")
    q.add_argument("--top-k", type=int, help="at most K matches per item")
    q.set_defaults(func=cmd_query)
