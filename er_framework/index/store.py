"""A persistent index: query new items, add and remove records, stable cluster ids.

The two tasks of the seeds are *discovery* (all similar pairs: ``er run``)
and *search* (the near-duplicates of one new item). An index keeps what a
job computed so that search and growth do not recompute everything::

    er index build job.yaml --index docs.erx     # run the job, persist it
    er query docs.erx --text "..." --top-k 5     # candidates -> verified, best first
    er index add docs.erx new.jsonl              # block, verify, cluster the new items
    er index remove docs.erx ID ...              # take records out
    er index info docs.erx

Storage: one SQLite database in WAL mode (stdlib ``sqlite3``). Every write
(``add``, ``remove``) is one transaction, so an interrupted writer leaves
the old index or the new one, never a mix, and readers keep querying the
last committed state while a writer works (WAL: readers never block on the
writer). ``build`` writes a new file next to the target and renames it.

Tables: ``meta`` (format version, the job's YAML, its resolved hash, the
versions of the components), ``records`` (row id = the record's position,
source, id, normalized fields as JSON, cluster id, exact-text hash and the
representative it was collapsed onto), ``buckets`` (bucket id, record: the
blockers' :meth:`~er_framework.capabilities.Keyed.lookup_keys`, a clustered
B-tree), ``pairs`` (verified pairs and scores: the graph that clustering
re-reads), ``events`` and ``cluster_changes`` (what each write did).

Signatures are not stored: the bucket ids are the banded signatures, and a
record's signature is recomputed from its stored fields when it is needed
(removing the record, promoting an exact copy). At 1M documents that saves
K * 4 bytes per record (512 MB at K = 128).

Stable cluster ids. After a write, the connected components of the pair
graph that the write touched are clustered again with the job's clusterer
(every built-in clusterer works per connected component, so the other
components' clusters cannot change). Each new cluster is then matched to the
old ids its records held: the (cluster, old id) pairs are taken in order of
overlap (records of the cluster that held the id), largest first, then
smaller id first; a pair is used when neither the cluster nor the id has one
yet. So when a batch merges clusters the *largest* of them keeps its id
(ties: the oldest, i.e. smallest, id) and the others are recorded as merged
into it; a cluster without an old id gets a fresh id (never reused, in order
of its first record). Records outside the touched components keep their id.

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

import functools
import json
import os
from collections import Counter
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, ParamSpec, Sequence, TypeVar

import numpy as np
import numpy.typing as npt

from er_framework.config.job import Job, load_yaml, resolve_job
from er_framework.data import Pairs, Records
from er_framework.engine import stages
from er_framework.engine.engine import Engine, signed_keys
from er_framework.engine.report import er_version, versions
from er_framework.errors import ErError, InputError, Problem
from er_framework.executors.local import run_local

Int64Array = npt.NDArray[np.int64]

#: on-disk layout version; an index of another version is refused with a message (2: the exact-text hash is
#: BLAKE2b-64 of the normalized text's UTF-8 bytes, :mod:`er_framework.kernels.digests`; 1 hashed code points)
FORMAT_VERSION = 2
#: SQLite's limit on host parameters is 32766; stay well below
_CHUNK = 900
#: ``add`` and ``remove`` run SQLite's quick_check before writing into an index up to this size (it reads
#: every page, ~0.2 s for 160 MB when cached); a larger index is checked on request (``er index info --check``)
QUICK_CHECK_MAX_BYTES = 256 << 20
#: test hook: seconds to sleep inside a write transaction, after the data is written
PAUSE_ENV = "ER_INDEX_PAUSE_BEFORE_COMMIT"

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records(
    rid INTEGER PRIMARY KEY,      -- position of the record (never reused)
    source INTEGER NOT NULL,      -- index into meta.sources
    id TEXT NOT NULL,
    fields TEXT NOT NULL,         -- JSON list of the normalized field values (meta.fields order)
    cluster INTEGER NOT NULL,
    exact INTEGER,                -- hash of the exact-duplicate text (NULL: empty or disabled)
    rep INTEGER                   -- dedup modes: the record this exact copy was collapsed onto
);
CREATE UNIQUE INDEX records_source_id ON records(source, id);
CREATE INDEX records_cluster ON records(cluster);
CREATE INDEX records_exact ON records(exact) WHERE exact IS NOT NULL;
CREATE INDEX records_rep ON records(rep) WHERE rep IS NOT NULL;
CREATE TABLE buckets(key INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY(key, rid)) WITHOUT ROWID;
CREATE TABLE pairs(a INTEGER NOT NULL, b INTEGER NOT NULL, score REAL NOT NULL, PRIMARY KEY(a, b)) WITHOUT ROWID;
CREATE INDEX pairs_b ON pairs(b);
CREATE TABLE events(seq INTEGER PRIMARY KEY, at TEXT NOT NULL, command TEXT NOT NULL, summary TEXT NOT NULL);
CREATE TABLE cluster_changes(
    seq INTEGER NOT NULL,         -- events.seq
    kind TEXT NOT NULL,           -- merged | split | retired | created
    cluster INTEGER NOT NULL,     -- the id concerned
    survivor INTEGER,             -- merged: the id its records now carry
    records INTEGER NOT NULL      -- records whose id changed (merged, split) or records concerned
);
"""


def _problem(path: str | Path, message: str, fix: str = "") -> ErError:
    return ErError(Problem(where=str(path), message=message, fix=fix))


