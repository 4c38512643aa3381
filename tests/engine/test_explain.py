"""er_framework/engine/explain.py: whether the blockers of a job pair two records (blocking_of_pair),
checked against the candidates a run really made, and the printed explanation of a pair no blocker made."""

from __future__ import annotations

import csv
import random
import sqlite3
import textwrap
from pathlib import Path

import numpy as np
import pytest

from er_framework.config import parse_job
from er_framework.engine.engine import Engine
from er_framework.engine.explain import (
    BlockerTerm,
    Explanation,
    FieldTerm,
    KeyTerm,
    among_candidates,
    blocking_of_pair,
    check_databases_unchanged,
    check_files_unchanged,
    check_inputs_unchanged,
)
from er_framework.engine.stages.exact import exact_groups
from er_framework.engine.stages.reading import read
from er_framework.errors import InputError
from er_framework.executors import run_job
from tests.html_tags import HOSTILE, tags_of

FIRST = ["ann", "bob", "cara", "dan", "eve", "finn", "gus"]
LAST = ["smith", "jones", "brown", "lee"]
CITY = ["ayr", "bath", "cork", "derby", "ely"]


def people(path: Path, n: int = 70, seed: int = 5) -> None:
    """Records from small vocabularies (many shared keys, buckets over the cap), a few exact copies."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append([f"r{i}", rng.choice(FIRST), rng.choice(LAST), rng.choice(CITY), f"555-{rng.randrange(30):04d}"])
    for i in range(0, 12, 3):  # exact copies (collapsed onto their representative in the dedup modes)
        rows.append([f"copy{i}", *rows[i][1:]])
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "first_name", "last_name", "city", "phone"])
        w.writerows(rows)


JOB = """
mode: {mode}
sources:
{sources}
blockers:
  - {{type: field_hash, fields: [phone, [last_name, city]], max_block_size: 4}}
  - {{type: sorted_neighbourhood, keys: [[first_name, city]], window: 3}}
verifier: {{type: field_score, threshold: 50, fields: [{{field: [first_name, last_name], name: name, scorer: ratio}}]}}
cluster: {{type: connected_components}}
"""


def job_file(tmp_path: Path, mode: str) -> Path:
    people(tmp_path / "p.csv")
    if mode == "dedup":
        sources = "  - {name: p, path: p.csv, id: id, fields: [first_name, last_name, city, phone]}"
    else:
        lines = (tmp_path / "p.csv").read_text().splitlines(True)
        (tmp_path / "a.csv").write_text("".join(lines[:40]))
        (tmp_path / "b.csv").write_text(lines[0] + "".join(lines[40:]))
        sources = "\n".join(f"  - {{name: {s}, path: {s}.csv, id: id, fields: [first_name, last_name, city, phone]}}" for s in ("a", "b"))
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(JOB).format(mode=mode, sources=sources))
    return path


@pytest.mark.parametrize("mode", ["dedup", "link"])
def test_blocking_of_pair_agrees_with_the_runs_candidates(tmp_path: Path, mode: str) -> None:
    """The naive reference: a pair is a candidate exactly when the run's candidates hold the pair of the two
    records' representatives (exact copies collapsed)."""
    job = parse_job(job_file(tmp_path, mode))
    result = run_job(job, write=False)
    assert result.candidates is not None and result.exact is not None
    records = result.records
    n = len(records)
    group_of, starts, _sizes, members = exact_groups(result.exact, n)
    rep = members[starts[group_of]]
    made = set(zip(result.candidates.left.tolist(), result.candidates.right.tolist()))

    def reference(a: int, b: int) -> bool:
        x, y = int(rep[a]), int(rep[b])
        return (min(x, y), max(x, y)) in made

    rng = random.Random(1)
    every = [(a, b) for a in range(n) for b in range(a + 1, n) if rep[a] != rep[b]]
    wanted = [p for p in every if reference(*p)]
    assert len(wanted) > 20
    sample = wanted[:60] + rng.sample([p for p in every if not reference(*p)], 60)
    copies = np.flatnonzero(rep != np.arange(n))  # collapsed exact copies (dedup modes)
    assert (len(copies) > 0) is (mode == "dedup")
    for copy in copies[:2].tolist():  # a copy's pairs are its representative's
        sample += [(copy, b) for b in range(0, n, 5) if rep[b] != rep[copy]]
    if mode == "link":  # pairs of one source are never candidates in link mode
        assert any(records.source[a] == records.source[b] for a, b in sample)
    engine = Engine(job, result.model)
    purged = shared_keys = 0
    for a, b in sample:
        terms = blocking_of_pair(engine, records, a, b, result.report["blockers"])
        assert [t.blocker for t in terms] == ["blockers[0] field_hash", "blockers[1] sorted_neighbourhood"]
        assert any(t.candidate for t in terms) is reference(a, b), (a, b, terms)
        keys = terms[0].keys
        assert [k.key for k in keys] == ["phone", "last_name+city"]
        purged += sum("purged" in k.note for k in keys)
        shared_keys += sum(k.shared for k in keys)
        if mode == "link" and records.source[a] == records.source[b]:
            assert not any(t.candidate for t in terms)
    assert purged > 0 and shared_keys > purged  # shared keys of kept and of purged buckets were both met


