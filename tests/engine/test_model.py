"""The model (er_framework.engine.model): what a job learns, as one value saved to model.json and applied again.

* the JSON round trip (to_json / from_json) and the file round trip (save / load, and the output
  folder's model.json);
* load_model's errors: a missing file, text that is not JSON (with the line), JSON that is not a
  model, another format version, job sections edited after the hash, a damaged part;
* check_model: a job whose verifier fields or plugin versions changed is refused with every change
  named; a changed fixed threshold or changed source files are accepted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from er_framework.config.resolve import Job, parse_job
from er_framework.engine.model import (
    MODEL_FORMAT,
    MODEL_VERSION,
    Model,
    ThresholdChoice,
    check_model,
    job_sections,
    load_model,
    model_text,
    section_changes,
    sections_hash,
)
from er_framework.errors import ConfigError, InputError
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]


def _job_file(tmp: Path, name: str = "febrl4.yaml", edit: Any = None, data: Path | None = None) -> Path:
    """A shipped config with absolute source paths (under ``data`` when given), changed by ``edit(doc)``."""
    doc = yaml.safe_load((ROOT / "configs" / name).read_text(encoding="utf-8"))
    for src in doc["sources"]:
        path = (ROOT / "configs" / src["path"]).resolve()
        src["path"] = str(data / path.name if data is not None else path)
    doc.pop("output", None)
    if edit is not None:
        edit(doc)
    path = tmp / f"job{len(list(tmp.glob('job*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Job, Model]:
    """configs/febrl4.yaml (fellegi_sunter) run without writing: the job and the model it fitted."""
    tmp = tmp_path_factory.mktemp("model")
    job = parse_job(_job_file(tmp))
    model = run_job(job, write=False).model
    assert model is not None
    return job, model


def _problems(err: pytest.ExceptionInfo[Any]) -> list[str]:
    return [p.message for p in err.value.problems]


# ---------------------------------------------------------------------------- round trips


def test_a_run_fits_a_model_of_its_job(fitted: tuple[Job, Model]) -> None:
    job, model = fitted
    assert model.origin == "fitted" and model.job == job_sections(job)
    assert model.verifier is not None and model.verifier["type"] == "fellegi_sunter"
    state = model.verifier_state
    assert state is not None and 0.0 < state["lambda"] < 1.0
    assert list(state["fields"]) == [f.label for f in job.verifier.params.fields]  # type: ignore[attr-defined]
    assert model.threshold == ThresholdChoice(value=0.5, chosen="fixed")
    assert model.pruned is None and model.training is None
    assert model.fitted_on["records"] == 10_000 and model.fitted_on["per_source"] == {"A": 5000, "B": 5000}
    assert "verifier:fellegi_sunter" in model.plugins
    assert "verifier fellegi_sunter: fitted, lambda" in model.summary()


def test_json_round_trip(fitted: tuple[Job, Model]) -> None:
    _, model = fitted
    doc = model.to_json()
    assert doc["format"] == MODEL_FORMAT and doc["version"] == MODEL_VERSION
    assert doc["job"]["hash"] == sections_hash(model.job) == model.job_hash
    text = json.dumps(doc)
    again = Model.from_json(json.loads(text), "somewhere.json")
    assert again.to_json() == doc
    assert again.origin == "somewhere.json" and again.verifier_state == model.verifier_state
    assert again.threshold == model.threshold and again.blocking == model.blocking
    # a value: editing a document leaves the model it came from, or the one made of it, as it is
    doc["job"]["sections"]["seed"] = -1
    doc["verifier"]["state"]["lambda"] = 0.5
    assert model.job["seed"] == again.job["seed"] == 7 and model.to_json()["job"]["sections"]["seed"] == 7
    assert again.verifier_state == model.verifier_state != doc["verifier"]["state"]
    src = json.loads(text)
    made = Model.from_json(src, "m.json")
    src["job"]["sections"]["seed"] = -1
    assert made.job["seed"] == 7 and made.job_hash == model.job_hash


def test_json_round_trip_of_pruned_shingles_and_an_auto_threshold(fitted: tuple[Job, Model]) -> None:
    _, model = fitted
    dropped = np.array([2**64 - 1, 7, 3, 7], dtype=np.uint64)  # the largest token; a repeat is kept once
    choice = ThresholdChoice(value=0.62, chosen="auto", auto={"method": "otsu", "ok": True})
    m = model.learned(pruned=dropped, prune_report={"shingles_pruned": 3}, threshold=choice)
    doc = json.loads(json.dumps(m.to_json()))
    assert doc["prune"]["dropped"] == [int(x) for x in dropped]
    again = Model.from_json(doc, "m.json")
    assert again.pruned is not None and again.pruned.dtype == np.uint64
    assert again.pruned.tolist() == [3, 7, 2**64 - 1]  # sorted, distinct
    assert again.prune_report == {"shingles_pruned": 3} and again.threshold == choice
    assert "pruned shingles     3" in again.summary() and "0.62 (auto)" in again.summary()


def test_save_and_load_through_a_file(tmp_path: Path, fitted: tuple[Job, Model]) -> None:
    _, model = fitted
    path = model.save(tmp_path / "m.json")
    text = path.read_text(encoding="utf-8")
    assert text == model_text(model) and text.endswith("\n")
    loaded = Model.load(path)
    assert loaded.to_json() == model.to_json() and loaded.origin == str(path)
    # a run's output folder: its model.json
    (tmp_path / "out").mkdir()
    shutil.copy(path, tmp_path / "out" / "model.json")
    assert load_model(tmp_path / "out").to_json() == model.to_json()
    assert load_model(tmp_path / "out").origin == str(tmp_path / "out" / "model.json")


# ---------------------------------------------------------------------------- load_model's errors


def test_a_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_model(tmp_path / "none.json")
    assert "no such model file" in err.value.render() and "er train" in err.value.render()
    assert err.value.problems[0].where == str(tmp_path / "none.json")


def test_a_model_file_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('{\n "format": "er-framework model",\n "version": 1,,\n}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_model(path)
    assert err.value.problems[0].where == f"{path}:3"
    assert "the model file is not JSON" in _problems(err)[0]


@pytest.mark.parametrize("doc", [[], {"a": 1}, {"format": "something else", "version": 1}])
def test_json_that_is_not_a_model(tmp_path: Path, doc: Any) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_model(path)
    assert "this is not an er-framework model file" in _problems(err)[0]


def test_another_format_version(tmp_path: Path, fitted: tuple[Job, Model]) -> None:
    doc = fitted[1].to_json()
    doc["version"] = MODEL_VERSION + 1
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_model(path)
    assert f"model format version {MODEL_VERSION + 1}" in _problems(err)[0]
    assert f"reads version {MODEL_VERSION}" in _problems(err)[0]


def test_sections_edited_after_the_hash(tmp_path: Path, fitted: tuple[Job, Model]) -> None:
    doc = fitted[1].to_json()
    doc["job"]["sections"]["verifier"]["fields"][0]["levels"] = [100.0, 85.0]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_model(path)
    assert "do not match its hash" in _problems(err)[0] and "edited by hand" in _problems(err)[0]
    # with the hash left out the sections are taken as they are (and check_model compares them with the job)
    del doc["job"]["hash"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert load_model(path).job["verifier"]["fields"][0]["levels"] == [100.0, 85.0]


@pytest.mark.parametrize(
    "part, value",
    [
        ("verifier", {"type": "fellegi_sunter"}),  # no state
        ("prune", {"dropped": [-1], "report": {}}),  # not a 64-bit token
        ("threshold", {"chosen": "fixed"}),  # no value
        ("job", {"file": "x.yaml"}),  # no sections
    ],
)
def test_a_damaged_part(tmp_path: Path, fitted: tuple[Job, Model], part: str, value: Any) -> None:
    doc = fitted[1].to_json()
    doc[part] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_model(path)
    assert "damaged or was edited by hand" in _problems(err)[0]


# ---------------------------------------------------------------------------- check_model


def test_the_model_fits_its_own_job(fitted: tuple[Job, Model]) -> None:
    job, model = fitted
    check_model(model, job)
    check_model(Model.from_json(json.loads(json.dumps(model.to_json())), "m.json"), job)


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda st: st.update({"lambda": 2.0}), "lambda 2.0 of the model is not between 0 and 1"),
        (lambda st: st["dependence"].update({"log_lift": {"nope|surname": 1.0}}), "dependence section does not fit these fields"),
        (lambda st: st.pop("term_frequencies"), "holds no term frequencies"),
    ],
)
def test_a_damaged_verifier_state_is_refused(fitted: tuple[Job, Model], damage: Any, said: str) -> None:
    """A hand-edited state (its lambda, its dependence, its term frequencies) is a message naming what is
    wrong, not an error inside the run."""
    job, model = fitted
    doc = json.loads(json.dumps(model.to_json()))
    damage(doc["verifier"]["state"])
    with pytest.raises(ConfigError) as err:
        check_model(Model.from_json(doc, "m.json"), job)
    (line,) = _problems(err)
    assert "its fitted verifier state is damaged" in line and said in line, line


def test_a_job_whose_verifier_fields_changed_is_refused(tmp_path: Path, fitted: tuple[Job, Model]) -> None:
    _, model = fitted

    def edit(doc: dict[str, Any]) -> None:
        doc["verifier"]["fields"][0]["levels"] = [100, 85]
        doc["verifier"]["fields"][2]["comparison"] = "jaro_winkler"

    job = parse_job(_job_file(tmp_path, edit=edit))
    with pytest.raises(ConfigError) as err:
        check_model(model.learned(origin="m.json"), job)
    lines = _problems(err)
    assert all(line.startswith("the model does not fit this job (job0.yaml): ") for line in lines)
    assert any("verifier.fields[0].levels: [100.0, 92.0, 80.0] in the model, [100.0, 85.0] in the job" in x for x in lines)
    assert any('verifier.fields[2].comparison: "levenshtein" in the model, "jaro_winkler" in the job' in x for x in lines)
    assert len(lines) == 2 and all(p.where == "m.json" for p in err.value.problems)
    assert "er train JOB --model FILE" in err.value.render()
    # a field added: the lists differ in length, named as one change
    job = parse_job(
        _job_file(tmp_path, edit=lambda d: d["verifier"]["fields"].append({"field": "given_name", "name": "given2", "comparison": "exact"}))
    )
    with pytest.raises(ConfigError) as err:
        check_model(model, job)
    assert [x.split(": ", 2)[1] for x in _problems(err)] == ["verifier.fields"]


def test_a_changed_plugin_version_is_refused(fitted: tuple[Job, Model]) -> None:
    job, model = fitted
    plugins = json.loads(json.dumps(model.plugins))
    plugins["verifier:fellegi_sunter"]["version"] = "0.0.1-old"
    with pytest.raises(ConfigError) as err:
        check_model(model.learned(plugins=plugins), job)
    (line,) = _problems(err)
    assert "plugin of verifier:fellegi_sunter" in line and "0.0.1-old fitted the model" in line
    assert "is installed" in line


def test_a_changed_fixed_threshold_is_accepted(tmp_path: Path, fitted: tuple[Job, Model]) -> None:
    _, model = fitted

    def edit(doc: dict[str, Any]) -> None:
        doc["verifier"]["threshold"] = 0.8  # the verifier's own
        doc["threshold"] = 0.7  # the job's

    job = parse_job(_job_file(tmp_path, edit=edit))
    check_model(model, job)
    assert job_sections(job) == model.job


def test_changed_source_paths_are_accepted(tmp_path: Path, fitted: tuple[Job, Model]) -> None:
    _, model = fitted
    data = tmp_path / "elsewhere"
    data.mkdir()
    for name in ("febrl4_a.csv", "febrl4_b.csv"):
        shutil.copy(ROOT / "configs" / "data" / "febrl" / name, data / name)
    job = parse_job(_job_file(tmp_path, data=data))
    paths = [p for i in range(len(job.spec.sources)) for p in job.source_paths(i)]
    assert len(paths) == 2 and all(str(p).startswith(str(data)) for p in paths)
    check_model(model, job)


def test_an_auto_threshold_needs_the_chosen_one(tmp_path: Path, fitted: tuple[Job, Model]) -> None:
    def edit(doc: dict[str, Any]) -> None:
        del doc["verifier"]["threshold"]
        doc["threshold"] = "auto"

    job = parse_job(_job_file(tmp_path, edit=edit))
    bare = Model.for_job(job)
    with pytest.raises(ConfigError) as err:
        check_model(bare, job)
    assert _problems(err) == ["the model does not fit this job (job0.yaml): threshold: auto, but the model holds no chosen threshold"]
    check_model(bare.learned(threshold=ThresholdChoice(0.6, "auto", {})), job)
    # a model of the fixed threshold does not fit the auto job, and the other way round
    with pytest.raises(ConfigError, match="threshold"):
        check_model(fitted[1], job)


def test_section_changes_names_each_path() -> None:
    then = {"a": 1, "b": {"c": [1, 2], "d": "x"}, "gone": True}
    now = {"a": 1, "b": {"c": [1, 3], "d": "y"}, "new": None}
    assert section_changes(then, now) == [
        "b.c[1]: 2 in the model, 3 in the job",
        'b.d: "x" in the model, "y" in the job',
        "gone: true in the model, absent from the job",
        "new: absent from the model, null in the job",
    ]
    assert section_changes({"a": [1]}, {"a": [1, 2]}) == ["a: [1] in the model, [1, 2] in the job"]
    assert section_changes(1, 2) == ["job: 1 in the model, 2 in the job"]


def test_save_replaces_a_model_but_never_another_file(fitted: tuple[Job, Model], tmp_path: Path) -> None:
    from er_framework.engine.model import MODEL_FILE_KIND

    _, model = fitted
    notes = tmp_path / "notes.json"
    notes.write_text('{"my": "notes"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="not an er model file"):
        model.save(notes)
    assert notes.read_text(encoding="utf-8") == '{"my": "notes"}\n'
    path = model.save(tmp_path / "m.json")
    assert model.save(path) == path  # a model is replaced by the next one
    assert MODEL_FILE_KIND.recognizes(b'{\n "format": "er-framework model",\n "version": 1\n}')


# ---------------------------------------------------------------- notebooks: repr and _repr_html_

HOSTILE = '<script>alert("x")</script>"><img src=x onerror=alert(1)>'


def test_the_repr_is_one_short_line(fitted: tuple[Job, Model]) -> None:
    _, model = fitted
    text = repr(model)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("<Model: verifier fellegi_sunter fitted, on 10,000 records, threshold 0.5 (fixed), job ")
    assert "0.69" not in text and "lambda" not in text  # never the fitted state
    loaded = Model.from_json(model.to_json(), "saved/model.json")
    assert repr(loaded).endswith(", from saved/model.json>")


def test_the_html_is_the_weights_table(fitted: tuple[Job, Model]) -> None:
    import math

    _, model = fitted
    html = model._repr_html_()
    state = model.verifier_state
    assert state is not None
    given = state["fields"]["given_name"]
    assert "<th>field</th>" in html and ">weight (bits)</th>" in html
    assert html.count("<td>") >= 5 * sum(len(f["m"]) for f in state["fields"].values())
    exact = math.log2(given["m"][0] / given["u"][0])
    assert f">{exact:+.2f}</td>" in html and ">given_name</td>" in html and "&gt;=92" in html
    assert ">threshold</th>" in html and ">0.5 (fixed)</td>" in html


def test_the_html_is_escaped_and_small_for_a_large_state() -> None:
    from html.parser import HTMLParser

    from er_framework.engine.reprs import HTML_LIMIT, LEVELS_SHOWN

    fields = {
        f"{HOSTILE}{i}": {"levels": [f"{HOSTILE}{k}" * 20 for k in range(50)], "m": [0.02] * 50, "u": [0.02] * 49 + [0.0]}
        for i in range(100)
    }
    model = Model(job={}, plugins={}, job_file=HOSTILE, verifier={"type": HOSTILE, "state": {"lambda": 0.01, "fields": fields}})
    html = model._repr_html_()
    assert len(html.encode()) < HTML_LIMIT
    assert f"… {100 * 50 - LEVELS_SHOWN} more levels" in html

    class Tags(HTMLParser):
        tags: set[str] = set()

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.add(tag)

    parser = Tags()
    parser.feed(html)
    assert parser.tags <= {"style", "div", "b", "table", "thead", "tbody", "tr", "th", "td", "p"}
    assert "&lt;script&gt;" in html and "<script" not in html
    assert ">+0.00</td>" in html and ">+inf</td>" in html  # m = u: no evidence; u = 0: the level proves a match
    assert "\n" not in repr(model) and len(repr(model)) < 400


def test_the_html_of_a_state_without_weights() -> None:
    plain = Model(job={}, plugins={}, verifier={"type": "custom", "state": {"centroids": [[1, 2]], "scale": 2.5}})
    html = plain._repr_html_()
    assert "fitted state: centroids, scale (no per-level weights to show)" in html and ">2.5</td>" in html
    assert "no fitted verifier state" in Model(job={}, plugins={})._repr_html_()
    assert repr(Model(job={}, plugins={})) == "<Model: no fitted verifier, job ?>"