def _chunks(values: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def _marks(k: int) -> str:
    return ",".join("?" * k)


#: the first 16 bytes of every SQLite database file
SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")
_ACCESS = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PERM", "SQLITE_NOMEM", "SQLITE_AUTH")


def rebuild_fix(path: str | Path, config: str | None = None) -> str:
    if config:
        return f"rebuild it with: er index build {config} --index {path} --force"
    return f"rebuild it with: er index build CONFIG --index {path} --force (CONFIG: the job it was built from)"


def damaged(path: str | Path, detail: str, config: str | None = None) -> ErError:
    """The error for an index whose file SQLite (or its integrity check) finds damaged; ``config``: its job's file."""
    return _problem(path, f"the index file {path} is damaged (sqlite: {detail})", rebuild_fix(path, config))


def sqlite_error(path: str | Path, exc: sqlite3.Error, doing: str = "use", config: str | None = None) -> ErError:
    """An SQLite error met while using the index at ``path``, as a message for the user.

    A busy or locked database, a file that cannot be opened, read or written
    (permissions, a full disk, an I/O error) and anything else, which is a
    damaged file (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, a malformed schema, …).
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith(_BUSY) or "locked" in text:
        return _problem(path, f"the index is busy: another process holds it (sqlite: {text})",
                        "wait for the other er index add/remove to finish, then try again")
    if name.startswith(_ACCESS) or "readonly" in text or "unable to open" in text:
        return _problem(path, f"cannot {doing} the index file {path} (sqlite: {text})",
                        "check the file's and its folder's permissions and the free disk space "
                        "(SQLite writes PATH-wal and PATH-shm beside the index)")
    return damaged(path, text, config)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """An :class:`Index` method whose SQLite errors become a message naming the index (the store's boundary)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            index = args[0]
            assert isinstance(index, Index)
            raise sqlite_error(index.path, exc, "write" if method.__name__ in ("add", "remove") else "read",
                               index.meta.get("config_path")) from None

    return wrapper


# ------------------------------------------------------------------ the index


def exact_hashes(job: Job, records: Records) -> list[int | None]:
    """The exact-duplicate hash of each record as stored (``None``: empty text or the stage disabled)."""
    if not job.exact.enabled:
        return [None] * len(records)
    keys, nonempty = stages.exact_keys(records, job.exact.normalize)
    return [int(k) if ok else None for k, ok in zip(signed_keys(keys).tolist(), nonempty.tolist())]


@dataclass
class Match:
    """One answer of :meth:`Index.query`."""

    query: str
    rank: int
    source: str
    id: str
    score: float
    cluster_id: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query, "rank": self.rank, "source": self.source, "id": self.id,
            "score": round(self.score, 6), "cluster_id": self.cluster_id,
        }


class Index:
    """An index on disk (see the module docstring). Open with :func:`open_index`."""

    def __init__(self, path: str | Path, conn: sqlite3.Connection, job: Job, meta: dict[str, Any],
                 *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.conn = conn
        #: opened with ``open_index(path, readonly=True)``: queries only, the file is never written
        self.readonly = readonly
        self.job = job
        self.meta = meta
        self.engine = Engine(job)
        self.engine.require_lookup(str(self.path), "an index")
        self.sources: list[str] = meta["sources"]
        self.fields: list[str] = meta["fields"]

    # ---------------------------------------------------------------- helpers

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _read(self) -> "_Txn":
        return _Txn(self.conn, "BEGIN")

    def _write(self) -> "_Txn":
        if self.readonly:
            raise _problem(self.path, "the index was opened read-only", "open it with open_index(path) to add or remove records")
        return _Txn(self.conn, "BEGIN IMMEDIATE")

    def check(self) -> str:
        """SQLite's ``PRAGMA quick_check`` of the whole file: ``"ok"`` or the first problems found.

        It reads every page (~1 s per GB when cached): ``add`` and ``remove`` run
        it before writing when the file is small (:data:`QUICK_CHECK_MAX_BYTES`)
        and on their error paths (a damaged file would otherwise pass for
        missing ids); ``er index info`` runs it on a small file or with ``--check``.
        """
        try:
            rows = self.conn.execute("PRAGMA quick_check(3)").fetchall()
        except sqlite3.DatabaseError as exc:
            return str(exc)
        lines = [line.strip() for r in rows for line in str(r[0]).splitlines()]
        found = [line for line in lines if line and not line.startswith("***")]  # "*** in database main ***"
        return "; ".join(found) or "ok"

    def _require_intact(self) -> None:
        """Raise the "damaged" error when the integrity check finds a problem."""
        result = self.check()
        if result != "ok":
            raise damaged(self.path, f"quick_check: {result}", self.meta.get("config_path"))

    def check_is_cheap(self) -> bool:
        """Whether the file (with its WAL) is small enough to check before every write."""
        return sum(p.stat().st_size for p in _files(self.path) if p.exists()) <= QUICK_CHECK_MAX_BYTES

    def _records(self, rids: Sequence[int]) -> tuple[Records, dict[int, int]]:
        """Stored records ``rids`` as :class:`Records` (in that order) and their cluster ids."""
        rows: dict[int, tuple[int, str, str, int]] = {}
        for part in _chunks(list(rids)):
            for rid, src, rec_id, fields, cluster in self.conn.execute(
                f"SELECT rid, source, id, fields, cluster FROM records WHERE rid IN ({_marks(len(part))})", part
            ):
                rows[rid] = (src, rec_id, fields, cluster)
        values = [json.loads(rows[r][2]) for r in rids]
        fields = {name: [v[j] for v in values] for j, name in enumerate(self.fields)}
        recs = Records(
            ids=[rows[r][1] for r in rids],
            source=np.asarray([rows[r][0] for r in rids], dtype=np.int32),
            source_names=list(self.sources),
            fields=fields,
        )
        return recs, {r: rows[r][3] for r in rids}

    def _members(self, keys: Sequence[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        uniq = sorted(set(keys))
        for part in _chunks(uniq):
            for key, rid in self.conn.execute(
                f"SELECT key, rid FROM buckets WHERE key IN ({_marks(len(part))})", part
            ):
                out.setdefault(key, []).append(rid)
        return out

    def _info_of(self, rids: Sequence[int]) -> dict[int, tuple[int, int | None]]:
        """``rid -> (source, rep)``."""
        out: dict[int, tuple[int, int | None]] = {}
        uniq = sorted(set(rids))
        for part in _chunks(uniq):
            for rid, src, rep in self.conn.execute(
                f"SELECT rid, source, rep FROM records WHERE rid IN ({_marks(len(part))})", part
            ):
                out[rid] = (src, rep)
        return out

    def _as_records(self, records: Records, source: str | None) -> Records:
        """Records of the caller mapped onto the index's sources and fields."""
        if source is None:
            if len(self.sources) > 1:
                raise _problem(self.path, f"this index has several sources ({', '.join(self.sources)})",
                               "name the source of the new items (--source NAME)")
            source = self.sources[0]
        if source not in self.sources:
            raise _problem(self.path, f"no source {source!r} in this index", f"sources: {', '.join(self.sources)}")
        s = self.sources.index(source)
        unknown = sorted(set(records.fields) - set(self.fields))
        if unknown:
            raise _problem(self.path, f"unknown field(s) {', '.join(unknown)}", f"the index's fields: {', '.join(self.fields)}")
        n = len(records)
        fields: dict[str, Sequence[str | None]] = {f: list(records.fields.get(f, [None] * n)) for f in self.fields}
        return Records(list(records.ids), np.full(n, s, dtype=np.int32), list(self.sources), fields)

    # ---------------------------------------------------------------- query

    @_guarded
    def query(self, records: Records, *, source: str | None = None, top_k: int | None = None) -> list[list[Match]]:
        """The indexed records similar to each of ``records``, best first.

        Each item is normalized, shingled, signed and bucketed like the job's
        records; the indexed records sharing a bucket (buckets over the
        blocker's cap skipped, counting the item) and, when the job finds exact
        duplicates, those with the same exact text (score 1.0) are scored with
        the job's verifier; those at or above its threshold are returned,
        highest score first (then index order), at most ``top_k`` per item.
        In link mode only records of other sources are candidates. Items are
        not added.
        """
        recs = stages.normalize(self.job, self._as_records(records, source))[0]
        n = len(recs)
        rows, keys, which = self.engine.keys(recs)
        exact = exact_hashes(self.job, recs)
        caps = self.engine.caps()
        out: list[list[Match]] = [[] for _ in range(n)]
        with self._read():
            members = self._members(keys.tolist())
            cand: dict[int, set[int]] = {}
            for row, key, b in zip(rows.tolist(), keys.tolist(), which.tolist()):
                got = members.get(key)
                if not got:
                    continue
                cap = caps[b]
                if cap is not None and len(got) + 1 > cap:
                    continue
                cand.setdefault(row, set()).update(got)
            exact_hits: dict[int, set[int]] = {}
            hashes = sorted({h for h in exact if h is not None})
            by_hash: dict[int, list[int]] = {}
            for part in _chunks(hashes):
                for rid, h in self.conn.execute(
                    f"SELECT rid, exact FROM records WHERE exact IN ({_marks(len(part))})", part
                ):
                    by_hash.setdefault(h, []).append(rid)
            for i, h in enumerate(exact):
                if h is not None and h in by_hash:
                    exact_hits[i] = set(by_hash[h])
                    cand.setdefault(i, set()).update(by_hash[h])
            olds = sorted({r for c in cand.values() for r in c})
            if not olds:
                return out
            stored, clusters = self._records(olds)
        pos = {r: j for j, r in enumerate(olds)}
        qi: list[int] = []
        oj: list[int] = []
        for i, rs in cand.items():
            for r in rs:
                if self.engine.link and stored.source[pos[r]] == recs.source[i]:
                    continue
                qi.append(i)
                oj.append(pos[r])
        both = Records.stack([recs, stored])
        pairs = Pairs(np.asarray(qi, dtype=np.int64), np.asarray(oj, dtype=np.int64) + n)
        scores = self.engine.score(both, pairs)
        for i, j, s in zip(qi, oj, scores.tolist()):
            r = olds[j]
            if i in exact_hits and r in exact_hits[i]:
                s = 1.0
            if s >= self.engine.threshold:
                out[i].append(Match(recs.ids[i], 0, self.sources[int(stored.source[j])], stored.ids[j], float(s), clusters[r]))
        for i in range(n):
            ranked = sorted(out[i], key=lambda m: (-m.score, m.source, m.id))
            if top_k is not None:
                ranked = ranked[:top_k]
            for k, m in enumerate(ranked, 1):
                m.rank = k
            out[i] = ranked
        return out

    # ---------------------------------------------------------------- growing

    def _connect(self, rids: list[int], recs: Records, exact: list[int | None], rows: Int64Array,
                 keys: Int64Array, which: Int64Array, stats: dict[str, Any]) -> Pairs:
        """The pairs the pipeline would find for ``rids`` (already stored, ``recs`` in that order).

        Exact copies (dedup modes) are linked to their group's first record
        and take no part in blocking; other records get the members of their
        buckets (active records only, cross-source in link mode, buckets over
        the cap skipped), verified with the job's verifier.
        """
        conn = self.conn
        rep_of: dict[int, int] = {}
        exact_pairs: set[tuple[int, int]] = set()
        hashes = sorted({h for h in exact if h is not None})
        group: dict[int, list[int]] = {}
        for part in _chunks(hashes):
            for rid, h in conn.execute(
                f"SELECT rid, exact FROM records WHERE exact IN ({_marks(len(part))})", part
            ):
                group.setdefault(h, []).append(rid)
        source_of = {r: s for r, (s, _) in self._info_of([r for g in group.values() for r in g]).items()}
        for i, (rid, h) in enumerate(zip(rids, exact)):
            if h is None:
                continue
            members = sorted(group.get(h, []))
            if self.engine.collapse:
                if members and members[0] != rid:
                    rep_of[rid] = members[0]
                    exact_pairs.add((members[0], rid))
            else:  # link mode: every cross-source copy, score 1.0
                for m in members:
                    if m != rid and source_of[m] != int(recs.source[i]):
                        exact_pairs.add((min(m, rid), max(m, rid)))
        # the collapsed records: their rep column
        for part in _chunks(rids):
            conn.execute(f"UPDATE records SET rep = NULL WHERE rid IN ({_marks(len(part))})", part)
        conn.executemany("UPDATE records SET rep = ? WHERE rid = ?", [(rep, rid) for rid, rep in rep_of.items()])
        stats["exact_copies"] = stats.get("exact_copies", 0) + len(rep_of)

        caps = self.engine.caps()
        bucket_members = self._members(keys.tolist())
        involved = {r for got in bucket_members.values() for r in got}
        info = self._info_of(sorted(involved | set(rids)))

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
                if r == me or (self.engine.link and info[r][0] == info[me][0]):
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
            stored, _ = self._records(others) if others else (None, {})
            both = Records.stack([recs, stored]) if stored is not None else recs
            where = dict(known)
            where.update({r: len(rids) + j for j, r in enumerate(others)})
            left = np.asarray([where[a] for a, _ in cand], dtype=np.int64)
            right = np.asarray([where[b] for _, b in cand], dtype=np.int64)
            scores = self.engine.score(both, Pairs(left, right))
            keep = scores >= self.engine.threshold
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
        return Pairs(np.asarray(verified_l, dtype=np.int64), np.asarray(verified_r, dtype=np.int64),
                     np.asarray(verified_s, dtype=np.float64))

    def _component(self, seeds: set[int]) -> tuple[list[int], Pairs]:
        """Every record connected to ``seeds`` in the stored pair graph, and the pairs among them."""
        nodes = set(seeds)
        frontier = sorted(seeds)
        edges: dict[tuple[int, int], float] = {}
        while frontier:
            nxt: set[int] = set()
            for part in _chunks(frontier, _CHUNK // 2):
                q = _marks(len(part))
                for a, b, s in self.conn.execute(
                    f"SELECT a, b, score FROM pairs WHERE a IN ({q}) UNION ALL SELECT a, b, score FROM pairs WHERE b IN ({q})",
                    list(part) + list(part),
                ):
                    edges[(a, b)] = s
                    for x in (a, b):
                        if x not in nodes:
                            nodes.add(x)
                            nxt.add(x)
            frontier = sorted(nxt)
        order = sorted(nodes)
        pos = {r: i for i, r in enumerate(order)}
        items = sorted(edges.items())
        return order, Pairs(
            np.asarray([pos[a] for (a, _), _ in items], dtype=np.int64),
            np.asarray([pos[b] for (_, b), _ in items], dtype=np.int64),
            np.asarray([s for _, s in items], dtype=np.float64),
        )

    def _recluster(self, seeds: set[int], seq: int, removed_ids: dict[int, int] | None = None) -> dict[str, Any]:
        """Cluster the components touching ``seeds`` again and give the clusters ids (module docstring)."""
        conn = self.conn
        stats: dict[str, Any] = {"records_reclustered": 0, "ids_changed": 0, "new_clusters": 0, "merged": 0, "split": 0, "retired": 0}
        if not seeds and not removed_ids:
            return stats
        nodes, pairs = self._component(seeds)
        stats["records_reclustered"] = len(nodes)
        labels = np.asarray(self.engine.clusterer.cluster(len(nodes), pairs), dtype=np.int64)
        old: dict[int, int] = {}
        for part in _chunks(nodes):
            for rid, c in conn.execute(f"SELECT rid, cluster FROM records WHERE rid IN ({_marks(len(part))})", part):
                old[rid] = c
        groups: dict[int, list[int]] = {}
        for rid, lab in zip(nodes, labels.tolist()):
            groups.setdefault(lab, []).append(rid)
        clusters = sorted(groups.values(), key=lambda g: g[0])
        overlap: dict[tuple[int, int], int] = {}
        for ci, members in enumerate(clusters):
            for r in members:
                c = old[r]
                if c >= 0:
                    overlap[(ci, c)] = overlap.get((ci, c), 0) + 1
        assigned: dict[int, int] = {}
        taken: set[int] = set()
        for (ci, c), _cnt in sorted(overlap.items(), key=lambda kv: (-kv[1], kv[0][1], kv[0][0])):
            if ci not in assigned and c not in taken:
                assigned[ci] = c
                taken.add(c)
        next_id = int(self._meta_get("next_cluster_id"))
        updates: list[tuple[int, int]] = []
        changes: list[tuple[int, str, int, int | None, int]] = []
        moved: dict[tuple[int, int], int] = {}  # (old id, new id) -> records
        for ci, members in enumerate(clusters):
            if ci not in assigned:
                assigned[ci] = next_id
                next_id += 1
                stats["new_clusters"] += 1
                changes.append((seq, "created", assigned[ci], None, len(members)))
            new = assigned[ci]
            for r in members:
                if old[r] != new:
                    updates.append((new, r))
                    if old[r] >= 0:
                        moved[(old[r], new)] = moved.get((old[r], new), 0) + 1
        for (c, new), cnt in sorted(moved.items()):
            kind = "merged" if c not in taken else "split"
            stats[kind] += 1
            changes.append((seq, kind, c, new, cnt))
        gone = set((removed_ids or {}).values()) - taken - {c for c, _ in moved}
        for c in sorted(gone):
            left = conn.execute("SELECT COUNT(*) FROM records WHERE cluster = ?", (c,)).fetchone()[0]
            if left == 0:
                stats["retired"] += 1
                changes.append((seq, "retired", c, None, sum(1 for v in (removed_ids or {}).values() if v == c)))
        stats["ids_changed"] = sum(1 for new, r in updates if old[r] >= 0)
        conn.executemany("UPDATE records SET cluster = ? WHERE rid = ?", updates)
        conn.executemany("INSERT INTO cluster_changes(seq, kind, cluster, survivor, records) VALUES (?, ?, ?, ?, ?)", changes)
        self._meta_set("next_cluster_id", str(next_id))
        return stats

    def _meta_get(self, key: str) -> str:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else ""

    def _meta_set(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def _event(self, command: str) -> int:
        cur = self.conn.execute(
            "INSERT INTO events(at, command, summary) VALUES (?, ?, '')",
            (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command),
        )
        return int(cur.lastrowid or 0)

    def _insert(self, recs: Records, first_rid: int) -> tuple[list[int], list[int | None], Int64Array, Int64Array, Int64Array]:
        rids = list(range(first_rid, first_rid + len(recs)))
        exact = exact_hashes(self.job, recs)
        cols = [recs.fields[f] for f in self.fields]
        self.conn.executemany(
            "INSERT INTO records(rid, source, id, fields, cluster, exact, rep) VALUES (?, ?, ?, ?, -1, ?, NULL)",
            (
                (rid, int(recs.source[i]), recs.ids[i], json.dumps([c[i] for c in cols], ensure_ascii=False), exact[i])
                for i, rid in enumerate(rids)
            ),
        )
        rows, keys, which = self.engine.keys(recs)
        self.conn.executemany(
            "INSERT OR IGNORE INTO buckets(key, rid) VALUES (?, ?)",
            zip(keys.tolist(), (rids[r] for r in rows.tolist())),
        )
        return rids, exact, rows, keys, which

    def _existing(self, recs: Records) -> list[str]:
        found: list[str] = []
        for s in sorted(set(recs.source.tolist())):
            ids = [recs.ids[i] for i in range(len(recs)) if recs.source[i] == s]
            for part in _chunks(ids):
                found += [r[0] for r in self.conn.execute(
                    f"SELECT id FROM records WHERE source = ? AND id IN ({_marks(len(part))})", [s, *part])]
        return found

    @_guarded
    def add(self, records: Records, *, source: str | None = None, command: str = "add") -> dict[str, Any]:
        """Add ``records`` (ids new to their source): block, verify and cluster them in one transaction."""
        t0 = time.perf_counter()
        recs = stages.normalize(self.job, self._as_records(records, source))[0]
        dup = sorted(i for i, c in Counter(recs.ids).items() if c > 1)
        if dup:
            raise _problem(self.path, f"{len(dup)} id(s) appear more than once in the new items: {', '.join(dup[:5])}",
                           "give every new item its own id")
        stats: dict[str, Any] = {"added": len(recs)}
        with self._write():
            if self.check_is_cheap():  # not into a damaged file (checked under the write lock)
                self._require_intact()
            clash = self._existing(recs)
            if clash:
                self._require_intact()  # (already done when cheap) ids read from a damaged table may be wrong
                raise _problem(self.path, f"{len(clash)} id(s) are already in the index: {', '.join(clash[:5])}"
                               + (" …" if len(clash) > 5 else ""),
                               "remove them first (er index remove) or give the new items other ids")
            seq = self._event(command)
            first = int(self.conn.execute("SELECT COALESCE(MAX(rid), -1) + 1 FROM records").fetchone()[0])
            first = max(first, int(self._meta_get("next_rid") or 0))
            rids, exact, rows, keys, which = self._insert(recs, first)
            self._meta_set("next_rid", str(first + len(recs)))
            pairs = self._connect(rids, recs, exact, rows, keys, which, stats)
            self.conn.executemany(
                "INSERT OR REPLACE INTO pairs(a, b, score) VALUES (?, ?, ?)",
                zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()),  # type: ignore[union-attr]
            )
            stats.update(self._recluster(set(rids), seq))
            stats["joined_existing"] = self._joined(rids)
            stats["seconds"] = round(time.perf_counter() - t0, 4)
            self.conn.execute("UPDATE events SET summary = ? WHERE seq = ?", (json.dumps(stats), seq))
            _pause()
        return stats

    def _joined(self, rids: list[int]) -> int:
        """New records whose cluster holds an older record."""
        lo = rids[0] if rids else 0
        return int(self.conn.execute(
            "SELECT COUNT(*) FROM records r WHERE r.rid >= ? AND EXISTS "
            "(SELECT 1 FROM records o WHERE o.cluster = r.cluster AND o.rid < ?)", (lo, lo)
        ).fetchone()[0])

    @_guarded
    def remove(self, ids: Sequence[str], *, source: str | None = None) -> dict[str, Any]:
        """Remove records by id; their pairs go, exact copies get a new representative, clusters are redone."""
        t0 = time.perf_counter()
        if source is None and len(self.sources) > 1:
            raise _problem(self.path, f"this index has several sources ({', '.join(self.sources)})",
                           "name the source of the ids (--source NAME)")
        src = self.sources.index(source) if source is not None else 0
        if source is not None and source not in self.sources:
            raise _problem(self.path, f"no source {source!r} in this index", f"sources: {', '.join(self.sources)}")
        stats: dict[str, Any] = {"removed": 0}
        with self._write():
            if self.check_is_cheap():
                self._require_intact()
            found: dict[str, tuple[int, int, int | None]] = {}
            for part in _chunks(list(dict.fromkeys(ids))):
                for rid, rec_id, cluster, exact in self.conn.execute(
                    f"SELECT rid, id, cluster, exact FROM records WHERE source = ? AND id IN ({_marks(len(part))})", [src, *part]
                ):
                    found[rec_id] = (rid, cluster, exact)
            missing = [i for i in dict.fromkeys(ids) if i not in found]
            if missing:
                self._require_intact()  # a damaged records table reads as ids that are not there
                raise _problem(self.path, f"{len(missing)} id(s) are not in the index: {', '.join(missing[:5])}",
                               "check the ids (er index info lists the sources); nothing was removed")
            seq = self._event("remove")
            rids = sorted(v[0] for v in found.values())
            removed_clusters = {v[0]: v[1] for v in found.values()}
            recs, _ = self._records(rids)
            rows, keys, _which = self.engine.keys(recs)
            self.conn.executemany("DELETE FROM buckets WHERE key = ? AND rid = ?",
                                  zip(keys.tolist(), (rids[r] for r in rows.tolist())))
            neighbours: set[int] = set()
            for part in _chunks(rids, _CHUNK // 2):
                q = _marks(len(part))
                for a, b in self.conn.execute(f"SELECT a, b FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2):
                    neighbours.update((a, b))
                self.conn.execute(f"DELETE FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2)
            # exact copies that were collapsed onto a removed record: the group's next record takes over
            orphans: list[int] = []
            for part in _chunks(rids):
                orphans += [r[0] for r in self.conn.execute(
                    f"SELECT rid FROM records WHERE rep IN ({_marks(len(part))})", part)]
            gone = set(rids)
            for part in _chunks(rids):
                self.conn.execute(f"DELETE FROM records WHERE rid IN ({_marks(len(part))})", part)
            orphans = sorted(set(orphans) - gone)
            if orphans:
                for part in _chunks(orphans, _CHUNK // 2):
                    q = _marks(len(part))
                    for a, b in self.conn.execute(f"SELECT a, b FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2):
                        neighbours.update((a, b))
                    self.conn.execute(f"DELETE FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2)
                orecs, _ = self._records(orphans)
                orows, okeys, owhich = self.engine.keys(orecs)
                pairs = self._connect(orphans, orecs, exact_hashes(self.job, orecs), orows, okeys, owhich, stats)
                self.conn.executemany(
                    "INSERT OR REPLACE INTO pairs(a, b, score) VALUES (?, ?, ?)",
                    zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()),  # type: ignore[union-attr]
                )
                neighbours.update(orphans)
                neighbours.update(pairs.left.tolist())
                neighbours.update(pairs.right.tolist())
            stats["removed"] = len(rids)
            stats["copies_relinked"] = len(orphans)
            stats.update(self._recluster(neighbours - gone, seq, removed_clusters))
            stats["seconds"] = round(time.perf_counter() - t0, 4)
            self.conn.execute("UPDATE events SET summary = ? WHERE seq = ?", (json.dumps(stats), seq))
            _pause()
        return stats

    # ---------------------------------------------------------------- reading

    @_guarded
    def clusters(self) -> dict[tuple[str, str], int]:
        """``(source, id) -> cluster id`` of every record."""
        with self._read():
            return {(self.sources[s], i): c for s, i, c in self.conn.execute("SELECT source, id, cluster FROM records")}

    @_guarded
    def pairs(self) -> dict[tuple[tuple[str, str], tuple[str, str]], float]:
        """Every stored verified pair, by ``(source, id)`` (ordered), with its score."""
        with self._read():
            name = {rid: (self.sources[s], i) for rid, s, i in self.conn.execute("SELECT rid, source, id FROM records")}
            out = {}
            for a, b, s in self.conn.execute("SELECT a, b, score FROM pairs"):
                x, y = sorted((name[a], name[b]))
                out[(x, y)] = s
            return out

    @_guarded
    def latest_changes(self, limit: int = 20) -> list[tuple[Any, ...]]:
        """The latest ``limit`` cluster id changes, newest first: ``(seq, kind, cluster, survivor, records)``."""
        with self._read():
            return [tuple(r) for r in self.conn.execute(
                "SELECT seq, kind, cluster, survivor, records FROM cluster_changes ORDER BY rowid DESC LIMIT ?", (limit,))]

    @_guarded
    def info(self) -> dict[str, Any]:
        with self._read():
            count = lambda sql: int(self.conn.execute(sql).fetchone()[0])  # noqa: E731
            per_source = {self.sources[s]: n for s, n in self.conn.execute("SELECT source, COUNT(*) FROM records GROUP BY source")}
            sizes = [n for (n,) in self.conn.execute("SELECT COUNT(*) FROM records GROUP BY cluster")]
            events = [
                {"seq": s, "at": at, "command": c, **(json.loads(summary) if summary else {})}
                for s, at, c, summary in self.conn.execute("SELECT seq, at, command, summary FROM events ORDER BY seq")
            ]
            out = {
                "path": str(self.path),
                "format_version": int(self.meta["format_version"]),
                "built_with": self.meta["er_version"],
                "job": self.job.spec.name,
                "config": self.meta["config_path"],
                "config_hash": self.meta["config_hash"],
                "mode": self.job.spec.mode,
                "records": sum(per_source.values()),
                "per_source": per_source,
                "clusters": len(sizes),
                "largest_cluster": max(sizes) if sizes else 0,
                "singletons": sum(1 for n in sizes if n == 1),
                "pairs": count("SELECT COUNT(*) FROM pairs"),
                "bucket_entries": count("SELECT COUNT(*) FROM buckets"),
                "exact_copies": count("SELECT COUNT(*) FROM records WHERE rep IS NOT NULL"),
                "blockers": [b.name for b in self.engine.blockers],
                "verifier": self.engine.verifier.name,
                "clusterer": self.engine.clusterer.name,
                "threshold": self.engine.threshold,
                "bytes_on_disk": sum(p.stat().st_size for p in _files(self.path) if p.exists()),
                "events": events,
            }
        return out


class _Txn:
    """A transaction: committed on success, rolled back on any exception."""

    def __init__(self, conn: sqlite3.Connection, begin: str) -> None:
        self.conn, self.begin = conn, begin

    def __enter__(self) -> None:
        self.conn.execute(self.begin)

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:  # some errors (I/O, a full disk, corruption) roll back by themselves
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error being raised says more than a failed rollback


def _pause() -> None:
    """Test hook (crash-safety test): sleep inside the write transaction when asked."""
    pause = os.environ.get(PAUSE_ENV)
    if pause:
        print("paused before commit", file=sys.stderr, flush=True)
        time.sleep(float(pause))


def _files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _connect_db(path: Path) -> sqlite3.Connection:
    """A read-write connection (WAL mode); only for a file known to be an index, or a new one."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=60.0, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("PRAGMA cache_size=-262144")  # 256 MB page cache
    return conn


def _connect_ro(path: Path) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``): no statement on it can change the file.

    On a WAL database SQLite still maps the shared-memory file ``PATH-shm`` (and
    opens ``PATH-wal``), creating them if no other connection has: that is how
    a reader sees a writer's committed transactions and how a writer knows not
    to checkpoint pages a reader is reading. The database file itself is never
    written.
    """
    conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None,
                           timeout=60.0, check_same_thread=False)
    conn.execute("PRAGMA cache_size=-262144")  # connection-local, nothing written
    return conn


def _sniff(path: Path) -> None:
    """Refuse a path that is missing, a folder, or not an SQLite database, without opening it with SQLite.

    (SQLite turns an empty file into a database on its first write, and a
    ``journal_mode`` pragma is such a write: the file is only read here.)
    """
    fix = f"build one with: er index build CONFIG --index {path}"
    if not path.exists():
        raise _problem(path, "no such index", fix)
    if path.is_dir():
        raise _problem(path, "is a folder, not an index file", "give the path of the .erx file")
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise _problem(path, f"cannot read the index file: {exc.strerror or exc}", "check the file's permissions") from None
    if head != SQLITE_MAGIC:
        what = "an empty file" if not head else "not an SQLite database"
        raise _problem(path, f"not an er-framework index ({what}); the file was not changed", fix)


def _read_meta(conn: sqlite3.Connection, path: Path) -> dict[str, str]:
    """The ``meta`` table of an er-framework index; "not an index" for any other SQLite database."""
    fix = f"build one with: er index build CONFIG --index {path}"
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "read") from None
    if "meta" not in tables:
        raise _problem(path, "not an er-framework index (an SQLite database without index metadata); "
                             "the file was not changed", fix)
    try:
        rows = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "read") from None
    if rows.get("kind") != "er-framework-index":
        raise _problem(path, "not an er-framework index (no index metadata); the file was not changed", fix)
    return rows


def _is_index(path: Path) -> bool:
    """An SQLite file with index metadata (any format version); read only."""
    try:
        _sniff(path)
        conn = _connect_ro(path)
    except (ErError, sqlite3.Error):
        return False
    try:
        _read_meta(conn, path)
    except ErError:
        return False
    finally:
        conn.close()
    return True


# ------------------------------------------------------------------ open / build


class _StoredJobUnreadable(ErError):
    """The job YAML kept in the index's meta table is not valid YAML (or is refused by the loader)."""


def _job_from_meta(meta: dict[str, Any], path: Path) -> Job:
    text = meta["config_yaml"]
    filename = f"{meta['config_path']} (stored in {path})"
    data, lines, problems = load_yaml(text, filename)
    if data is None or problems:
        raise _StoredJobUnreadable(problems or [Problem(where=str(path), message="the stored job is empty")])
    job = resolve_job(data, lines, filename, Path(meta["base_dir"]), problems, check_files=False,
                      config_path=Path(meta["config_path"]))
    return job


def open_index(path: str | Path, *, readonly: bool = False) -> Index:
    """Open an index for queries (``readonly=True``: the file is never written) or for queries and writes.

    Clear errors for a missing, foreign, damaged or incompatible file. Whether
    the file is an index is decided by reading it (its first bytes, then its
    ``meta`` table through a read-only connection) before anything can write to it.
    """
    path = Path(path)
    _sniff(path)
    try:
        conn = _connect_ro(path)
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "open") from None
    try:
        index = _open(path, conn, readonly)
    except BaseException:
        conn.close()
        raise
    if readonly:
        return index
    conn.close()  # known to be an index: now the read-write connection (WAL mode, as built)
    try:
        index.conn = _connect_db(path)
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "open") from None
    return index


def _open(path: Path, conn: sqlite3.Connection, readonly: bool) -> Index:
    rows = _read_meta(conn, path)
    try:
        version = int(rows.get("format_version", "0"))
    except ValueError:
        raise damaged(path, f"format_version {rows.get('format_version')!r} in its meta table") from None
    if version != FORMAT_VERSION:
        raise _problem(
            path,
            f"the index has format version {version}, this er-framework ({er_version()}) reads version {FORMAT_VERSION}",
            "rebuild it with: er index build CONFIG --index PATH (or use the er-framework "
            f"{rows.get('er_version', '?')} that built it)",
        )
    meta: dict[str, Any] = dict(rows)
    lacking = [k for k in ("sources", "fields", "config_yaml", "config_path", "base_dir", "config_hash") if k not in meta]
    if lacking:
        raise damaged(path, f"its meta table lacks {', '.join(lacking)}")
    try:
        meta["sources"] = json.loads(meta["sources"])
        meta["fields"] = json.loads(meta["fields"])
    except ValueError as exc:
        raise damaged(path, f"its meta table holds unreadable sources or fields: {exc}") from None
    try:
        job = _job_from_meta(meta, path)
    except _StoredJobUnreadable as exc:
        raise ErError(exc.problems + [Problem(
            where=str(path), message="the index's stored job (its YAML, kept in the index) cannot be read; nothing was run",
            fix=rebuild_fix(path, meta.get("config_path")) + "; an index from an unknown source may be hostile: do not use it")]) from None
    except ErError as exc:
        raise ErError(exc.problems + [Problem(
            where=str(path), message="the job stored in the index does not resolve with the installed plugins",
            fix="install the plugins it was built with, or rebuild the index")]) from None
    if job.config_hash() != meta["config_hash"]:
        raise _problem(
            path,
            "the stored job resolves to other component parameters than when the index was built "
            f"(hash {meta['config_hash'][:12]} then, {job.config_hash()[:12]} now): a plugin's defaults changed",
            f"rebuild the index with the installed versions, or install the versions it was built with: {meta.get('components')}",
        )
    return Index(path, conn, job, meta, readonly=readonly)


def check_target(path: str | Path, *, force: bool = False) -> None:
    """Refuse, before any work, an ``--index`` path that ``build_index`` could not write or must not replace.

    The folder must exist and take a new file (a probe file is created and
    removed); the path must not be a folder; an existing file is replaced only
    with ``force`` and only when it is an index.
    """
    path = Path(path)
    other = "choose another --index"
    if path.is_dir():
        raise _problem(path, "is a folder; --index names the index file to write", f"e.g. --index {path / 'index.erx'}")
    parent = path.absolute().parent
    if parent.exists() and not parent.is_dir():
        raise _problem(path, f"{parent} is a file, not a folder", other)
    if not parent.is_dir():
        raise _problem(path, f"the folder {parent} does not exist", f"create it first (mkdir -p {parent}), or {other}")
    if path.exists() or path.is_symlink():
        if not force:
            raise _problem(path, "an index (or file) already exists here", f"pass --force to replace it, or {other}")
        if not _is_index(path):  # refuse to overwrite something that is not an index
            raise _problem(path, "exists and is not an er-framework index; not replaced", other)
    probe = parent / f".{path.name}.probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as exc:
        raise _problem(path, f"cannot write in the folder {parent}: {exc.strerror or exc}",
                       f"check the folder's permissions and free space, or {other}") from None
    os.close(fd)
    os.unlink(probe)


def build_index(
    job: Job,
    path: str | Path,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> tuple[Index, dict[str, Any]]:
    """Run ``job`` and persist it as an index at ``path`` (written aside, then renamed)."""
    path = Path(path)
    check_target(path, force=force)  # before the job runs
    engine = Engine(job)
    engine.require_lookup(str(job.config_path), "an index")  # refuse an unindexable job before any work
    t0 = time.perf_counter()
    result = run_local(job, write=False, progress=progress)
    records = result.records  # normalized in place by the run
    n = len(records)
    fields = list(records.fields)
    tmp = path.with_name(f".{path.name}.building-{os.getpid()}")
    for f in _files(tmp):
        f.unlink(missing_ok=True)
    conn = _connect_db(tmp)
    try:
        conn.execute("PRAGMA synchronous=OFF")  # a half-built file is never renamed into place
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN")
        exact = exact_hashes(job, records)
        rep: list[int | None] = [None] * n
        if engine.collapse:
            ep = stages.exact_duplicates(job, records).pairs
            for a, b in zip(ep.left.tolist(), ep.right.tolist()):
                rep[b] = a
        cols = [records.fields[f] for f in fields]
        labels = result.labels.tolist()
        conn.executemany(
            "INSERT INTO records(rid, source, id, fields, cluster, exact, rep) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (i, int(records.source[i]), records.ids[i], json.dumps([c[i] for c in cols], ensure_ascii=False),
                 labels[i], exact[i], rep[i])
                for i in range(n)
            ),
        )
        chunk = max(job.spec.chunk_records, 1)
        key_parts: list[npt.NDArray[np.int64]] = []
        for a in range(0, n, chunk):
            part = records.take(np.arange(a, min(n, a + chunk), dtype=np.int64))
            rows, keys, _ = engine.keys(part)
            key_parts.append(np.stack([keys, rows + a], axis=1))
        if key_parts:
            kr = np.concatenate(key_parts)
            kr = kr[np.lexsort((kr[:, 1], kr[:, 0]))]  # B-tree order: appends only
            conn.executemany("INSERT OR IGNORE INTO buckets(key, rid) VALUES (?, ?)", kr.tolist())
        p = result.pairs
        conn.executemany(
            "INSERT INTO pairs(a, b, score) VALUES (?, ?, ?)",
            zip(p.left.tolist(), p.right.tolist(), (p.score if p.score is not None else np.ones(len(p))).tolist()),
        )
        config_path = job.config_path
        meta = {
            "kind": "er-framework-index",
            "format_version": str(FORMAT_VERSION),
            "er_version": er_version(),
            "config_path": str(Path(config_path).resolve()),
            "base_dir": str(job.base_dir),
            "config_yaml": Path(config_path).read_text(encoding="utf-8"),
            "config_hash": job.config_hash(),
            "components": json.dumps(versions(job)["components"]),
            "sources": json.dumps(records.source_names),
            "fields": json.dumps(fields),
            "next_cluster_id": str(int(result.labels.max()) + 1 if n else 0),
            "next_rid": str(n),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", meta.items())
        summary = {
            "records": n, "pairs": len(p), "clusters": result.report["clusters"]["count"],
            "run_seconds": result.report["seconds_total"],
        }
        conn.execute("INSERT INTO events(at, command, summary) VALUES (?, 'build', ?)", (meta["built_at"], json.dumps(summary)))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        for f in _files(path)[1:]:
            f.unlink(missing_ok=True)
        os.replace(tmp, path)
    except BaseException:
        conn.close()
        for f in _files(tmp):
            f.unlink(missing_ok=True)
        raise
    summary["seconds"] = round(time.perf_counter() - t0, 4)
    return open_index(path), {"run": result.report, **summary}


def records_from_texts(texts: Sequence[str], field: str, ids: Sequence[str] | None = None) -> Records:
    """Query items from plain texts (one field)."""
    ids = list(ids) if ids is not None else [f"q{i}" for i in range(len(texts))]
    return Records.from_columns(ids, {field: list(texts)})


__all__ = ["Index", "Match", "open_index", "build_index", "check_target", "records_from_texts", "FORMAT_VERSION", "InputError"]
