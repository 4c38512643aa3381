"""The persistent index: add/remove equal a rebuild, stable ids, crash safety, readers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from index_docs import doc_texts, docs_job, small_index, write_docs

from er_framework.cli.main import main
from er_framework.config.resolve import parse_job
from er_framework.data import Records
from er_framework.errors import ErError
from er_framework.executors import run_job
from er_framework.index.build import build_index, open_index, records_from_texts
from er_framework.index.sqlite import PAUSE_ENV


def _partition(labels: dict[Any, int]) -> set[frozenset[Any]]:
    groups: dict[int, set[Any]] = {}
    for key, c in labels.items():
        groups.setdefault(c, set()).add(key)
    return {frozenset(g) for g in groups.values()}


def _rebuild(cfg: Path) -> tuple[dict[tuple[str, str], int], dict[tuple[Any, Any], float]]:
    res = run_job(parse_job(cfg), write=False)
    r = res.records
    key = [(r.source_names[s], i) for s, i in zip(r.source.tolist(), r.ids)]
    labels = {key[i]: int(c) for i, c in enumerate(res.labels.tolist())}
    pairs = {}
    for a, b, s in zip(res.pairs.left.tolist(), res.pairs.right.tolist(), res.pairs.score.tolist()):
        x, y = sorted((key[a], key[b]))
        pairs[(x, y)] = s
    return labels, pairs


# ------------------------------------------------------------------ add / remove = rebuild


@pytest.mark.parametrize("cluster", ["connected_components", "louvain", "label_propagation"])
def test_add_in_batches_equals_a_rebuild_and_keeps_untouched_ids(tmp_path: Path, texts: list[str], cluster: str) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts)]
    # new items: near-copies, exact copies of indexed documents and fresh texts
    extra = [(f"n{i}", texts[i * 7] + " and more words here") for i in range(12)]
    extra += [(f"x{i}", texts[i * 11]) for i in range(6)]  # exact copies
    extra += [(f"f{i}", t) for i, t in enumerate(doc_texts(5, 10, seed=99))]
    base = rows[: len(rows) - 40]
    new = rows[len(rows) - 40 :] + extra
    data0 = write_docs(tmp_path / "base.jsonl", base)
    index, _ = build_index(parse_job(docs_job(tmp_path, data0, cluster=cluster)), tmp_path / "i.erx")
    before = index.clusters()
    stats = []
    for part in (new[:20], new[20:21], new[21:]):
        recs = Records.from_columns([i for i, _ in part], {"text": [t for _, t in part]}, "docs")
        stats.append(index.add(recs))
    after = index.clusters()
    full = write_docs(tmp_path / "all.jsonl", base + new)
    labels, pairs = _rebuild(docs_job(tmp_path, full, "all.yaml", cluster=cluster))
    assert _partition(after) == _partition(labels)
    got_pairs = index.pairs()
    assert got_pairs.keys() == pairs.keys()
    assert all(abs(got_pairs[k] - pairs[k]) < 1e-12 for k in pairs)
    # untouched clusters: same id; the ids that changed are reported
    new_keys = {("docs", i) for i, _ in new}
    touched = {after[k] for k in new_keys}
    changed = [k for k, c in before.items() if after[k] != c]
    for k, c in before.items():
        if after[k] not in touched:
            assert after[k] == c
    assert sum(s["ids_changed"] for s in stats) == len(changed)
    assert sum(s["exact_copies"] for s in stats) >= 6
    index.close()


def test_remove_equals_a_rebuild_without_the_records(tmp_path: Path, texts: list[str]) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts)]
    rows += [(f"x{i}", texts[i * 5]) for i in range(8)]  # exact copies collapse onto d{5i}
    data = write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(docs_job(tmp_path, data)), tmp_path / "i.erx")
    # remove representatives of exact groups (their copies get a new representative) and ordinary records
    gone = ["d0", "d5", "d10", "d3", "d17", "d40", "x2"]
    stats = index.remove(gone)
    assert stats["removed"] == len(gone) and stats["copies_relinked"] >= 2
    left = [r for r in rows if r[0] not in set(gone)]
    labels, pairs = _rebuild(docs_job(tmp_path, write_docs(tmp_path / "left.jsonl", left), "left.yaml"))
    assert _partition(index.clusters()) == _partition(labels)
    assert index.pairs().keys() == pairs.keys()
    with pytest.raises(ErError, match="no source 'out' in this index"):  # a source the index lacks: named, not a crash
        index.remove(["d1"], source="out")
    with pytest.raises(ErError, match="not in the index"):
        index.remove(["d0"])
    index.close()


def test_query_equals_the_pairs_of_a_rebuild_with_the_item(tmp_path: Path, texts: list[str]) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts)]
    data = write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(docs_job(tmp_path, data, exact="false")), tmp_path / "i.erx")
    queries = [texts[3] + " tail", texts[20], "unrelated words nobody wrote before", texts[42][: len(texts[42]) // 2]]
    got = index.query(records_from_texts(queries, "text"))
    for qi, q in enumerate(queries):
        full = write_docs(tmp_path / f"q{qi}.jsonl", rows + [("QUERY", q)])
        labels, pairs = _rebuild(docs_job(tmp_path, full, f"q{qi}.yaml", exact="false"))
        expected = {(k[0][1] if k[1] == ("docs", "QUERY") else k[1][1]): s for k, s in pairs.items() if ("docs", "QUERY") in k}
        assert {m.id: m.score for m in got[qi]} == pytest.approx(expected)
        assert [m.score for m in got[qi]] == sorted((m.score for m in got[qi]), reverse=True)
        for m in got[qi]:
            assert m.cluster_id == index.clusters()[("docs", m.id)]
    assert len(got[1]) >= 1 and got[1][0].score == 1.0
    assert got[2] == []
    top = index.query(records_from_texts([texts[20]], "text"), top_k=1)[0]
    assert len(top) == 1 and top[0].rank == 1
    index.close()


# ------------------------------------------------------------------ customer records (link mode)


def test_customer_records_link_index_add_equals_rebuild(tmp_path: Path) -> None:
    from er_framework.synth.customers import generate_customers, write_customers

    data = generate_customers(600, 0.5, seed=4)
    write_customers(data, tmp_path)
    import csv

    b_rows = list(csv.DictReader(open(tmp_path / "b.csv", encoding="utf-8")))
    head = list(b_rows[0])
    keep, later = b_rows[:-60], b_rows[-60:]
    for name, rows in (("b_base.csv", keep), ("b_new.csv", later), ("b_all.csv", b_rows)):
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, head)
            w.writeheader()
            w.writerows(rows)
    fields = "[first_name, last_name, address, city, zip, phone, email, dob]"
    job = textwrap.dedent(f"""
        name: customers-index
        mode: link
        seed: 1
        sources:
          - {{name: a, path: {tmp_path / "a.csv"}, id: id, fields: {fields}}}
          - {{name: b, path: {tmp_path}/BFILE, id: id, fields: {fields}}}
        normalize: {{first_name: [name, nickname], last_name: name, phone: phone, address: address, email: email, dob: date}}
        blockers:
          - {{type: field_hash, fields: [[first_name, last_name], phone, email, [last_name, dob]]}}
        verifier:
          type: field_score
          threshold: 60
          fields:
            - {{field: first_name, scorer: jaro_winkler, weight: 1}}
            - {{field: last_name, scorer: jaro_winkler, weight: 1}}
            - {{field: phone, scorer: digits, weight: 1}}
            - {{field: dob, scorer: exact, weight: 1}}
        cluster: {{type: connected_components}}
    """)
    (tmp_path / "base.yaml").write_text(job.replace("BFILE", "b_base.csv"))
    (tmp_path / "all.yaml").write_text(job.replace("BFILE", "b_all.csv"))
    index, _ = build_index(parse_job(tmp_path / "base.yaml"), tmp_path / "c.erx")
    from er_framework.cli.index import read_items

    stats = index.add(read_items(index, str(tmp_path / "b_new.csv"), "b"), source="b")
    assert stats["added"] == 60 and stats["verified_pairs"] >= 20
    labels, pairs = _rebuild(tmp_path / "all.yaml")
    assert _partition(index.clusters()) == _partition(labels)
    assert index.pairs().keys() == pairs.keys()
    one = later[0]
    res = index.query(Records.from_columns(["q"], {k: [one[k] or None] for k in head if k != "id"}, "b"), source="b")[0]
    assert {m.id for m in res} == {(k[0][1] if k[1] == ("b", one["id"]) else k[1][1]) for k in pairs if ("b", one["id"]) in k}
    assert all(m.source == "a" for m in res)
    with pytest.raises(ErError, match="several sources"):
        index.add(Records.from_columns(["zz"], {"first_name": ["x"]}, "b"))
    index.close()


# ------------------------------------------------------------------ storage: crash safety, readers, errors


def _state(path: Path) -> tuple[int, int, int, str]:
    conn = sqlite3.connect(str(path))
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        counts = tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("records", "buckets", "pairs"))
    finally:
        conn.close()
    return (*counts, ok)


def test_a_killed_add_leaves_the_old_index_then_a_retry_succeeds(tmp_path: Path, texts: list[str]) -> None:
    path, rows = small_index(tmp_path, texts)
    before = _state(path)
    new = write_docs(tmp_path / "new.jsonl", [(f"n{i}", t + " more") for i, t in enumerate(texts[200:260])])
    env = dict(os.environ, **{PAUSE_ENV: "60"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "er_framework", "index", "add", str(path), str(new)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # every row of the batch is written, the transaction is open
    assert "paused before commit" in line, line + proc.stderr.read()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _state(path) == before  # the old index, whole
    with open_index(path) as index:
        assert len(index.clusters()) == 200
        assert index.query(records_from_texts([texts[1]], "text"))[0][0].id == "d1"
    assert main(["index", "add", str(path), str(new)]) == 0
    after = _state(path)
    assert after[0] == 260 and after[3] == "ok"


@pytest.mark.parametrize("readonly", [False, True])
def test_readers_query_while_a_writer_adds(tmp_path: Path, texts: list[str], readonly: bool) -> None:
    path, rows = small_index(tmp_path, texts)
    new = write_docs(tmp_path / "new.jsonl", [(f"n{i}", t + " more") for i, t in enumerate(texts[200:260])])
    env = dict(os.environ, **{PAUSE_ENV: "3"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "er_framework", "index", "add", str(path), str(new)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stderr is not None
    assert "paused before commit" in proc.stderr.readline()
    seen: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            with open_index(path, readonly=readonly) as index:
                while proc.poll() is None:
                    res = index.query(records_from_texts([texts[1]], "text"))[0]
                    assert res and res[0].id == "d1"
                    seen.append(len(index.clusters()))
                seen.append(len(index.clusters()))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert proc.wait() == 0
    assert not errors, errors
    assert seen and set(seen) <= {200, 260} and 200 in seen and seen[-1] == 260  # old state while writing, then new
    assert time.perf_counter() - t0 > 0  # (readers ran while the writer held its transaction open)


def test_cli_round_trip(tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = small_index(tmp_path, texts, 80)
    capsys.readouterr()
    assert main(["query", str(path), "--text", texts[4], "--text", "zzz qqq", "--top-k", "2"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out and out[0]["query"] == "q0" and out[0]["rank"] == 1 and out[0]["score"] == 1.0
    assert all(o["query"] == "q0" for o in out) and len(out) <= 2
    assert main(["query", str(path), "--record", json.dumps({"text": texts[4]})]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["id"] == "d4"
    assert main(["query", str(path), "--record", '{"nope": 1}']) == 2
    assert "unknown field" in capsys.readouterr().err
    new = write_docs(tmp_path / "new.jsonl", [("n1", texts[4] + " plus"), ("n2", "brand new text for the index")])
    assert main(["index", "add", str(path), str(new), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["added"] == 2 and stats["joined_existing"] == 1 and stats["new_clusters"] == 1
    assert main(["index", "remove", str(path), "n2", "d4"]) == 0
    assert "removed 2 records" in capsys.readouterr().out
    assert main(["index", "info", str(path)]) == 0
    info = capsys.readouterr().out
    assert "records          80" in info and "remove" in info and "add" in info


def test_bad_items_are_clear_errors_and_change_nothing(tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = small_index(tmp_path, texts, 60)
    before = _state(path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "n1", "text": "fine"}\n{"id": "n2"}\n{"text": "no id"}\n')
    assert main(["index", "add", str(path), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "line 3" in err
    dup = write_docs(tmp_path / "dup.jsonl", [("n1", "a b c d e f"), ("n1", "g h i j k")])
    assert main(["index", "add", str(path), str(dup)]) == 2
    assert "n1" in capsys.readouterr().err
    assert main(["index", "remove", str(path)]) == 2
    assert "no ids given" in capsys.readouterr().err
    assert main(["query", str(path), "--text", "x", "--record", "{}"]) == 2
    assert "exactly one" in capsys.readouterr().err
    assert _state(path) == before


def test_query_returns_exact_copies_collapsed_in_the_index(tmp_path: Path, texts: list[str]) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts[:100])] + [("copy", "  " + texts[7].upper() + " ")]
    data = write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(docs_job(tmp_path, data)), tmp_path / "i.erx")
    assert index.info()["exact_copies"] == 1
    got = {m.id: m.score for m in index.query(records_from_texts([texts[7]], "text"))[0]}
    assert got["d7"] == 1.0 and got["copy"] == 1.0
    c = index.clusters()
    assert c[("docs", "d7")] == c[("docs", "copy")]
    index.close()


def test_a_readonly_open_never_writes_the_file(tmp_path: Path, texts: list[str]) -> None:
    path, _rows = small_index(tmp_path, texts, 50)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    with open_index(path, readonly=True) as index:
        assert index.query(records_from_texts([texts[1]], "text"))[0][0].id == "d1"
        assert index.info()["records"] == 50 and index.check() == "ok"
        with pytest.raises(ErError, match="opened read-only"):
            index.remove(["d1"])
        with pytest.raises(sqlite3.OperationalError):  # the connection itself refuses to change the file
            index.conn.execute("PRAGMA journal_mode=DELETE").fetchall()
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            index.conn.execute("DELETE FROM records")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def _damage(path: Path, first_page: int, last_page: int) -> None:
    """Overwrite pages ``first_page..last_page`` (1-based, 4 KB) with random bytes."""
    rng = np.random.default_rng(0)
    with open(path, "r+b") as f:
        for page in range(first_page, last_page + 1):
            f.seek((page - 1) * 4096)
            f.write(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())


def test_a_damaged_index_is_named_damaged_by_every_operation(tmp_path: Path, texts: list[str]) -> None:
    path, _rows = small_index(tmp_path, texts, 50)
    with sqlite3.connect(str(path)) as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    _damage(path, 3, 5)  # the records table's root and its (source, id) index
    with open_index(path) as index:
        assert index.check() != "ok"
        for call in (
            lambda: index.info(),
            lambda: index.clusters(),
            lambda: index.query(records_from_texts([texts[1]], "text")),
            lambda: index.add(records_from_texts(["a new text"], "text", ["new"])),
            lambda: index.remove(["d1"]),
        ):
            with pytest.raises(ErError, match="is damaged") as err:
                call()
            assert "er index build" in str(err.value.problems[0].fix)


def test_damage_that_reads_pass_by_is_found_before_a_write(tmp_path: Path, texts: list[str]) -> None:
    """Pages a write would not read are checked (quick_check) before add and remove write into the file."""
    path, _rows = small_index(tmp_path, texts, 50)
    with sqlite3.connect(str(path)) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    _damage(path, pages - 1, pages)
    before = path.read_bytes()
    with open_index(path) as index:
        with pytest.raises(ErError, match="is damaged.*quick_check"):
            index.add(records_from_texts(["a new text"], "text", ["new"]))
        with pytest.raises(ErError, match="is damaged.*quick_check"):
            index.remove(["d1"])
    assert path.read_bytes() == before