def test_keys_show_the_records_values(tmp_path: Path) -> None:
    job = parse_job(job_file(tmp_path, "dedup"))
    result = run_job(job, write=False)
    records = result.records
    a, b = 0, 1
    terms = blocking_of_pair(Engine(job, result.model), records, a, b, result.report["blockers"])
    phone = terms[0].keys[0]
    assert phone.left == records.fields["phone"][a] and phone.right == records.fields["phone"][b]
    assert phone.shared is (phone.left == phone.right)
    window = terms[1].keys[0]
    assert window.kind == "sort" and window.key == "first_name+city"
    assert window.left == f"{records.fields['first_name'][a]} | {records.fields['city'][a]}"
    assert "records apart in the sort order (window 3)" in window.note


def test_a_non_candidate_is_never_verified() -> None:
    ex = Explanation(("s", "1"), ("s", "2"), 1.0, 0.5, "points", "field_score", [FieldTerm("name", "ann", "ann", weight=100.0)])
    assert ex.verified and "at or above the threshold 0.5" in str(ex) and "verified: True" in str(ex)
    ex.candidate = False
    ex.blocking = [BlockerTerm("blockers[0] field_hash", False, [KeyTerm("phone", "555-1", "555-2", False)], "keys")]
    text = str(ex)
    assert not ex.verified and ex.to_json()["verified"] is False and ex.to_json()["candidate"] is False
    assert text.splitlines()[1].startswith("  not a candidate: no blocker produced this pair")
    assert "    phone: not shared  ('555-1' vs '555-2')" in text
    assert " at or above the threshold" not in text.replace("would be at or above", "")
    assert "would be at or above the threshold 0.5, but the pair is not a candidate" in text
    assert text.splitlines()[-1] == "  verified: False"


def test_among_candidates_of_a_run_in_memory(tmp_path: Path) -> None:
    """A run held in memory knows its candidates: a pair of representatives or of their copies is among them
    exactly when the candidates hold the representatives' pair (the reference: a set of every pair)."""
    job = parse_job(job_file(tmp_path, "dedup"))
    result = run_job(job, write=False)
    assert result.candidates is not None and result.exact is not None
    n = len(result.records)
    group_of, starts, _sizes, members = exact_groups(result.exact, n)
    rep = members[starts[group_of]]
    made = set(zip(result.candidates.left.tolist(), result.candidates.right.tolist()))
    assert (rep != np.arange(n)).any()
    for a in range(0, n, 3):
        for b in range(n):
            if rep[a] != rep[b]:
                x, y = sorted((int(rep[a]), int(rep[b])))
                assert among_candidates(result.candidates, result.exact, a, b) is ((x, y) in made)


