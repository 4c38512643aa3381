"""The persistent index: lookups equal blocking, add/remove equal a rebuild, stable ids, crash safety, readers."""

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

from er_framework.cli.main import main
from er_framework.config.resolve import parse_job
from er_framework.data import Batch, Records
from er_framework.errors import ErError
from er_framework.index.store import PAUSE_ENV, build_index, open_index, records_from_texts
from er_framework.executors import run_job
from er_framework.synth.documents import planted_documents

DOCS_JOB = """
name: idx
seed: 7
threshold: {threshold}
sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
exact_duplicates: {exact}
shingler: {{type: char, k: 4}}
signature: {{type: {signature}, num_perm: 64}}
blockers: [{{type: lsh_bands, max_bucket_size: null}}]
verifier: {{type: jaccard}}
cluster: {{type: {cluster}}}
"""


def _texts(n_families: int, singletons: int, seed: int) -> list[str]:
    d = planted_documents(n_families, copies_per_family=(1, 3), words=(30, 80), edit_rates=(0.0, 0.15),
                          n_singletons=singletons, seed=seed)
    return list(d.texts)


def _write_docs(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), encoding="utf-8")
    return path


def _job(tmp: Path, data: Path, name: str = "job.yaml", *, threshold: float = 0.6, exact: str = "true",
         signature: str = "minhash", cluster: str = "connected_components") -> Path:
    cfg = tmp / name
    cfg.write_text(DOCS_JOB.format(data=data, threshold=threshold, exact=exact, signature=signature, cluster=cluster))
    return cfg


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


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return _texts(60, 150, seed=11)


# ------------------------------------------------------------------ lookups = blocking


@pytest.mark.parametrize("signature", ["minhash", "fss"])
def test_lsh_lookup_keys_give_the_blockers_candidates(tmp_path: Path, texts: list[str], signature: str) -> None:
    data = _write_docs(tmp_path / "d.jsonl", [(f"d{i}", t) for i, t in enumerate(texts)])
    job = parse_job(_job(tmp_path, data, exact="false", signature=signature))
    from er_framework.engine import Engine

    engine = Engine(job)
    recs = run_job(job, write=False).records
    batch = engine.batch(recs, tokens=False, signatures=True)
    blocker = engine.blockers[0]
    expected = set(zip(*(x.tolist() for x in (lambda p: (p.left, p.right))(blocker.candidates(batch)))))
    rows, keys = blocker.lookup_keys(batch)
    buckets: dict[int, list[int]] = {}
    for r, k in zip(rows.tolist(), keys.tolist()):
        buckets.setdefault(k, []).append(r)
    got = {(a, b) for m in buckets.values() for a in m for b in m if a < b}
    assert len(expected) > 50
    assert got == expected


def test_field_hash_lookup_keys_give_the_blockers_candidates() -> None:
    from er_plugins.records_blocking import FieldHash, FieldHashParams

    rng = np.random.default_rng(3)
    n = 400
    names = ["ann", "bob", "cy", "", None]
    recs = Records(
        ids=[str(i) for i in range(n)],
        source=rng.integers(0, 2, n).astype(np.int32),
        source_names=["a", "b"],
        fields={
            "last": [names[i] for i in rng.integers(0, 5, n)],
            "zip": [str(z) if z < 8 else None for z in rng.integers(0, 9, n)],
        },
    )
    for link in (False, True):
        b = FieldHash(FieldHashParams(fields=["last", ["last", "zip"], "zip"], max_block_size=None))
        batch = Batch(records=recs, cross_source_only=link)
        cand = b.candidates(batch)
        expected = set(zip(cand.left.tolist(), cand.right.tolist()))
        rows, keys = b.lookup_keys(batch)
        buckets: dict[int, list[int]] = {}
        for r, k in zip(rows.tolist(), keys.tolist()):
            buckets.setdefault(k, []).append(r)
        got = {(min(x, y), max(x, y)) for m in buckets.values() for x in m for y in m
               if x != y and (not link or recs.source[x] != recs.source[y])}
        assert got == expected and len(got) > 1000


