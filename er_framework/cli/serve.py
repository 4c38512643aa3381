"""``er review OUT --serve``: label pairs and split clusters in a browser, served from this machine.

A local HTTP server (the standard library's :class:`~http.server.ThreadingHTTPServer`) bound to 127.0.0.1
only, on a free port (``--port`` to choose one), serves one self-contained page
(:mod:`er_framework.report.label_page`) and a small JSON API. The security model:

* a random token (:func:`secrets.token_urlsafe`) is in the URL printed (and opened in the browser); the page
  is served only with it in the query string, the API only with it in the ``X-ER-Token`` header (compared
  with :func:`hmac.compare_digest`). Anything else is answered 403. A custom header makes a cross-site
  request need a CORS preflight, which the server never grants (it sends no ``Access-Control-*`` header);
* the ``Host`` header must name 127.0.0.1 or localhost (and the server's port): a page of another site whose
  name is made to resolve to 127.0.0.1 (DNS rebinding) is refused;
* pages and reads are GET, changes are POST with a JSON body (``Content-Type: application/json``, at most
  :data:`MAX_BODY` bytes); bad JSON gets 400 with a message, never a traceback;
* answers carry a Content-Security-Policy that runs only the page's own script (a per-answer nonce) and
  loads nothing, ``Referrer-Policy: no-referrer`` (the token never leaves in a Referer) and
  ``Cache-Control: no-store``; the request log never shows the token.

Every label is written at once to the labels file ``er review`` writes (``--labels``), atomically, through the
one writer (:func:`er_framework.io.labels_file.update_labels_file`, with the rules of
:mod:`er_framework.io.label_rows`); undo puts back what the file held. A cluster split saves the pairs across
the two groups as non-matches (0) and those within a group as matches (1).

The pairs to label: a round of active labelling (:func:`er_framework.engine.active.propose`, as ``er review``
proposes them: the model refitted from every label so far); the page's "Next round" proposes the next. The
server is written against :class:`PairRow` (a pair, its score, why it is proposed, its terms when known) and
:class:`RecordValues` (both records' values).
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import secrets
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from er_framework.cli.common import job_of_run, stderr, terminal_text
from er_framework.errors import ErError, InputError, Problem

if TYPE_CHECKING:  # the engine, readers and page are loaded when the server starts, not by er --help
    from er_framework.data import Records
    from er_framework.io.label_rows import PairKey, Previous
    from er_framework.io.labels_file import LabelsFile
    from er_framework.report.review import Values

#: ``er review``'s :func:`~er_framework.cli.review.job_inputs` and :func:`~er_framework.cli.review.merge_labels`,
#: handed over by its dispatch (this module is imported by cli/review.py and does not import it back)
JobInputs = Callable[[Any, Path, "dict[str, Any] | None"], "list[Path]"]
MergeLabels = Callable[..., tuple[int, int]]

__all__ = [
    "CLUSTERS_LISTED",
    "HOSTS",
    "MAX_BODY",
    "MAX_SPLIT",
    "TOKEN_HEADER",
    "ApiError",
    "LabelStore",
    "PairRow",
    "RecordValues",
    "ReviewServer",
    "ReviewSession",
    "cmd_serve",
    "load_session",
    "proposal_rows",
    "round_summary",
    "shown_path",
]

#: the header that carries the token on API requests
TOKEN_HEADER = "X-ER-Token"
#: the host names a request may be addressed to
HOSTS = ("127.0.0.1", "localhost")
#: the largest JSON body accepted (a split of the largest cluster allowed is a few kilobytes)
MAX_BODY = 1 << 20
#: the largest cluster that may be split (its pairs are all written: n (n - 1) / 2 rows)
MAX_SPLIT = 200
#: the clusters listed on the page, largest first
CLUSTERS_LISTED = 500


class ApiError(Exception):
    """An answer other than 200: its HTTP status and a message for the page."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class PairRow:
    """A pair to label: both records, the score, where it is (``side``: above / below the threshold), why it is
    proposed (``reason``, ``detail``), the verifier's terms of its score when known (they draw the waterfall)
    and its row of the labels file (``row``, without ``match``)."""

    left_source: str
    left_id: str
    right_source: str
    right_id: str
    score: float | None
    side: str
    terms: dict[str, Any] | None = None
    reason: str = ""
    detail: str = ""
    row: dict[str, str] | None = None

    @property
    def key(self) -> PairKey:
        return (self.left_source, self.left_id, self.right_source, self.right_id)

    def label_row(self, match: str) -> dict[str, str]:
        """The pair as a row of the labels file, its ``match`` given."""
        base = dict(zip(("left_source", "left_id", "right_source", "right_id"), self.key)) | {
            "score": "" if self.score is None else f"{self.score:.6f}",
            "side": self.side,
        }
        return base | dict(self.row or {}) | {"match": match}

    def entry(self) -> dict[str, Any]:
        """The pair as a review entry of report.json (what the report's pair card draws)."""
        return {
            "left": {"source": self.left_source, "id": self.left_id},
            "right": {"source": self.right_source, "id": self.right_id},
            "score": self.score,
            "terms": self.terms,
            "weight": (self.terms or {}).get("match_weight"),  # the card is titled by it, as in report.html
        }

    def listed(self, match: str) -> dict[str, Any]:
        """The pair as the page lists it."""
        return {
            "left": [self.left_source, self.left_id],
            "right": [self.right_source, self.right_id],
            "score": self.score,
            "side": self.side,
            "reason": self.reason,
            "detail": self.detail,
            "match": match,
        }


