"""``er review OUT --serve`` over HTTP: the token, the host, the methods, labels, undo and cluster splits.

The server runs in a thread on a free port of 127.0.0.1, on a finished run of configs/febrl4.yaml; requests go
through http.client (which lets a test send any Host header).
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from er_framework.cli.main import main
from er_framework.cli.review import job_inputs, merge_labels
from er_framework.cli.serve import (
    MAX_BODY,
    TOKEN_HEADER,
    LabelStore,
    ReviewServer,
    ReviewSession,
    load_session,
    read_clusters,
    start_server,
)
from er_framework.config import parse_job
from er_framework.engine.stages.training import read_labels
from er_framework.errors import InputError
from er_framework.io.labels_file import read_labels_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("febrl4") / "out"
    assert main(["run", str(ROOT / "configs" / "febrl4.yaml"), "--out", str(out), "--quiet"]) == 0
    return out


def namespace(out: Path, labels: Path) -> argparse.Namespace:
    return argparse.Namespace(out_dir=str(out), config=None, allow_changed=False, labels=str(labels), count=20, port=None, no_open=True)


@pytest.fixture(scope="module")
def loaded(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> ReviewSession:
    """One session (its records read once); each test gets a copy with a labels file of its own."""
    return load_session(namespace(run_dir, tmp_path_factory.mktemp("labels") / "first.csv"), job_inputs, merge_labels)


@dataclass
class Live:
    server: ReviewServer
    session: ReviewSession
    labels: Path

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        token: str | None = "",
        host: str | None = None,
        ctype: str = "application/json",
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        headers = {"Host": host or f"127.0.0.1:{self.server.port}"}
        if token is not None:
            headers[TOKEN_HEADER] = token or self.server.token
        if body is not None:
            headers["Content-Type"] = ctype
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data

    def api(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        raw = None if body is None else json.dumps(body).encode()
        status, _, data = self.request("GET" if body is None else "POST", path, raw)
        assert status == 200, data
        return json.loads(data)

    def rows(self) -> list[dict[str, str]]:
        return read_labels_file(self.labels, fix="-", allow_empty=True).records()


@pytest.fixture
def live(loaded: ReviewSession, tmp_path: Path) -> Iterator[Live]:
    labels = tmp_path / "labels.csv"
    session = ReviewSession(loaded.report, loaded.pairs, loaded.records, dict(loaded.clusters), LabelStore(labels), "febrl4")
    server = start_server(session, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Live(server, session, labels)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_server_binds_loopback_only(live: Live) -> None:
    assert live.server.server_address[0] == "127.0.0.1"
    assert live.server.url == f"http://127.0.0.1:{live.server.port}/?token={live.server.token}"
    assert len(live.server.token) >= 32
    # not reachable on another address of this machine
    others = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)} - {"127.0.0.1"}
    others = {a for a in others if not a.startswith("127.")}
    for addr in others:
        with pytest.raises(OSError), socket.create_connection((addr, live.server.port), timeout=2):
            pass


def test_the_page_needs_the_token_in_its_address(live: Live) -> None:
    status, headers, body = live.request("GET", f"/?token={live.server.token}", token=None)
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert live.server.token.encode() in body
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'nonce-" in csp and "connect-src 'self'" in csp
    assert headers["referrer-policy"] == "no-referrer" and headers["cache-control"] == "no-store"
    assert not any(k.startswith("access-control-") for k in headers)
    for path in ("/", "/?token=", f"/?token={live.server.token[:-1]}", f"/?token={live.server.token}x"):
        status, _, body = live.request("GET", path, token=None)
        assert status == 403 and b"token" in body and live.server.token.encode() not in body
    # the header is for the API, not the page
    assert live.request("GET", "/", token="")[0] == 403


def test_the_api_needs_the_token_in_its_header(live: Live) -> None:
    assert live.request("GET", "/api/pairs")[0] == 200
    for token in (None, "wrong", live.server.token + "x", live.server.token.upper()):
        status, headers, body = live.request("GET", "/api/pairs", token=token)
        assert status == 403 and json.loads(body)["error"].startswith("no valid token")
        assert not any(k.startswith("access-control-") for k in headers)
    # a token in the query string does not open the API
    assert live.request("GET", f"/api/pairs?token={live.server.token}", token=None)[0] == 403
    status, _, _ = live.request("POST", "/api/label", json.dumps({"pair": 0, "match": 1}).encode(), token=None)
    assert status == 403 and not live.labels.exists()


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1", "localhost.evil.example:{port}", "[::1]:{port}"])
def test_a_request_to_another_host_is_refused(live: Live, host: str) -> None:
    host = host.format(port=live.server.port)
    status, _, body = live.request("GET", f"/?token={live.server.token}", token=None, host=host)
    assert status == 403 and b"127.0.0.1 or localhost" in body
    assert live.request("GET", "/api/pairs", host=host)[0] == 403
    assert live.request("GET", "/api/pairs", host=f"localhost:{live.server.port}")[0] == 200


def test_label_then_undo(live: Live) -> None:
    first = live.api("/api/pairs")
    assert first["total"] == 20 and first["labelled"] == 0
    got = live.api("/api/label", {"pair": 2, "match": 1})
    assert got["labelled"] == 1 and got["pairs"][2] == "1" and "saved" in got["message"]
    got = live.api("/api/label", {"pair": 12, "match": 0})
    assert got["labelled"] == 2
    pairs = live.session.pairs
    assert live.rows() == [pairs[2].label_row("1"), pairs[12].label_row("0")]  # the columns of er review's rows
    assert {"reason", "round", "score", "side"} <= set(live.rows()[0])
    # relabel: one row, the new label
    live.api("/api/label", {"pair": 2, "match": 0})
    assert [r["match"] for r in live.rows()] == ["0", "0"]
    undone = live.api("/api/undo", {})
    assert undone["pair"] == 2 and undone["message"].startswith("undone:")
    assert [r["match"] for r in live.rows()] == ["1", "0"]
    live.api("/api/undo", {})
    assert [r["match"] for r in live.rows()] == ["1"]
    assert live.api("/api/undo", {})["labelled"] == 0
    assert live.rows() == []  # the rows this session added are gone again
    assert live.api("/api/undo", {})["message"] == "nothing to undo"


def test_a_written_labels_file_is_what_training_reads(live: Live) -> None:
    for i, m in ((0, 1), (1, 1), (15, 0)):
        live.api("/api/label", {"pair": i, "match": m})
    text = (ROOT / "configs" / "febrl4.yaml").read_text(encoding="utf-8")
    text = text.replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/") + f"\ntraining: {{labels: {live.labels}}}\n"
    (live.labels.parent / "job.yaml").write_text(text, encoding="utf-8")  # a job that trains from the file
    labels = read_labels(parse_job(live.labels.parent / "job.yaml"), live.session.records.records)
    assert sorted(labels.match.tolist()) == [False, True, True]


def test_labels_are_written_atomically(live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader never sees a half-written file, and a change that fails leaves the file as it was."""
    live.api("/api/label", {"pair": 0, "match": 1})
    seen: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.append(len(read_labels_file(live.labels, fix="-").rows))  # a torn file fails to parse or loses rows

    t = threading.Thread(target=reader)
    t.start()
    try:
        for k in range(40):
            live.api("/api/label", {"pair": k % 20, "match": k % 2})
    finally:
        stop.set()
        t.join()
    assert seen and min(seen) >= 1
    before = live.labels.read_bytes()

    def fails(labels: Any, rows: Any) -> Any:
        labels.rows.append(["A", "x", "B", "y", "", "", "1"])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("er_framework.io.label_rows.set_label_rows", fails)
    status, _, body = live.request("POST", "/api/label", json.dumps({"pair": 1, "match": 1}).encode())
    assert status in (400, 500) and "No space left on device" in json.loads(body)["error"], body
    assert live.labels.read_bytes() == before
    assert sorted(p.name for p in live.labels.parent.iterdir()) == ["job.yaml", live.labels.name] or [
        p.name for p in live.labels.parent.iterdir()
    ] == [live.labels.name]  # no temporary file left