# ------------------------------------------------------------------ add / remove = rebuild


@pytest.mark.parametrize("cluster", ["connected_components", "louvain", "label_propagation"])
def test_add_in_batches_equals_a_rebuild_and_keeps_untouched_ids(tmp_path: Path, texts: list[str], cluster: str) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts)]
    # new items: near-copies, exact copies of indexed documents and fresh texts
    extra = [(f"n{i}", texts[i * 7] + " and more words here") for i in range(12)]
    extra += [(f"x{i}", texts[i * 11]) for i in range(6)]  # exact copies
    extra += [(f"f{i}", t) for i, t in enumerate(_texts(5, 10, seed=99))]
    base = rows[: len(rows) - 40]
    new = rows[len(rows) - 40 :] + extra
    data0 = _write_docs(tmp_path / "base.jsonl", base)
    index, _ = build_index(parse_job(_job(tmp_path, data0, cluster=cluster)), tmp_path / "i.erx")
    before = index.clusters()
    stats = []
    for part in (new[:20], new[20:21], new[21:]):
        recs = Records.from_columns([i for i, _ in part], {"text": [t for _, t in part]}, "docs")
        stats.append(index.add(recs))
    after = index.clusters()
    full = _write_docs(tmp_path / "all.jsonl", base + new)
    labels, pairs = _rebuild(_job(tmp_path, full, "all.yaml", cluster=cluster))
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


def test_merge_keeps_the_larger_clusters_id_and_records_it(tmp_path: Path) -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
    a = " ".join(words)
    b = " ".join(words[9:] + ["tau", "upsilon", "phi", "chi", "psi", "omega"] * 3)
    rows = [("a1", a), ("a2", a + " x"), ("a3", a + " y"), ("b1", b), ("b2", b + " z"), ("lone", "nothing alike at all, really nothing")]
    data = _write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(_job(tmp_path, data, threshold=0.5, exact="false")), tmp_path / "i.erx")
    before = index.clusters()
    assert before[("docs", "a1")] == before[("docs", "a3")] != before[("docs", "b1")]
    bridge = " ".join(words[5:] + ["tau", "upsilon", "phi", "chi", "psi", "omega"])
    stats = index.add(Records.from_columns(["bridge"], {"text": [bridge]}, "docs"))
    after = index.clusters()
    if after[("docs", "a1")] == after[("docs", "b1")]:  # the bridge linked both clusters
        assert after[("docs", "a1")] == before[("docs", "a1")]  # the larger cluster (3 records) keeps its id
        assert stats["merged"] == 1 and stats["ids_changed"] == 2
        kinds = index.conn.execute("SELECT kind, cluster, survivor, records FROM cluster_changes WHERE kind='merged'").fetchall()
        assert kinds == [("merged", before[("docs", "b1")], before[("docs", "a1")], 2)]
    else:
        pytest.fail(f"the bridge document did not merge the clusters: {stats}")
    assert after[("docs", "lone")] == before[("docs", "lone")]


def test_remove_equals_a_rebuild_without_the_records(tmp_path: Path, texts: list[str]) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts)]
    rows += [(f"x{i}", texts[i * 5]) for i in range(8)]  # exact copies collapse onto d{5i}
    data = _write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(_job(tmp_path, data)), tmp_path / "i.erx")
    # remove representatives of exact groups (their copies get a new representative) and ordinary records
    gone = ["d0", "d5", "d10", "d3", "d17", "d40", "x2"]
    stats = index.remove(gone)
    assert stats["removed"] == len(gone) and stats["copies_relinked"] >= 2
    left = [r for r in rows if r[0] not in set(gone)]
    labels, pairs = _rebuild(_job(tmp_path, _write_docs(tmp_path / "left.jsonl", left), "left.yaml"))
    assert _partition(index.clusters()) == _partition(labels)
    assert index.pairs().keys() == pairs.keys()
    with pytest.raises(ErError, match="not in the index"):
        index.remove(["d0"])
    index.close()