def test_blocking_of_pair_of_lsh_bands_on_signatures() -> None:
    """A keyed blocker on signatures (the shipped documents job, exact copies collapsed): the two records'
    keys from their own signatures decide as the run's candidates did."""
    job = parse_job(Path(__file__).resolve().parents[2] / "configs" / "documents.yaml")
    result = run_job(job, write=False)
    assert result.candidates is not None and result.exact is not None
    n = len(result.records)
    group_of, starts, _sizes, members = exact_groups(result.exact, n)
    rep = members[starts[group_of]]
    made = set(zip(result.candidates.left.tolist(), result.candidates.right.tolist()))
    rng = random.Random(3)
    wanted = sorted(made)[:: max(1, len(made) // 15)][:15]
    others = []
    while len(others) < 15:
        a, b = sorted(rng.sample(range(n), 2))
        if rep[a] != rep[b] and tuple(sorted((int(rep[a]), int(rep[b])))) not in made:
            others.append((a, b))
    assert len(wanted) >= 10
    engine = Engine(job, result.model)
    for a, b in wanted + others:
        terms = blocking_of_pair(engine, result.records, a, b, result.report["blockers"])
        assert terms[0].how == "keys" and terms[0].candidate is (tuple(sorted((int(rep[a]), int(rep[b])))) in made)
        (key,) = terms[0].keys  # the bands of signatures: one line, how many keys each record has
        assert key.key == "keys" and key.left == key.right == "13 keys" and key.shared is terms[0].candidate


def test_check_inputs_unchanged_compares_the_fingerprints_of_report_json(tmp_path: Path) -> None:
    from er_framework.engine.explain import check_inputs_unchanged, input_fingerprints
    from er_framework.errors import InputError

    data = tmp_path / "people.csv"
    data.write_text("id,name\n1,ann\n2,anne\n", encoding="utf-8")
    cfg = tmp_path / "job.yaml"
    cfg.write_text(
        textwrap.dedent("""
        name: fp
        mode: dedup
        threshold: 0.5
        sources: [{name: p, path: people.csv, id: id, fields: [name]}]
        blockers: [{type: field_hash, fields: [name]}]
        verifier: {type: field_score, threshold: 50, fields: [{field: name, scorer: exact, weight: 1}]}
        """),
        encoding="utf-8",
    )
    job = parse_job(cfg)
    report = {"inputs": input_fingerprints(job)}
    assert [r["source"] for r in report["inputs"]] == ["p"] and report["inputs"][0]["path"] == str(data.resolve())
    assert check_inputs_unchanged(report, job) == []
    assert "no fingerprints" in check_inputs_unchanged({}, job)[0]  # a run of an older version
    data.write_text("id,name\n1,ann\n2,bob\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        check_inputs_unchanged(report, job)
    assert str(data.resolve()) in str(e.value) and "changed since the run" in str(e.value) and "bob" not in str(e.value)
    [note] = check_inputs_unchanged(report, job, allow_changed=True)
    assert "--allow-changed" in note


def _sqlite_job(tmp_path: Path) -> Path:
    with sqlite3.connect(tmp_path / "crm.db") as conn:
        conn.execute("CREATE TABLE customers (cid text, name text, zip text)")
        conn.executemany("INSERT INTO customers VALUES (?, ?, ?)", [("c1", "ann", "111"), ("c2", "anne", "111"), ("c3", "bob", "222")])
    conn.close()
    cfg = tmp_path / "job.yaml"
    cfg.write_text(
        textwrap.dedent("""
        name: fpdb
        mode: link_and_dedup
        sources:
          - {name: p, path: people.csv, id: id, fields: [name, zip]}
          - {name: crm, database: "sqlite:///crm.db", table: customers, id: cid, fields: [name, zip]}
        blockers: [{type: field_hash, fields: [zip]}]
        verifier: {type: field_score, threshold: 50, fields: [{field: name, scorer: jaro_winkler, weight: 1}]}
        """),
        encoding="utf-8",
    )
    (tmp_path / "people.csv").write_text("id,name,zip\n1,ann,111\n2,carl,333\n", encoding="utf-8")
    return cfg


def test_check_inputs_unchanged_compares_a_database_sources_rows_with_the_runs_digest(tmp_path: Path) -> None:
    job = parse_job(_sqlite_job(tmp_path))
    report = run_job(job, tmp_path / "out").report
    db = [r for r in report["inputs"] if r["source"] == "crm"]
    assert [r["source"] for r in report["inputs"]] == ["p", "crm"]
    assert db == [
        {
            "source": "crm",
            "kind": "database",
            "database": "sqlite:///crm.db",
            "table": "customers",
            "rows": 3,
            "sha256": report["sources"]["crm"]["sha256"],
        }
    ]
    assert check_inputs_unchanged(report, job) == []  # the database read here
    assert check_databases_unchanged(report, job, read(job)[1]) == []
    with sqlite3.connect(tmp_path / "crm.db") as conn:  # the same rows in another physical order: unchanged
        conn.execute("CREATE TABLE t AS SELECT * FROM customers ORDER BY cid DESC")
        conn.execute("DROP TABLE customers")
        conn.execute("ALTER TABLE t RENAME TO customers")
    conn.close()
    assert read(job)[0].ids[2:] == ["c3", "c2", "c1"] and check_inputs_unchanged(report, job) == []
    with sqlite3.connect(tmp_path / "crm.db") as conn:
        conn.execute("UPDATE customers SET zip = '999' WHERE cid = 'c1'")
    conn.close()
    assert check_files_unchanged(report, job) == []  # the file did not change
    for check in (
        lambda **kw: check_inputs_unchanged(report, job, **kw),
        lambda **kw: check_databases_unchanged(report, job, read(job)[1], **kw),
    ):
        with pytest.raises(InputError) as e:
            check()
        (problem,) = e.value.problems
        assert problem.where == "source 'crm' (sqlite:///crm.db, table 'customers')"
        assert "changed since the run: the values of its rows differ" in problem.message and "999" not in str(e.value)
        assert "restore the rows the run read" in problem.fix and "--allow-changed" in problem.fix
        [note] = check(allow_changed=True)
        assert note.startswith("source 'crm' (sqlite:///crm.db, table 'customers') changed since the run") and "--allow-changed" in note
    with sqlite3.connect(tmp_path / "crm.db") as conn:
        conn.execute("INSERT INTO customers VALUES ('c4', 'dora', '444')")
    conn.close()
    with pytest.raises(InputError, match="it held 3 rows and now holds 4"):
        check_inputs_unchanged(report, job)
    # a run of an older er: the database source's reading statistics but no digest in inputs
    older = {**report, "inputs": [r for r in report["inputs"] if r["source"] != "crm"]}
    [note] = check_inputs_unchanged(older, job)
    assert "holds no digest of source 'crm'" in note and "older version" in note
    # a source the run did not read from this database (another job's report)
    other = {**older, "sources": {"p": report["sources"]["p"]}}
    with pytest.raises(InputError, match="the run did not read it"):
        check_inputs_unchanged(other, job)
    assert "no fingerprints" in check_inputs_unchanged({}, job)[0]  # nothing recorded at all: one note


# ---------------------------------------------------------------- notebooks: repr and _repr_html_


def weights_explanation(n_fields: int = 3, value: str = HOSTILE) -> Explanation:
    fields = [FieldTerm(f"f{i}{HOSTILE}", value * 100, "other", level=f"=100{HOSTILE}", weight=2.0 - i) for i in range(n_fields)]
    total = -3.0 + sum(2.0 - i for i in range(n_fields))
    score = 1 / (1 + 2 ** -max(total, -1000.0))
    return Explanation(("A", HOSTILE), ("B", "b1"), score, 0.5, "weights", "fellegi_sunter", fields, prior_weight=-3.0, match_weight=total)


def test_the_repr_is_one_line_and_str_the_waterfall() -> None:
    e = weights_explanation()
    text = repr(e)
    assert "\n" not in text and text.startswith("<Explanation: A '<script>") and "fellegi_sunter score 0.5 (weights)" in text
    assert text.endswith("threshold 0.5, verified True>")
    lines = str(e).splitlines()
    assert lines[0].startswith(f"A {HOSTILE}  vs  B b1  (fellegi_sunter)")
    assert lines[1].lstrip().startswith("prior") and "bits" in lines[-3] and lines[-1] == "  verified: True"


def test_the_html_is_the_reports_waterfall_escaped() -> None:
    e = weights_explanation()
    html = e._repr_html_()
    assert tags_of(html) <= {"style", "div", "b", "table", "tr", "th", "td", "svg", "line", "text", "g", "title", "rect", "p"}
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert 'aria-label="waterfall of the match weight"' in html
    assert html.count("<rect") == 1 + 3 + 1  # the prior, one bar per field, the total
    assert "+2.00" in html and "-0.00" not in html and "threshold 0.5" in html
    assert "=100" in html  # the level's name


def test_the_html_stays_small_for_many_long_fields() -> None:
    from er_framework.engine.reprs import HTML_LIMIT, TERMS_SHOWN

    e = weights_explanation(n_fields=500, value="v" * 10_000)
    html = e._repr_html_()
    assert len(html.encode()) < HTML_LIMIT
    assert f"… {500 - TERMS_SHOWN} more fields" in html
    assert len(str(e).splitlines()) > 500  # str() keeps every field


def test_the_html_of_points_sets_exact_and_non_candidates() -> None:
    points = Explanation(("A", "a"), ("B", "b"), 180.0, 150.0, "points", "field_score", [FieldTerm("name", HOSTILE, "x", weight=90.0)])
    html = points._repr_html_()
    assert ">+90.00<" in html and ">points<" in html and "&lt;script&gt;" in html and "<script" not in html
    sets = Explanation(("A", "a"), ("A", "b"), 0.5, 0.6, "sets", "jaccard", tokens={"shared": 10, "left_only": 5, "right_only": 5})
    html = sets._repr_html_()
    assert "shared" in html and ">0.500000<" in html and ">False<" in html
    exact = Explanation(("A", "a"), ("A", "b"), 1.0, 0.6, "exact", "jaccard")
    assert "exact copies" in exact._repr_html_()
    far = Explanation(
        ("A", "a"), ("A", "b"), 0.9, 0.6, "sets", "jaccard", tokens={"shared": 9, "left_only": 1, "right_only": 0}, candidate=False
    )
    html = far._repr_html_()
    assert "not a candidate" in html and ">False<" in html
    assert "verified False" in repr(far)