def test_pair_and_cluster_views(live: Live) -> None:
    got = live.api("/api/pair?i=0")
    assert "<svg" in got["html"] and "waterfall" in got["html"] and got["match"] == ""
    clusters = live.api("/api/clusters")
    assert clusters["total"] == sum(1 for m in live.session.clusters.values() if len(m) > 1) > 0
    sizes = [c["size"] for c in clusters["clusters"]]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) <= 500
    one = clusters["clusters"][0]
    got = live.api(f"/api/cluster?id={one['id']}")
    assert got["size"] == one["size"] and got["html"].count('type="radio"') == 2 * one["size"]


def test_a_split_is_saved_as_labels(live: Live) -> None:
    members = [("A", "a1"), ("B", "b1"), ("A", "a2"), ("B", "b2"), ("B", "b3")]
    live.session.clusters["big"] = members
    got = live.api("/api/split", {"cluster": "big", "groups": [[0, 1, 4], [2, 3]]})
    assert got["across"] == 6 and got["within"] == 4
    assert "6 pairs across the groups labelled not a match (0), 4 pairs within a group a match (1)" in got["message"], got
    got_labels = {frozenset((r["left_id"], r["right_id"])): r["match"] for r in live.rows()}
    group = {0: "a", 1: "a", 4: "a", 2: "b", 3: "b"}
    want = {frozenset((members[i][1], members[j][1])): "1" if group[i] == group[j] else "0" for i in range(5) for j in range(i + 1, 5)}
    assert got_labels == want and len(live.rows()) == 10
    assert {r["reason"] for r in live.rows()} == {"split of cluster big"} and {r["side"] for r in live.rows()} == {""}
    undone = live.api("/api/undo", {})
    assert undone["cluster"] == "big" and live.rows() == []


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"cluster": "nope", "groups": [[0], [1]]}, 404, "no cluster"),
        ({"cluster": "big", "groups": [[0, 1, 2]]}, 400, "two lists"),
        ({"cluster": "big", "groups": [[0, 1, 2], []]}, 400, "at least one record in each group"),
        ({"cluster": "big", "groups": [[0, 1], [1, 2]]}, 400, "each record position 0 to 2 once"),
        ({"cluster": "big", "groups": [[0, 1], ["2"]]}, 400, "each record position"),
    ],
)
def test_a_bad_split_is_refused(live: Live, body: dict[str, Any], status: int, words: str) -> None:
    live.session.clusters["big"] = [("A", "1"), ("B", "2"), ("B", "3")]
    got, _, data = live.request("POST", "/api/split", json.dumps(body).encode())
    assert got == status and words in json.loads(data)["error"]
    assert not live.labels.exists()


