"""Hostile input to the persistent index and to a Dask address (issue 18, cases 8, 9, 15, 16, 17, 22): whole ``er`` processes.

Every case: the expected exit code, no traceback, a message saying what is
wrong and how to fix it, and no file changed that er did not create.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from er_framework.index.sqlite import PAUSE_ENV

Er = Callable[..., Any]

JOB = """\
name: docs
mode: dedup
seed: 1
threshold: 0.6
sources:
  - {{name: docs, path: {data}, id: id, fields: [text]}}
shingler: {{type: char, k: 4}}
signature: {{type: minhash, num_perm: 64}}
blockers: [{{type: lsh_bands}}]
verifier: {{type: jaccard}}
cluster: {{type: connected_components}}
"""

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
]


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * (i % 5 + 1)) % len(WORDS)] + str((i + j) % 13) for j in range(25))


def _docs(path: Path, ids: range, prefix: str = "d") -> Path:
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "text": _text(i)}) + "\n" for i in ids), encoding="utf-8")
    return path


def _job(folder: Path, data: str = "docs.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "job.yaml"
    cfg.write_text(JOB.format(data=data), encoding="utf-8")
    return cfg


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of 300 documents, built once by ``er index build`` (tests copy it)."""
    folder = tmp_path_factory.mktemp("built")
    _docs(folder / "docs.jsonl", range(300))
    done = subprocess.run(
        [sys.executable, "-m", "er_framework.cli.main", "index", "build", str(_job(folder)), "--index", str(folder / "docs.erx"), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return folder / "docs.erx"


@pytest.fixture
def index(built: Path, tmp_path: Path) -> Path:
    """A fresh copy of the built index (no -wal/-shm beside it)."""
    path = tmp_path / "docs.erx"
    shutil.copyfile(built, path)
    return path


def _state(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def _commands(path: Path, items: Path) -> list[list[Any]]:
    return [
        ["index", "info", path],
        ["query", path, "--text", _text(1)],
        ["index", "add", path, items],
        ["index", "remove", path, "d1"],
    ]


# ------------------------------------------------------------------ case 8: a file that is not an index


def _sqlite_of_another_app(path: Path) -> None:
    conn = sqlite3.connect(str(path))  # rollback-journal mode (SQLite's default)
    conn.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes(body) VALUES ('keep me')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["empty", "text", "sqlite-rollback", "sqlite-wal-checkpointed"])
def test_a_file_that_is_not_an_index_is_refused_and_left_as_it_was(er: Er, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "other.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("id,name\n1,Ann\n", encoding="utf-8")
    else:
        _sqlite_of_another_app(path)
        if kind == "sqlite-wal-checkpointed":
            conn = sqlite3.connect(str(path))
            conn.execute("PRAGMA journal_mode=WAL")
            conn.close()
    items = _docs(tmp_path / "items.jsonl", range(2), "n")
    before = _state(path)
    listing = sorted(p.name for p in tmp_path.iterdir())
    for args in _commands(path, items):
        ran = er(args, timeout=120)
        ran.assert_clean_error(2, "not an er-framework index", "the file was not changed", "er index build")
        assert _state(path) == before, args  # bytes and mtime
    if kind != "sqlite-wal-checkpointed":  # (SQLite's reader of a WAL file maps PATH-shm, as for any WAL reader)
        assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no -journal, -wal or -shm either
    if kind.startswith("sqlite"):
        mode = sqlite3.connect(str(path)).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == ("delete" if kind == "sqlite-rollback" else "wal")


def test_read_only_commands_leave_an_index_unchanged(er: Er, index: Path) -> None:
    before = _state(index)
    ran = er(["query", index, "--text", _text(1), "--top-k", "1"], timeout=120)
    assert ran.code == 0, ran.err
    assert json.loads(ran.out)["id"] == "d1"
    ran = er(["index", "info", index, "--json"], timeout=120)
    assert ran.code == 0, ran.err
    assert json.loads(ran.out)["records"] == 300 and json.loads(ran.out)["integrity"] == "ok"
    assert _state(index) == before


def test_er_query_answers_while_another_process_writes(er: Er, index: Path, tmp_path: Path) -> None:
    """A read-only ``er query`` sees the last committed index while ``er index add`` holds its write transaction."""
    items = _docs(tmp_path / "items.jsonl", range(1000, 1040), "n")
    writer = subprocess.Popen(
        [sys.executable, "-m", "er_framework.cli.main", "index", "add", str(index), str(items)],
        env={**os.environ, PAUSE_ENV: "20"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stderr is not None
        assert "paused before commit" in writer.stderr.readline()
        for args in (["query", index, "--text", _text(1), "--top-k", "1"], ["index", "info", index, "--json"]):
            ran = er(args, timeout=120)
            assert ran.code == 0, ran.err
        assert json.loads(ran.out)["records"] == 300  # the state before the add
        assert writer.poll() is None  # (the writer was still inside its transaction)
    finally:
        writer.kill()
        writer.wait()
    ran = er(["index", "info", index, "--json"], timeout=120)  # the killed add left the old index
    assert ran.code == 0, ran.err
    assert json.loads(ran.out)["records"] == 300


# ------------------------------------------------------------------ case 15: damaged pages


def _damage(path: Path, pages: range, page_size: int = 4096) -> None:
    garbage = hashlib.sha256(b"garbage").digest() * (page_size // 32)
    with open(path, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * page_size)
            f.write(garbage)


def test_a_damaged_index_is_named_damaged_by_every_command(er: Er, index: Path, tmp_path: Path) -> None:
    assert sqlite3.connect(str(index)).execute("PRAGMA page_size").fetchone()[0] == 4096
    _damage(index, range(3, 6))  # pages 3..5: the records table's root and its id index
    before = _state(index)
    items = _docs(tmp_path / "items.jsonl", range(1000, 1002), "n")
    for args in _commands(index, items):
        ran = er(args, timeout=120)
        ran.assert_clean_error(2, f"the index file {index} is damaged (sqlite: ", "rebuild it with: er index build", "job.yaml")
        assert "not in the index" not in ran.err
    assert _state(index)[0] == before[0]  # nothing written into it


def test_damage_no_read_passes_by_is_found_by_info_and_before_a_write(er: Er, index: Path, tmp_path: Path) -> None:
    pages = sqlite3.connect(str(index)).execute("PRAGMA page_count").fetchone()[0]
    _damage(index, range(pages - 1, pages + 1))  # the last pages: no query reads them
    before = _state(index)
    items = _docs(tmp_path / "items.jsonl", range(1000, 1002), "n")
    for args in (["index", "info", index], ["index", "add", index, items], ["index", "remove", index, "d1"]):
        ran = er(args, timeout=120)
        ran.assert_clean_error(2, "is damaged (sqlite: quick_check: ")
    assert _state(index)[0] == before[0]


# ------------------------------------------------------------------ case 16: an --index path that cannot be written


def test_build_checks_the_index_path_before_the_job_runs(er: Er, tmp_path: Path) -> None:
    # the job's data has a broken line: had the job run first, that would be the error
    data = _docs(tmp_path / "docs.jsonl", range(20))
    with open(data, "a", encoding="utf-8") as f:
        f.write('{"id": "broken", "text": \n')
    cfg = _job(tmp_path)
    (tmp_path / "a-folder.erx").mkdir()
    (tmp_path / "mine.db").write_text("my own file", encoding="utf-8")
    cases = [
        (tmp_path / "missing" / "dir" / "x.erx", [], ["the folder", "does not exist", "mkdir -p"]),
        (data / "x.erx", [], ["is a file, not a folder"]),
        (tmp_path / "a-folder.erx", [], ["is a folder", "--index"]),
        (tmp_path / "mine.db", [], ["already exists", "--force"]),
        (tmp_path / "mine.db", ["--force"], ["not an er-framework index; not replaced"]),
    ]
    listing = sorted(p.name for p in tmp_path.iterdir())
    for target, extra, needles in cases:
        ran = er(["index", "build", cfg, "--index", target, *extra], timeout=120)
        ran.assert_clean_error(2, *needles)
        assert "docs.jsonl:" not in ran.err, ran.err  # the job did not run
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no temporary or probe file left
    assert (tmp_path / "mine.db").read_text(encoding="utf-8") == "my own file"


# ------------------------------------------------------------------ case 9: an alias bomb stored in an index


def _bomb(levels: int = 9, width: int = 9) -> str:
    out = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    out += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(out) + "\n"


def test_an_alias_bomb_in_the_stored_job_is_refused_in_bounded_memory(er: Er, index: Path, built: Path) -> None:
    stored = (built.parent / "job.yaml").read_text(encoding="utf-8")
    with sqlite3.connect(str(index)) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'config_yaml'", (_bomb() + stored,))
    conn.close()
    for args in (["index", "info", index], ["query", index, "--text", _text(1)]):
        ran = er(args, limit_mb=1500, timeout=120)
        ran.assert_clean_error(2, "the index's stored job", "cannot be read", "expands to more than", "rebuild it")
        assert ran.peak_mb < 500, (args, ran.peak_mb)


# ------------------------------------------------------------------ case 22: er query --file is relative to the working directory


def test_query_file_is_relative_to_the_working_directory(er: Er, index: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _docs(work / "items.jsonl", range(1, 3), "d")  # copies of d1, d2
    ran = er(["query", index, "--file", "items.jsonl", "--top-k", "1"], cwd=work, timeout=120)
    assert ran.code == 0, ran.err
    assert [json.loads(line)["id"] for line in ran.out.splitlines()] == ["d1", "d2"]
    ran = er(["query", index, "--file", "missing.jsonl"], cwd=work, timeout=120)
    ran.assert_clean_error(2, "--file", "no such file: missing.jsonl", f"relative to the current directory ({work})")
    assert "job file" not in ran.err
    help_text = er(["query", "--help"], timeout=60).out
    assert "relative to the current directory" in " ".join(help_text.split())


# ------------------------------------------------------------------ case 17: a Dask address that is not a Dask scheduler


@pytest.fixture
def fake_server() -> Iterator[Callable[[bytes | None], str]]:
    """Start TCP servers in threads: each accepted connection gets ``reply`` (``None``: silence) and stays open."""
    servers: list[socket.socket] = []
    conns: list[socket.socket] = []
    stop = threading.Event()

    def start(reply: bytes | None) -> str:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        srv.settimeout(0.2)
        servers.append(srv)

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, _ = srv.accept()
                except (TimeoutError, OSError):
                    continue
                conns.append(conn)
                if reply is not None:
                    with contextlib.suppress(OSError):
                        conn.sendall(reply)

        threading.Thread(target=serve, daemon=True).start()
        return f"tcp://127.0.0.1:{srv.getsockname()[1]}"

    yield start
    stop.set()
    for s in servers + conns:
        s.close()


def _dask_job(folder: Path, address: str) -> Path:
    _docs(folder / "docs.jsonl", range(20))
    cfg = _job(folder)
    cfg.write_text(cfg.read_text(encoding="utf-8") + f"executor: {{type: dask, address: {json.dumps(address)}}}\n", encoding="utf-8")
    return cfg


@pytest.mark.parametrize(
    "address, needles",
    [
        ("not a url", ["not an address of the form [tcp://]HOST:PORT"]),
        ("tcp://127.0.0.1:99999", ["the port 99999 is not a port number"]),
    ],
)
def test_a_malformed_dask_address_is_named(er: Er, tmp_path: Path, address: str, needles: list[str]) -> None:
    job = _dask_job(tmp_path, address)
    for verb in (["validate", job], ["run", job, "--out", tmp_path / "out"]):  # refused when the job is read
        ran = er(verb, timeout=120)
        ran.assert_clean_error(2, "invalid config", *needles, "executor.address", "tcp://10.0.0.5:8786")
    assert not (tmp_path / "out").exists() and not ran.left_behind
    # and at connect time, for an address that did not come through a job file
    from er_framework.config.executor_params import address_problem

    assert address_problem(address) is not None


def test_a_dask_address_of_a_service_that_is_not_dask(er: Er, tmp_path: Path, fake_server: Callable[[bytes | None], str]) -> None:
    address = fake_server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nBad Request" * 4)
    ran = er(["run", _dask_job(tmp_path, address), "--out", tmp_path / "out"], timeout=120, limit_mb=3000)
    ran.assert_clean_error(
        2, f"could not connect to the Dask scheduler at {address}", "does not speak the Dask protocol", "check executor.address"
    )
    assert "EiB" not in ran.err and not ran.left_behind


def test_a_silent_dask_address_fails_within_the_connect_timeout(er: Er, tmp_path: Path, fake_server: Callable[[bytes | None], str]) -> None:
    address = fake_server(None)  # accepts, never answers: distributed alone would wait for its handshake forever
    ran = er(["run", _dask_job(tmp_path, address), "--out", tmp_path / "out"], timeout=120, env={"ER_DASK_CONNECT_TIMEOUT": "2"})
    ran.assert_clean_error(2, f"could not connect to the Dask scheduler at {address}", "no Dask handshake came within 2 s")
    assert not ran.left_behind


def test_a_refused_dask_address_says_so_at_once(er: Er, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ran = er(
        ["run", _dask_job(tmp_path, f"tcp://127.0.0.1:{port}"), "--out", tmp_path / "out"],
        timeout=120,
        env={"ER_DASK_CONNECT_TIMEOUT": "60"},
    )
    ran.assert_clean_error(2, "could not connect to the Dask scheduler", "connection refused")