@dataclass(frozen=True)
class Round:
    """A round of pairs to label: the pairs (already in the labels file, their ``match`` empty), the records
    their values come from, and what the round was (printed and shown)."""

    pairs: list[PairRow]
    records: RecordValues
    summary: str


#: proposes the next round and writes its pairs into the labels file
Proposer = Callable[[], Round]


class RecordValues:
    """The records' values by ``(source, id)``, from the records of the run's sources as read now."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self.fields = list(records.fields)

    def values(self, keys: set[tuple[str, str]]) -> Values:
        """The values (as text; None = missing) of each of ``keys`` found among the records."""
        from er_framework.engine import stages

        out: Values = {}
        for key, row in stages.record_rows(self.records, keys).items():
            out[key] = {f: (None if col[row] is None else str(col[row])) for f, col in self.records.fields.items()}
        return out


def match_word(value: str) -> str:
    """A labels file's ``match`` as "1", "0" or "" (empty, or a word training does not read)."""
    from er_framework.engine.stages.training import MATCH_WORDS, NON_MATCH_WORDS

    word = value.strip().lower()
    return "1" if word in MATCH_WORDS else "0" if word in NON_MATCH_WORDS else ""


class LabelStore:
    """The labels file: each change written at once (one writer, atomically); the changes of this session
    kept so that undo can put back what the file held."""

    def __init__(self, path: Path, inputs: Sequence[Path] = ()) -> None:
        self.path = path
        self.shown = shown_path(path)
        self.inputs = list(inputs)
        self.lock = threading.Lock()
        self.history: list[tuple[str, list[Previous], dict[str, Any]]] = []

    def _read(self, path: Path) -> LabelsFile:
        from er_framework.io.labels_file import read_labels_file

        return read_labels_file(path, fix="give another labels file: er review OUT --serve --labels FILE", allow_empty=True)

    def matches(self) -> dict[PairKey, str]:
        """Each pair of the file (both orientations) -> its ``match`` ("1", "0" or "")."""
        from er_framework.io.label_rows import pair_key

        if not self.path.is_file():
            return {}
        out: dict[PairKey, str] = {}
        for row in self._read(self.path).records():
            key, m = pair_key(row), match_word(row.get("match", ""))
            out[key] = out[(key[2], key[3], key[0], key[1])] = m or out.get(key, "")
        return out

    def change(self, rows: Sequence[dict[str, str]], what: str, where: dict[str, Any]) -> None:
        """Write ``rows`` (their ``match`` set) into the file; ``what`` says what was done, ``where`` where
        the page shows it (for undo)."""
        from er_framework.io.label_rows import set_label_rows
        from er_framework.io.labels_file import update_labels_file

        with self.lock:
            before: list[Previous] = []

            def update(labels: LabelsFile) -> LabelsFile:
                before.extend(set_label_rows(labels, rows))
                return labels

            update_labels_file(self.path, update, inputs=self.inputs, read=self._read)
            self.history.append((what, before, where))

    def undo(self) -> tuple[str, dict[str, Any]] | None:
        """Put back what the last change of this session replaced; None when there is nothing to undo."""
        from er_framework.io.label_rows import restore_label_rows
        from er_framework.io.labels_file import update_labels_file

        with self.lock:
            if not self.history:
                return None
            what, before, where = self.history[-1]

            def update(labels: LabelsFile) -> LabelsFile:
                restore_label_rows(labels, before)
                return labels

            update_labels_file(self.path, update, inputs=self.inputs, read=self._read)
            self.history.pop()
            return what, where