def test_a_cluster_too_large_to_split(live: Live) -> None:
    live.session.clusters["huge"] = [("A", str(i)) for i in range(201)]
    status, _, data = live.request("POST", "/api/split", json.dumps({"cluster": "huge", "groups": [[0], list(range(1, 201))]}).encode())
    assert status == 400 and "at most 200" in json.loads(data)["error"]


@pytest.mark.parametrize(
    ("body", "ctype", "status", "words"),
    [
        (b'{"pair": 0,', "application/json", 400, "the body is not JSON"),
        (b"\xff\xfe", "application/json", 400, "the body is not JSON"),
        (b"[1, 2]", "application/json", 400, "must be a JSON object"),
        (b'{"pair": 0, "match": 1}', "text/plain", 415, "send JSON"),
        (b'{"pair": 0, "match": 1}', "application/x-www-form-urlencoded", 415, "send JSON"),
        (b'{"pair": 99, "match": 1}', "application/json", 400, "pair must be a number from 0 to 19"),
        (b'{"pair": true, "match": 1}', "application/json", 400, "pair must be a number"),
        (b'{"pair": 0, "match": "yes"}', "application/json", 400, "match must be 1"),
        (b'{"pair": 0, "match": true}', "application/json", 400, "match must be 1"),
        (b'{"pair": 0}', "application/json", 400, "match must be 1"),
    ],
)
def test_bad_requests_get_a_message(live: Live, body: bytes, ctype: str, status: int, words: str) -> None:
    got, headers, data = live.request("POST", "/api/label", body, ctype=ctype)
    assert got == status and headers["content-type"].startswith("application/json")
    message = json.loads(data)["error"]
    assert words in message and "Traceback" not in message
    assert not live.labels.exists()


