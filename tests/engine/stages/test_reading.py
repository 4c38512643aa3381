"""The read and normalize stages (er_framework.engine.stages.reading): the normalize stage's counts of values a
chain could not read, and ``normalize_strict: true`` making them an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from er_framework.config.resolve import parse_job
from er_framework.engine.stages.reading import normalize, read, require_parsed
from er_framework.errors import InputError


def _job(tmp: Path, strict: bool | None) -> Path:
    (tmp / "d.csv").write_text(
        "id,email,dob,zip\n1,ann@x.org,1980-03-05,12345\n2,foo,31/02/1999,12.5\n3,,N/A,1999.0\n4,bob@y.org,19151111.0,n/a\n",
        encoding="utf-8",
    )
    path = tmp / "job.yaml"
    path.write_text(
        "sources: [{name: d, path: d.csv, id: id, fields: [email, dob, zip]}]\n"
        "normalize: {email: email, dob: date, zip: digits}\n"
        + ("" if strict is None else f"normalize_strict: {str(strict).lower()}\n")
        + "blockers: [{type: field_hash, fields: [zip]}]\n"
        "verifier: {type: field_score, threshold: 100, fields: [{field: zip, scorer: exact}]}\n",
        encoding="utf-8",
    )
    return path


def test_normalize_counts_what_each_chain_could_not_read(tmp_path: Path) -> None:
    job = parse_job(_job(tmp_path, None))
    assert job.spec.normalize_strict is False
    records, stats = normalize(job, read(job)[0])
    assert records.fields["dob"] == ["1980-03-05", None, None, "1915-11-11"]
    assert records.fields["zip"] == ["12345", None, "1999", None]
    assert {f: (s["unparseable"], s["unparseable_examples"]) for f, s in stats.items()} == {
        "email": (1, ["foo"]),
        "dob": (1, ["31/02/1999"]),
        "zip": (1, ["12.5"]),
    }
    assert stats["dob"]["placeholders"] == 1 and stats["dob"]["unparseable_share"] == round(1 / 3, 6)
    assert stats["email"]["missing_before"] == 1 and stats["email"]["unparseable_share"] == round(1 / 3, 6)


def test_strict_makes_every_field_with_unread_values_an_error(tmp_path: Path) -> None:
    job = parse_job(_job(tmp_path, True))
    with pytest.raises(InputError) as exc:
        normalize(job, read(job)[0])
    problems = exc.value.problems
    assert [p.path for p in problems] == ["normalize.email", "normalize.dob", "normalize.zip"]
    assert (
        problems[1].message
        == "1 of 3 values (33.3%) could not be read by [date] and became missing, e.g. '31/02/1999' (normalize_strict: true)"
    )
    assert all(p.where.endswith("job.yaml") and "remove normalize_strict: true" in p.fix for p in problems)
    # every value read: nothing raised; false: never
    require_parsed(job, {"dob": {"values": 3, "unparseable": 0}})
    require_parsed(parse_job(_job(tmp_path, False)), {"dob": {"values": 3, "unparseable": 2}})


def test_strict_must_be_a_boolean(tmp_path: Path) -> None:
    path = _job(tmp_path, None)
    path.write_text(path.read_text(encoding="utf-8") + "normalize_strict: 1\n", encoding="utf-8")
    with pytest.raises(Exception, match="normalize_strict"):
        parse_job(path)


def test_read_maps_the_columns_of_files_and_of_frames_given_in_memory(tmp_path: Path) -> None:
    import pandas as pd

    from er_framework.config.resolve import resolve_job

    (tmp_path / "a.csv").write_bytes("id;given;postcode\n1;Zoë;1010\n2;Ann;2020\n".encode("latin-1"))
    data = {
        "mode": "link",
        "sources": [
            {
                "name": "A",
                "path": "a.csv",
                "fields": ["first_name", "zip"],
                "columns": {"first_name": "given", "zip": "postcode"},
                "csv": {"delimiter": ";", "encoding": "latin-1"},
            },
            {"name": "B", "fields": ["first_name", "zip"], "columns": {"first_name": "vorname", "zip": "plz"}},
        ],
        "blockers": [{"type": "field_hash", "fields": ["zip"]}],
        "verifier": {"type": "field_score", "threshold": 100, "fields": [{"field": "zip", "scorer": "exact"}]},
    }
    job = resolve_job(data, {}, "<job>", tmp_path, frames=["B"])
    job.frames = {"B": pd.DataFrame({"id": ["b1"], "vorname": ["Zoe"], "plz": ["1010"]})}
    records, _ = read(job)
    assert records.ids == ["1", "2", "b1"]
    assert records.fields == {"first_name": ["Zoë", "Ann", "Zoe"], "zip": ["1010", "2020", "1010"]}
    job.frames = {"B": pd.DataFrame({"id": ["b1"], "first_name": ["Zoe"], "plz": ["1010"]})}
    with pytest.raises(InputError, match=r"column 'vorname' \(field first_name, via columns:\) not found"):
        read(job)