def shown_path(path: Path) -> str:
    """``path`` as printed and shown: relative to the current folder when it lies below it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _pair_text(key: PairKey) -> str:
    return f"{key[0]} {key[1]} ~ {key[2]} {key[3]}"


class ReviewSession:
    """What the page shows and changes: the pairs to label, the clusters, the records' values and the
    labels file. Each method answers one API request with a JSON-ready dict (or raises :class:`ApiError`)."""

    def __init__(
        self,
        report: dict[str, Any],
        pairs: Sequence[PairRow],
        records: RecordValues,
        clusters: dict[str, list[tuple[str, str]]],
        store: LabelStore,
        title: str = "",
        proposer: Proposer | None = None,
    ) -> None:
        self.report = report
        self.pairs = list(pairs)
        self.records = records
        self.clusters = clusters
        self.store = store
        self.title = title
        self.proposer = proposer
        self.rounds = threading.Lock()
        self.summary = ""

    # -- the pairs ---------------------------------------------------------

    def progress(self) -> dict[str, Any]:
        """How many of the pairs are labelled, and each pair's label."""
        matches = self.store.matches()
        labels = [matches.get(p.key, "") for p in self.pairs]
        return {"labelled": sum(1 for m in labels if m), "total": len(self.pairs), "pairs": labels}

    def pair_list(self) -> dict[str, Any]:
        info = self.progress()
        info["pairs"] = [p.listed(m) for p, m in zip(self.pairs, info["pairs"])]
        info["rounds"] = self.proposer is not None
        info["summary"] = self.summary
        return info

    def _pair(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(self.pairs):
            raise ApiError(400, f"pair must be a number from 0 to {len(self.pairs) - 1}, not {value!r}")
        return value

    def pair(self, i: Any) -> dict[str, Any]:
        from er_framework.report.label_page import pair_view

        p = self.pairs[self._pair(i)]
        values = self.records.values({p.key[:2], p.key[2:]})
        html = pair_view(self.report, p.entry(), i + 1, values, self.records.fields)
        return {"html": html, "match": self.store.matches().get(p.key, "")}

    def label(self, body: dict[str, Any]) -> dict[str, Any]:
        i = self._pair(body.get("pair"))
        match = body.get("match")
        if match not in (0, 1) or isinstance(match, bool):
            raise ApiError(400, f"match must be 1 (a match) or 0 (not a match), not {match!r}")
        p = self.pairs[i]
        word = "a match" if match == 1 else "not a match"
        self.store.change([p.label_row(str(match))], f"{_pair_text(p.key)} labelled {word}", {"key": p.key})
        return self.progress() | {"message": f"saved: pair {i + 1} is {word} ({self.store.shown})", "pair": i}

    def undo(self) -> dict[str, Any]:
        done = self.store.undo()
        if done is None:
            return self.progress() | {"message": "nothing to undo"}
        what, where = done
        out = self.progress() | {"message": f"undone: {what} ({self.store.shown})"}
        if "cluster" in where:
            out["cluster"] = where["cluster"]
        at = [i for i, p in enumerate(self.pairs) if where.get("key") in (p.key, (p.key[2], p.key[3], p.key[0], p.key[1]))]
        if at:
            out["pair"] = at[0]  # the pair is in this round: the page shows it again
        return out

    def next_round(self) -> dict[str, Any]:
        """The next round of active labelling: the model refitted from every label so far, new pairs proposed
        (and written into the labels file); the page lists them."""
        if self.proposer is None:
            raise ApiError(409, "this session has no rounds: its pairs are fixed")
        if not self.rounds.acquire(blocking=False):
            raise ApiError(409, "a round is being proposed already")
        try:
            found = self.proposer()
        finally:
            self.rounds.release()
        self.pairs, self.records, self.summary = list(found.pairs), found.records, found.summary
        return self.pair_list() | {"message": found.summary}

    # -- the clusters ------------------------------------------------------

    def cluster_list(self) -> dict[str, Any]:
        multi = sorted(((cid, len(m)) for cid, m in self.clusters.items() if len(m) > 1), key=_cluster_order)
        shown = multi[:CLUSTERS_LISTED]
        note = f"{len(multi):,} clusters of two records or more, largest first"
        if len(multi) > len(shown):
            note += f" (the {len(shown):,} largest listed)"
        note += ". Pick one to see its records and split it."
        return {"clusters": [{"id": cid, "size": n} for cid, n in shown], "total": len(multi), "note": note}

    def _members(self, cid: Any) -> list[tuple[str, str]]:
        if not isinstance(cid, str) or cid not in self.clusters:
            raise ApiError(404, f"no cluster {cid!r} in clusters.csv")
        return self.clusters[cid]

    def cluster(self, cid: Any) -> dict[str, Any]:
        from er_framework.report.label_page import cluster_view

        members = self._members(cid)
        values = self.records.values(set(members))
        return {"html": cluster_view(cid, members, values, self.records.fields), "size": len(members)}

    def _groups(self, members: list[tuple[str, str]], groups: Any) -> list[list[tuple[str, str]]]:
        ok = isinstance(groups, list) and len(groups) == 2 and all(isinstance(g, list) for g in groups)
        if not ok:
            raise ApiError(400, "groups must be two lists of record positions in the cluster: [[0, 1], [2]]")
        flat = [i for g in groups for i in g]
        if any(isinstance(i, bool) or not isinstance(i, int) for i in flat) or sorted(flat) != list(range(len(members))):
            raise ApiError(400, f"groups must hold each record position 0 to {len(members) - 1} once")
        if not groups[0] or not groups[1]:
            raise ApiError(400, "put at least one record in each group (B: the records that are not the others' entity)")
        return [[members[i] for i in g] for g in groups]

    def split(self, body: dict[str, Any]) -> dict[str, Any]:
        cid = body.get("cluster")
        members = self._members(cid)
        if len(members) > MAX_SPLIT:
            raise ApiError(400, f"cluster {cid} has {len(members):,} records; a split in the page is for clusters of at most {MAX_SPLIT}")
        a, b = self._groups(members, body.get("groups"))
        reason = f"split of cluster {cid}"

        def row(x: tuple[str, str], y: tuple[str, str], match: str) -> dict[str, str]:
            pair = {"left_source": x[0], "left_id": x[1], "right_source": y[0], "right_id": y[1]}
            return pair | {"score": "", "side": "", "reason": reason, "match": match}

        within = [row(x, y, "1") for g in (a, b) for x, y in combinations(g, 2)]
        across = [row(x, y, "0") for x in a for y in b]
        what = f"the split of cluster {cid} ({len(a)} + {len(b)} records)"
        self.store.change(within + across, what, {"cluster": cid})
        message = (
            f"saved the split of cluster {cid} into {len(a)} and {len(b)} records: {_count(len(across), 'pair')} across the "
            f"groups labelled not a match (0), {_count(len(within), 'pair')} within a group a match (1), in {self.store.shown}"
        )
        return self.progress() | {"message": message, "across": len(across), "within": len(within)}


def _cluster_order(item: tuple[str, int]) -> tuple[int, int, int, str]:
    """Largest first; ids that are numbers in their order (2 before 10), the others after them by text."""
    cid, size = item
    number = cid.isascii() and cid.isdigit()
    return (-size, 0 if number else 1, int(cid) if number else 0, cid)


class ReviewServer(ThreadingHTTPServer):
    """The server of one session, on 127.0.0.1 only (``port`` 0: a free port), with a random token."""

    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, session: ReviewSession, port: int = 0, token: str | None = None) -> None:
        self.session = session
        self.token = token or secrets.token_urlsafe(24)
        super().__init__(("127.0.0.1", port), ReviewHandler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The page's address, token included."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def host_ok(self, host: str | None) -> bool:
        if not host:
            return False
        name, colon, port = host.rpartition(":")
        if not colon:
            name, port = host, ""
        return name.lower() in HOSTS and port in ("", str(self.port))


#: the GET routes of the API -> the session's answer (``q``: the query's first values)
GET_ROUTES: dict[str, Callable[[ReviewSession, dict[str, str]], dict[str, Any]]] = {
    "/api/pairs": lambda s, q: s.pair_list(),
    "/api/pair": lambda s, q: s.pair(_int(q.get("i"))),
    "/api/clusters": lambda s, q: s.cluster_list(),
    "/api/cluster": lambda s, q: s.cluster(q.get("id")),
}
#: the POST routes -> the session's answer (``b``: the JSON object sent)
POST_ROUTES: dict[str, Callable[[ReviewSession, dict[str, Any]], dict[str, Any]]] = {
    "/api/label": lambda s, b: s.label(b),
    "/api/undo": lambda s, b: s.undo(),
    "/api/split": lambda s, b: s.split(b),
    "/api/round": lambda s, b: s.next_round(),
}


def _int(text: str | None) -> int:
    try:
        return int(text or "")
    except ValueError:
        raise ApiError(400, f"i must be a pair's number, not {text!r}") from None


class ReviewHandler(BaseHTTPRequestHandler):
    """One request: the host and token checked first, then the route."""

    server: ReviewServer
    server_version = "er-review"
    sys_version = ""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Refused and failed requests are logged (method, path and status), never the query string (it holds
        the token); the others are not."""
        if str(code).startswith(("4", "5")):
            path = urlsplit(getattr(self, "path", "")).path
            stderr(terminal_text(f"er review --serve: {getattr(self, 'command', None) or '?'} {path}: {code}"))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        """Silent: the base class's messages quote the request line, token included."""

    def _send(self, status: int, body: bytes, ctype: str, nonce: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        script = f"'nonce-{nonce}'" if nonce else "'none'"
        self.send_header(
            "Content-Security-Policy",
            f"default-src 'none'; script-src {script}; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        )
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: dict[str, Any]) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _refuse(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _allowed(self, api: bool, query: dict[str, str]) -> bool:
        if not self.server.host_ok(self.headers.get("Host")):
            self._refuse(403, "this server answers only requests addressed to 127.0.0.1 or localhost")
            return False
        given = self.headers.get(TOKEN_HEADER) if api else query.get("token")
        if not self.server.token_ok(given):
            where = f"the {TOKEN_HEADER} header" if api else "the address (?token=...)"
            self._refuse(403, f"no valid token in {where}: open the address er review --serve printed")
            return False
        return True

    def _route(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        api = parts.path.startswith("/api/")
        if not self._allowed(api, query):
            return
        try:
            if not api:
                self._page(method, parts.path)
            elif method == "GET" and parts.path in GET_ROUTES:
                self._json(200, GET_ROUTES[parts.path](self.server.session, query))
            elif method == "POST" and parts.path in POST_ROUTES:
                self._json(200, POST_ROUTES[parts.path](self.server.session, self._body()))
            elif parts.path in GET_ROUTES or parts.path in POST_ROUTES:
                raise ApiError(405, f"{parts.path} takes {'GET' if parts.path in GET_ROUTES else 'POST'}, not {method}")
            else:
                raise ApiError(404, f"no such address: {parts.path}")
        except ApiError as exc:
            self._refuse(exc.status, exc.message)
        except ErError as exc:
            self._refuse(400, exc.render())
        except OSError as exc:  # the labels file cannot be written (a full disk, a folder gone)
            self._refuse(500, f"cannot save: {exc.strerror or exc}")

    def _page(self, method: str, path: str) -> None:
        if path != "/":
            raise ApiError(404, f"no such page: {path}")
        if method != "GET":
            raise ApiError(405, f"the page takes GET, not {method}")
        from er_framework.report.label_page import label_page

        nonce = secrets.token_urlsafe(16)
        store = self.server.session.store
        page = label_page(self.server.token, nonce, self.server.session.title, store.shown)
        self._send(200, page.encode("utf-8"), "text/html; charset=utf-8", nonce)

    def _body(self) -> dict[str, Any]:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise ApiError(415, f"send JSON (Content-Type: application/json), not {ctype or 'no content type'}")
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            raise ApiError(411, "a POST needs a Content-Length") from None
        if not 0 <= length <= MAX_BODY:
            raise ApiError(413, f"the body holds {length:,} bytes, more than the {MAX_BODY:,} accepted")
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ApiError(400, f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ApiError(400, f"the body must be a JSON object, not {type(body).__name__}")
        return body

    def do_GET(self) -> None:  # noqa: N802 (the base class's name)
        self._route("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._route("POST")

    def _not_allowed(self) -> None:
        self._refuse(405, f"{self.command} is not answered: pages and reads are GET, labels POST")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _not_allowed


# --------------------------------------------------------------------------
# er review OUT --serve
# --------------------------------------------------------------------------


def read_clusters(out: Path) -> dict[str, list[tuple[str, str]]]:
    """The run's clusters (clusters.csv, .parquet or the dataset clusters/): cluster id -> its records in file
    order (none: {})."""
    from er_framework.io.output_read import find_table, read_clusters_csv

    path = find_table(out, "clusters")
    clusters: dict[str, list[tuple[str, str]]] = {}
    if path is not None:
        for source, rid, cid in read_clusters_csv(path):
            clusters.setdefault(cid, []).append((source, rid))
    return clusters


def round_summary(found: Any) -> str:
    """One line on a round of :func:`er_framework.engine.active.propose`: its pairs, what the model was refitted
    from and how the expected F1 moved."""
    kinds = ", ".join(f"{sum(p.reason == k for p in found.rows)} {k}" for k in ("uncertain", "disagreement", "near-miss"))
    text = f"round {found.round}: {_count(len(found.rows), 'new pair')} ({kinds})"
    after, before = found.after, found.before
    if after.matches + after.non_matches:
        text += f"; the model refitted from {_count(after.matches + after.non_matches, 'labelled pair')}"
        text += f" ({after.matches} matches, {after.non_matches} non-matches)"
    if after.expected is not None and before.expected is not None:
        text += f"; expected F1 {before.expected.f1:.3f} -> {after.expected.f1:.3f}"
    return text


def proposal_rows(found: Any) -> list[PairRow]:
    """The pairs of a round of :func:`er_framework.engine.active.propose`, with their labels file rows."""
    rows = found.label_rows()
    return [
        PairRow(
            p.left_source,
            p.left_id,
            p.right_source,
            p.right_id,
            p.score,
            row["side"],
            p.terms or None,
            p.reason,
            p.detail,
            {k: str(v) for k, v in row.items() if k != "match"},
        )
        for p, row in zip(found.rows, rows)
    ]


def load_session(args: argparse.Namespace, job_inputs: JobInputs, merge_labels: MergeLabels) -> ReviewSession:
    """The session of ``er review OUT --serve``: the run's report, job, clusters and labels file (placed as
    ``er review`` places it), and the first round of pairs (:func:`er_framework.engine.active.propose`, as
    ``er review`` proposes them), written into the labels file with an empty ``match`` before the server starts
    (``job_inputs`` and ``merge_labels``: er review's)."""
    from er_framework.config.resolve import job_labels_path
    from er_framework.engine.active import propose
    from er_framework.io.labels_file import LABELS_KIND
    from er_framework.io.safe_write import check_target

    report, job = job_of_run(args.out_dir, args.config)
    labels = job_labels_path(job, args.labels).path
    inputs = job_inputs(job, labels, report)
    check_target(labels, what="labels file", inputs=inputs, kind=LABELS_KIND)  # refused before anything is read
    store = LabelStore(labels, inputs)
    store.matches()  # a labels file that cannot be read is an error now, not at the first key press

    def proposer() -> Round:
        found = propose(job, args.out_dir, labels, args.count, report=report, allow_changed=args.allow_changed)
        for note in found.notes:
            stderr(f"note: {note}")
        merge_labels(labels, found.label_rows(), inputs=inputs)
        return Round(proposal_rows(found), RecordValues(found.records), round_summary(found))

    first = proposer()
    title = f"{report.get('job') or Path(args.out_dir).name} ({args.out_dir})"
    session = ReviewSession(report, first.pairs, first.records, read_clusters(Path(args.out_dir)), store, title, proposer)
    session.summary = first.summary
    return session


def _can_open_browser() -> bool:
    if sys.platform.startswith(("linux", "freebsd", "openbsd")):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def _check_port(port: int | None) -> int:
    if port is None:
        return 0
    if not 0 <= port <= 65535:
        raise InputError(
            Problem(where="--port", message=f"{port} is not a port", fix="give a port from 1024 to 65535, or 0 for a free one")
        )
    return port


def start_server(session: ReviewSession, port: int | None) -> ReviewServer:
    """The server on 127.0.0.1 (``port``; None or 0: a free one); an error naming --port when it is taken."""
    try:
        return ReviewServer(session, _check_port(port))
    except OSError as exc:
        raise InputError(
            Problem(where="--port", message=f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", fix="give another --port, or none")
        ) from None


def cmd_serve(args: argparse.Namespace, job_inputs: JobInputs, merge_labels: MergeLabels) -> int:
    """Start the server, print (and open) the page's address, serve until interrupted."""
    import webbrowser

    session = load_session(args, job_inputs, merge_labels)
    server = start_server(session, args.port)
    clusters = sum(1 for m in session.clusters.values() if len(m) > 1)
    print(terminal_text(session.summary), flush=True)
    print(f"er review: {len(session.pairs)} pairs to label, {clusters:,} clusters to inspect", flush=True)
    print(terminal_text(f"labels saved to {session.store.shown}"), flush=True)
    print(f"open {server.url}", flush=True)
    if not args.no_open and _can_open_browser():
        webbrowser.open(server.url)
    print("press Ctrl+C to stop", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.server_close()
    return 0