def test_query_equals_the_pairs_of_a_rebuild_with_the_item(tmp_path: Path, texts: list[str]) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts)]
    data = _write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(_job(tmp_path, data, exact="false")), tmp_path / "i.erx")
    queries = [texts[3] + " tail", texts[20], "unrelated words nobody wrote before", texts[42][: len(texts[42]) // 2]]
    got = index.query(records_from_texts(queries, "text"))
    for qi, q in enumerate(queries):
        full = _write_docs(tmp_path / f"q{qi}.jsonl", rows + [("QUERY", q)])
        labels, pairs = _rebuild(_job(tmp_path, full, f"q{qi}.yaml", exact="false"))
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
          - {{name: a, path: {tmp_path / 'a.csv'}, id: id, fields: {fields}}}
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


def _small_index(tmp: Path, texts: list[str], n: int = 200) -> tuple[Path, list[tuple[str, str]]]:
    rows = [(f"d{i}", t) for i, t in enumerate(texts[:n])]
    data = _write_docs(tmp / "d.jsonl", rows)
    path = tmp / "i.erx"
    build_index(parse_job(_job(tmp, data)), path)[0].close()
    return path, rows


def _state(path: Path) -> tuple[int, int, int, str]:
    conn = sqlite3.connect(str(path))
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        counts = tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("records", "buckets", "pairs"))
    finally:
        conn.close()
    return (*counts, ok)


def test_a_killed_add_leaves_the_old_index_then_a_retry_succeeds(tmp_path: Path, texts: list[str]) -> None:
    path, rows = _small_index(tmp_path, texts)
    before = _state(path)
    new = _write_docs(tmp_path / "new.jsonl", [(f"n{i}", t + " more") for i, t in enumerate(texts[200:260])])
    env = dict(os.environ, **{PAUSE_ENV: "60"})
    proc = subprocess.Popen([sys.executable, "-m", "er_framework", "index", "add", str(path), str(new)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
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
    path, rows = _small_index(tmp_path, texts)
    new = _write_docs(tmp_path / "new.jsonl", [(f"n{i}", t + " more") for i, t in enumerate(texts[200:260])])
    env = dict(os.environ, **{PAUSE_ENV: "3"})
    proc = subprocess.Popen([sys.executable, "-m", "er_framework", "index", "add", str(path), str(new)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
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


def test_build_refuses_to_overwrite_and_errors_are_clear(tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = _small_index(tmp_path, texts, 50)
    cfg = tmp_path / "job.yaml"
    assert main(["index", "build", str(cfg), "--index", str(path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["index", "build", str(cfg), "--index", str(path), "--force", "-q"]) == 0
    # not an index
    junk = tmp_path / "junk.erx"
    junk.write_text("hello")
    assert main(["index", "info", str(junk)]) == 2
    assert "not an er-framework index" in capsys.readouterr().err
    assert main(["query", str(tmp_path / "missing.erx"), "--text", "x"]) == 2
    assert "no such index" in capsys.readouterr().err
    # another format version
    conn = sqlite3.connect(str(path))
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'format_version'")
    conn.commit()
    conn.close()
    assert main(["index", "info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "format version 99" in err and "rebuild" in err
    # stored parameters that no longer resolve to the same job
    main(["index", "build", str(cfg), "--index", str(path), "--force", "-q"])
    conn = sqlite3.connect(str(path))
    conn.execute("UPDATE meta SET value = 'abc' WHERE key = 'config_hash'")
    conn.commit()
    conn.close()
    assert main(["index", "info", str(path)]) == 2
    assert "other component parameters" in capsys.readouterr().err


def test_an_index_of_format_1_is_refused_with_how_to_rebuild(tmp_path: Path, texts: list[str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Format 1 stored exact-text hashes of code points; format 2 stores BLAKE2b-64 of the UTF-8 bytes
    (kernels.digests): an old index's hashes would never match a new record's, so it is refused."""
    from er_framework.index.store import FORMAT_VERSION
    from er_framework.kernels import normalize_text, text_digest_reference

    path, rows = _small_index(tmp_path, texts, 30)
    assert FORMAT_VERSION == 2
    conn = sqlite3.connect(str(path))
    stored = dict(conn.execute("SELECT id, exact FROM records").fetchall())
    # the stored hash is the digest of the normalized text, as a signed 64-bit integer (SQLite's INTEGER)
    want = {i: text_digest_reference(normalize_text(t)) for i, t in rows}
    assert stored == {i: (h - 2**64 if h >= 2**63 else h) for i, h in want.items()}
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
    conn.commit()
    conn.close()
    for argv in (["index", "info", str(path)], ["query", str(path), "--text", "x"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "format version 1" in err and "reads version 2" in err and "rebuild it with: er index build" in err


def test_jobs_that_cannot_be_indexed_say_why(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text("id,name,zip\n1,ann,1\n2,bob,2\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(textwrap.dedent(f"""
        sources: [{{name: c, path: {tmp_path / 'c.csv'}, id: id, fields: [name, zip]}}]
        blockers: [{{type: sorted_neighbourhood, key: [name], window: 3}}]
        verifier: {{type: fellegi_sunter, threshold: 0.9, fields: [{{field: name, levels: [100, 80]}}]}}
    """))
    with pytest.raises(ErError) as exc:
        build_index(parse_job(cfg), tmp_path / "c.erx")
    text = exc.value.render()
    assert "sorted_neighbourhood" in text and "cannot look up a single item" in text
    assert "fellegi_sunter" in text and "pairwise" in text
    assert not (tmp_path / "c.erx").exists()


def test_cli_round_trip(tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = _small_index(tmp_path, texts, 80)
    capsys.readouterr()
    assert main(["query", str(path), "--text", texts[4], "--text", "zzz qqq", "--top-k", "2"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out and out[0]["query"] == "q0" and out[0]["rank"] == 1 and out[0]["score"] == 1.0
    assert all(o["query"] == "q0" for o in out) and len(out) <= 2
    assert main(["query", str(path), "--record", json.dumps({"text": texts[4]})]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["id"] == "d4"
    assert main(["query", str(path), "--record", '{"nope": 1}']) == 2
    assert "unknown field" in capsys.readouterr().err
    new = _write_docs(tmp_path / "new.jsonl", [("n1", texts[4] + " plus"), ("n2", "brand new text for the index")])
    assert main(["index", "add", str(path), str(new), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["added"] == 2 and stats["joined_existing"] == 1 and stats["new_clusters"] == 1
    assert main(["index", "remove", str(path), "n2", "d4"]) == 0
    assert "removed 2 records" in capsys.readouterr().out
    assert main(["index", "info", str(path)]) == 0
    info = capsys.readouterr().out
    assert "records          80" in info and "remove" in info and "add" in info


def test_bad_items_are_clear_errors_and_change_nothing(tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = _small_index(tmp_path, texts, 60)
    before = _state(path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "n1", "text": "fine"}\n{"id": "n2"}\n{"text": "no id"}\n')
    assert main(["index", "add", str(path), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "line 3" in err
    dup = _write_docs(tmp_path / "dup.jsonl", [("n1", "a b c d e f"), ("n1", "g h i j k")])
    assert main(["index", "add", str(path), str(dup)]) == 2
    assert "n1" in capsys.readouterr().err
    assert main(["index", "remove", str(path)]) == 2
    assert "no ids given" in capsys.readouterr().err
    assert main(["query", str(path), "--text", "x", "--record", "{}"]) == 2
    assert "exactly one" in capsys.readouterr().err
    assert _state(path) == before


def test_query_returns_exact_copies_collapsed_in_the_index(tmp_path: Path, texts: list[str]) -> None:
    rows = [(f"d{i}", t) for i, t in enumerate(texts[:100])] + [("copy", "  " + texts[7].upper() + " ")]
    data = _write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(_job(tmp_path, data)), tmp_path / "i.erx")
    assert index.info()["exact_copies"] == 1
    got = {m.id: m.score for m in index.query(records_from_texts([texts[7]], "text"))[0]}
    assert got["d7"] == 1.0 and got["copy"] == 1.0
    c = index.clusters()
    assert c[("docs", "d7")] == c[("docs", "copy")]
    index.close()


def test_a_readonly_open_never_writes_the_file(tmp_path: Path, texts: list[str]) -> None:
    path, _rows = _small_index(tmp_path, texts, 50)
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


@pytest.mark.parametrize("content", [b"", b"hello, not a database\n", None])
def test_not_an_index_is_refused_before_any_write(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "x.erx"
    if content is None:  # another application's SQLite database, rollback-journal mode
        conn = sqlite3.connect(str(path))
        conn.execute("CREATE TABLE t(x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        conn.close()
    else:
        path.write_bytes(content)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    for readonly in (True, False):
        with pytest.raises(ErError, match="not an er-framework index"):
            open_index(path, readonly=readonly)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.erx"]  # no -wal, -shm or journal either


def _damage(path: Path, first_page: int, last_page: int) -> None:
    """Overwrite pages ``first_page..last_page`` (1-based, 4 KB) with random bytes."""
    rng = np.random.default_rng(0)
    with open(path, "r+b") as f:
        for page in range(first_page, last_page + 1):
            f.seek((page - 1) * 4096)
            f.write(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())


def test_a_damaged_index_is_named_damaged_by_every_operation(tmp_path: Path, texts: list[str]) -> None:
    path, _rows = _small_index(tmp_path, texts, 50)
    with sqlite3.connect(str(path)) as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    _damage(path, 3, 5)  # the records table's root and its (source, id) index
    with open_index(path) as index:
        assert index.check() != "ok"
        for call in (lambda: index.info(), lambda: index.clusters(),
                     lambda: index.query(records_from_texts([texts[1]], "text")),
                     lambda: index.add(records_from_texts(["a new text"], "text", ["new"])),
                     lambda: index.remove(["d1"])):
            with pytest.raises(ErError, match="is damaged") as err:
                call()
            assert "er index build" in str(err.value.problems[0].fix)


def test_damage_that_reads_pass_by_is_found_before_a_write(tmp_path: Path, texts: list[str]) -> None:
    """Pages a write would not read are checked (quick_check) before add and remove write into the file."""
    path, _rows = _small_index(tmp_path, texts, 50)
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


def test_build_checks_the_target_before_the_job_runs(tmp_path: Path, texts: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    data = _write_docs(tmp_path / "docs.jsonl", [(f"d{i}", t) for i, t in enumerate(texts[:20])])
    job = parse_job(_job(tmp_path, data))
    import er_framework.index.store as store

    def no_run(*a: Any, **k: Any) -> Any:
        raise AssertionError("the job ran")

    monkeypatch.setattr(store, "run_local", no_run)
    (tmp_path / "folder.erx").mkdir()
    (tmp_path / "foreign.erx").write_text("mine")
    cases = {
        tmp_path / "missing" / "x.erx": "the folder .* does not exist",
        data / "x.erx": "is a file, not a folder",
        tmp_path / "folder.erx": "is a folder",
        tmp_path / "foreign.erx": "already exists",
    }
    for target, message in cases.items():
        with pytest.raises(ErError, match=message):
            build_index(job, target)
    with pytest.raises(ErError, match="not an er-framework index; not replaced"):
        build_index(job, tmp_path / "foreign.erx", force=True)
    assert (tmp_path / "foreign.erx").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl", "folder.erx", "foreign.erx", "job.yaml"]