def test_methods_paths_and_sizes(live: Live) -> None:
    assert live.request("GET", "/api/label")[0] == 405
    assert live.request("POST", "/api/pairs", b"{}")[0] == 405
    assert live.request("POST", f"/?token={live.server.token}", b"{}", token=None)[0] == 405
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS"):
        assert live.request(method, "/api/label")[0] == 405
    assert live.request("GET", "/api/nothing")[0] == 404
    assert live.request("GET", f"/other?token={live.server.token}", token=None)[0] == 404
    assert live.request("GET", "/api/pair?i=x")[0] == 400
    assert live.request("GET", "/api/cluster?id=nope")[0] == 404
    # a body larger than allowed is refused from its Content-Length, before it is read
    conn = http.client.HTTPConnection("127.0.0.1", live.server.port, timeout=30)
    conn.putrequest("POST", "/api/label", skip_host=True)
    for k, v in (("Host", f"127.0.0.1:{live.server.port}"), (TOKEN_HEADER, live.server.token), ("Content-Type", "application/json")):
        conn.putheader(k, v)
    conn.putheader("Content-Length", str(MAX_BODY + 1))
    conn.endheaders()
    resp = conn.getresponse()
    assert resp.status == 413
    conn.close()


def test_load_session_writes_the_pairs_into_the_labels_file(run_dir: Path, loaded: ReviewSession) -> None:
    rows = read_labels_file(loaded.store.path, fix="-").records()
    assert len(rows) == 20 and {r["match"] for r in rows} == {""} and {r["round"] for r in rows} == {"1"}
    assert {r["reason"] for r in rows} <= {"uncertain", "disagreement", "near-miss"}
    assert [(r["left_id"], r["right_id"]) for r in rows] == [(p.left_id, p.right_id) for p in loaded.pairs]
    assert loaded.summary.startswith("round 1: 20 new pairs") and loaded.clusters == read_clusters(run_dir)


def truth(p: Any) -> int:
    """Febrl4's truth: rec-N-org and rec-N-dup-0 are one person."""
    return int(p.left_id.split("-")[1] == p.right_id.split("-")[1])


def test_the_next_round_refits_and_proposes_new_pairs(run_dir: Path, tmp_path: Path) -> None:
    session = load_session(namespace(run_dir, tmp_path / "rounds.csv"), job_inputs, merge_labels)
    server = start_server(session, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        live = Live(server, session, tmp_path / "rounds.csv")
        first = [tuple(p["left"] + p["right"]) for p in live.api("/api/pairs")["pairs"]]
        for i, p in enumerate(session.pairs):
            live.api("/api/label", {"pair": i, "match": truth(p)})
        got = live.api("/api/round", {})
        assert got["message"].startswith("round 2: 20 new pairs") and "refitted from 20 labelled pairs" in got["message"]
        second = [tuple(p["left"] + p["right"]) for p in got["pairs"]]
        assert len(second) == 20 and not set(first) & set(second) and got["labelled"] == 0
        rows = live.rows()
        assert len(rows) == 40 and [r["round"] for r in rows] == ["1"] * 20 + ["2"] * 20
        assert all(r["match"] for r in rows[:20]) and not any(r["match"] for r in rows[20:])
        # the new pairs are labelled as the first ones were; an undo of a label of round 1 still works
        live.api("/api/label", {"pair": 0, "match": 1})
        live.api("/api/undo", {})
        undone = live.api("/api/undo", {})
        assert "pair" not in undone and undone["message"].startswith("undone:")  # a pair of round 1: not listed now
        assert sum(1 for r in live.rows() if r["match"]) == 19
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_session_without_rounds(live: Live) -> None:
    status, _, body = live.request("POST", "/api/round", b"{}")
    assert status == 409 and "no rounds" in json.loads(body)["error"]


def test_a_labels_file_that_is_an_input_of_the_job_is_refused(run_dir: Path) -> None:
    source = ROOT / "configs" / "data" / "febrl" / "febrl4_a.csv"
    if not source.is_file():
        pytest.skip("the febrl4 data file is elsewhere")
    before = source.read_bytes()
    with pytest.raises(InputError):
        load_session(namespace(run_dir, source), job_inputs, merge_labels)
    assert source.read_bytes() == before


def test_a_taken_port_is_an_error_naming_the_option(live: Live) -> None:
    with pytest.raises(InputError, match="--port"):
        start_server(live.session, live.server.port)
    with pytest.raises(InputError, match="not a port"):
        start_server(live.session, 70000)


def test_read_clusters_reads_a_clusters_dataset_folder(tmp_path: Path) -> None:
    from tests.io.test_part_tables import as_datasets, documents_run

    out = documents_run(tmp_path)
    before = read_clusters(out)
    as_datasets(out)
    assert (out / "clusters").is_dir() and read_clusters(out) == before and len(before) > 10
