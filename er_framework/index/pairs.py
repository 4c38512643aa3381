"""The verified pairs of stored records, found as the pipeline would find them, and the reads they need.

Equality with a rebuild. The pipeline's rules are mirrored: exact copies (in
dedup modes) are linked to the first record of their group with score 1.0
and take no part in blocking; in link mode only cross-source pairs; buckets
with more members than the blocker's cap are skipped. The index uses 64-bit
bucket ids where ``field_hash`` compares strings (collisions ~2**-64). A
bucket that grows past its cap stops producing *new* pairs, but the pairs it
produced before are kept (a rebuild would drop them): ``add`` reports such
buckets (``buckets_over_cap``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Pairs, Records
from er_framework.engine.engine import Engine
from er_framework.index.sqlite import chunks, marks

Int64Array = npt.NDArray[np.int64]


def stored_records(
    conn: sqlite3.Connection, rids: Sequence[int], sources: Sequence[str], field_names: Sequence[str]
) -> tuple[Records, dict[int, int]]:
    """Stored records ``rids`` as :class:`Records` (in that order) and their cluster ids."""
    rows: dict[int, tuple[int, str, str, int]] = {}
    for part in chunks(list(rids)):
        for rid, src, rec_id, fields, cluster in conn.execute(
            f"SELECT rid, source, id, fields, cluster FROM records WHERE rid IN ({marks(len(part))})", part
        ):
            rows[rid] = (src, rec_id, fields, cluster)
    values = [json.loads(rows[r][2]) for r in rids]
    fields = {name: [v[j] for v in values] for j, name in enumerate(field_names)}
    recs = Records(
        ids=[rows[r][1] for r in rids],
        source=np.asarray([rows[r][0] for r in rids], dtype=np.int32),
        source_names=list(sources),
        fields=fields,
    )
    return recs, {r: rows[r][3] for r in rids}


def members_of_buckets(conn: sqlite3.Connection, keys: Sequence[int]) -> dict[int, list[int]]:
    """``bucket id -> stored records`` of the buckets ``keys`` (those with members)."""
    out: dict[int, list[int]] = {}
    uniq = sorted(set(keys))
    for part in chunks(uniq):
        for key, rid in conn.execute(f"SELECT key, rid FROM buckets WHERE key IN ({marks(len(part))})", part):
            out.setdefault(key, []).append(rid)
    return out


def info_of(conn: sqlite3.Connection, rids: Sequence[int]) -> dict[int, tuple[int, int | None]]:
    """``rid -> (source, rep)`` of stored records."""
    out: dict[int, tuple[int, int | None]] = {}
    uniq = sorted(set(rids))
    for part in chunks(uniq):
        for rid, src, rep in conn.execute(f"SELECT rid, source, rep FROM records WHERE rid IN ({marks(len(part))})", part):
            out[rid] = (src, rep)
    return out


def find_pairs(
    conn: sqlite3.Connection,
    engine: Engine,
    sources: Sequence[str],
    field_names: Sequence[str],
    rids: list[int],
    recs: Records,
    exact: list[int | None],
    rows: Int64Array,
    keys: Int64Array,
    which: Int64Array,
    stats: dict[str, Any],
) -> Pairs:
    """The pairs the pipeline would find for ``rids`` (already stored, ``recs`` in that order).

    Exact copies (dedup modes) are linked to their group's first record
    and take no part in blocking; other records get the members of their
    buckets (active records only, cross-source in link mode, buckets over
    the cap skipped), verified with the job's verifier.
    """
    rep_of: dict[int, int] = {}
    exact_pairs: set[tuple[int, int]] = set()
    hashes = sorted({h for h in exact if h is not None})
    group: dict[int, list[int]] = {}
    for part in chunks(hashes):
        for rid, h in conn.execute(f"SELECT rid, exact FROM records WHERE exact IN ({marks(len(part))})", part):
            group.setdefault(h, []).append(rid)
    source_of = {r: s for r, (s, _) in info_of(conn, [r for g in group.values() for r in g]).items()}
    for i, (rid, h) in enumerate(zip(rids, exact)):
        if h is None:
            continue
        members = sorted(group.get(h, []))
        if engine.collapse:
            if members and members[0] != rid:
                rep_of[rid] = members[0]
                exact_pairs.add((members[0], rid))
        else:  # link mode: every cross-source copy, score 1.0
            for m in members:
                if m != rid and source_of[m] != int(recs.source[i]):
                    exact_pairs.add((min(m, rid), max(m, rid)))
    # the collapsed records: their rep column
    for part in chunks(rids):
        conn.execute(f"UPDATE records SET rep = NULL WHERE rid IN ({marks(len(part))})", part)
    conn.executemany("UPDATE records SET rep = ? WHERE rid = ?", [(rep, rid) for rid, rep in rep_of.items()])
    stats["exact_copies"] = stats.get("exact_copies", 0) + len(rep_of)

    caps = engine.caps()
    bucket_members = members_of_buckets(conn, keys.tolist())
    involved = {r for got in bucket_members.values() for r in got}
    info = info_of(conn, sorted(involved | set(rids)))

    def active(r: int) -> bool:
        return info[r][1] is None

    found: set[tuple[int, int]] = set()
    over_cap: set[int] = set()
    for row, key, b in zip(rows.tolist(), keys.tolist(), which.tolist()):
        me = rids[row]
        if not active(me):
            continue
        live = [r for r in bucket_members.get(key, []) if active(r)]
        cap = caps[b]
        if cap is not None and len(live) > cap:
            over_cap.add(key)
            continue
        for r in live:
            if r == me or (engine.link and info[r][0] == info[me][0]):
                continue
            found.add((min(r, me), max(r, me)))
    stats["buckets_over_cap"] = stats.get("buckets_over_cap", 0) + len(over_cap)
    found -= exact_pairs
    cand = sorted(found)
    stats["candidate_pairs"] = stats.get("candidate_pairs", 0) + len(cand)
    verified_l: list[int] = []
    verified_r: list[int] = []
    verified_s: list[float] = []
    if cand:
        need = sorted({r for p in cand for r in p})
        known = {r: i for i, r in enumerate(rids)}
        others = [r for r in need if r not in known]
        stored, _ = stored_records(conn, others, sources, field_names) if others else (None, {})
        both = Records.stack([recs, stored]) if stored is not None else recs
        where = dict(known)
        where.update({r: len(rids) + j for j, r in enumerate(others)})
        left = np.asarray([where[a] for a, _ in cand], dtype=np.int64)
        right = np.asarray([where[b] for _, b in cand], dtype=np.int64)
        scores = engine.score(both, Pairs(left, right))
        keep = engine.keep(scores)
        for (a, b), s, k in zip(cand, scores.tolist(), keep.tolist()):
            if k:
                verified_l.append(a)
                verified_r.append(b)
                verified_s.append(s)
    for a, b in sorted(exact_pairs):
        verified_l.append(a)
        verified_r.append(b)
        verified_s.append(1.0)
    stats["verified_pairs"] = stats.get("verified_pairs", 0) + len(verified_l)
    return Pairs(np.asarray(verified_l, dtype=np.int64), np.asarray(verified_r, dtype=np.int64), np.asarray(verified_s, dtype=np.float64))


__all__ = ["Int64Array", "find_pairs", "info_of", "members_of_buckets", "stored_records"]
