"""The engine reports a blocker that breaks the candidates contract as a plugin error naming it and its distribution.

A throwaway third-party plugin (a package with its own ``*.dist-info`` and an
entry point in group ``er_framework``) offers the blocker ``broken_pairs``:
every pair of the batch, correctly normalized, unless its ``defect``
parameter asks for unsorted, duplicated, out-of-range, reversed or
same-source (link mode) pairs, or for the job's record indices
(``batch.active``) instead of batch rows. Each defect must stop the job —
run through :func:`er_framework.executors.run_job` and through ``er run`` —
with a :class:`PluginError` naming ``broken_pairs`` and ``erx-broken 0.3.1``,
no traceback, exit code 2 and no output files.

And a learning verifier scores with the fitted state of the engine's model (Engine.with_model).
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from er_framework.cli.main import main
from er_framework.config.resolve import parse_job
from er_framework.data import Batch, Pairs, Records
from er_framework.engine.engine import Engine
from er_framework.errors import PluginError
from er_framework.executors import run_job
from er_framework.registry import Registry, build_registry, reset_default_registry

DIST, VERSION, MODULE, EP = "erx-broken", "0.3.1", "erx_broken_blocker", "broken"

PLUGIN_SOURCE = textwrap.dedent(
    '''
    """A blocker that breaks the candidates contract on request."""
    from typing import Literal

    import numpy as np

    from er_framework import Blocker, Pairs, Params, hookimpl


    class BrokenParams(Params):
        defect: Literal["none", "unsorted", "duplicated", "out_of_range", "reversed", "same_source", "global_indices"] = "none"


    class BrokenPairs(Blocker):
        name = "broken_pairs"
        summary = "every pair of the batch, broken on request"
        Params = BrokenParams
        needs = frozenset({"fields"})

        def candidates(self, batch):
            n = len(batch)
            left, right = np.triu_indices(n, k=1)
            pairs = Pairs(left, right)  # every pair, normalized
            defect = self.params.defect
            if defect != "same_source":
                pairs = batch.allowed(pairs)
            if defect == "unsorted":
                return Pairs(pairs.left[::-1], pairs.right[::-1])
            if defect == "duplicated":
                return Pairs(np.repeat(pairs.left, 2), np.repeat(pairs.right, 2))
            if defect == "out_of_range":
                return Pairs(np.append(pairs.left, 0), np.append(pairs.right, n))
            if defect == "reversed":
                return Pairs(pairs.right, pairs.left)
            if defect == "global_indices":
                return Pairs(batch.active[pairs.left], batch.active[pairs.right])
            return pairs


    @hookimpl
    def er_register_blockers():
        return [BrokenPairs]
    '''
)

DOCS_A = [
    {"id": "a1", "text": "the quick brown fox jumps over the lazy dog"},
    {"id": "a2", "text": "the quick brown fox jumps over the lazy dog"},  # exact copy of a1: collapsed in dedup
    {"id": "a3", "text": "the quick brown fox jumped over the lazy dog"},
    {"id": "a4", "text": "lorem ipsum dolor sit amet consectetur"},
    {"id": "a5", "text": "lorem ipsum dolor sit amet consectetuer"},
]
DOCS_B = [
    {"id": "b1", "text": "the quick brown fox jumps over the lazy dogs"},
    {"id": "b2", "text": "lorem ipsum dolor sit amet, consectetur"},
]

#: defect -> (modes where it breaks the contract, text the error must contain)
DEFECTS = {
    "unsorted": (("dedup", "link"), "not sorted"),
    "duplicated": (("dedup", "link"), "duplicated"),
    "reversed": (("dedup", "link"), "left >= right"),
    "out_of_range": (("dedup", "link"), "indices outside 0.."),
    "global_indices": (("dedup",), "indices outside 0.."),  # exact copy a2 collapsed: active has a gap
    "same_source": (("link",), "from the same source in link mode"),
}
CASES = [(d, mode) for d, (modes, _) in DEFECTS.items() for mode in modes]


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plugin package and its dist-info on sys.path (found through its entry point); a fresh default registry."""
    site = tmp_path / "site"
    (site / MODULE).mkdir(parents=True)
    (site / MODULE / "__init__.py").write_text(PLUGIN_SOURCE)
    info = site / f"{DIST.replace('-', '_')}-{VERSION}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: {VERSION}\n")
    (info / "entry_points.txt").write_text(f"[er_framework]\n{EP} = {MODULE}\n")
    monkeypatch.syspath_prepend(str(site))
    reset_default_registry()
    yield site
    reset_default_registry()
    sys.modules.pop(MODULE, None)


def write_job(tmp: Path, mode: str, defect: str) -> Path:
    (tmp / "a.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS_A))
    (tmp / "b.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS_B))
    sources = "[{name: a, path: a.jsonl, id: id, fields: [text]}" + (
        ", {name: b, path: b.jsonl, id: id, fields: [text]}]" if mode == "link" else "]"
    )
    job = tmp / f"job_{mode}_{defect}.yaml"
    job.write_text(
        textwrap.dedent(f"""
        mode: {mode}
        threshold: 0.5
        sources: {sources}
        shingler: {{type: char, k: 3}}
        blockers: [{{type: broken_pairs, defect: {defect}}}]
        verifier: {{type: jaccard}}
    """)
    )
    return job


def registry_with_plugin() -> Registry:
    reg = build_registry()
    info = reg.components["blocker"]["broken_pairs"].plugin
    assert (info.distribution, info.version, info.name) == (DIST, VERSION, EP)
    return reg


def test_the_plugin_without_defect_runs_both_modes(plugin_site: Path, tmp_path: Path) -> None:
    """The control: the same blocker honouring the contract gives the expected pairs."""
    reg = registry_with_plugin()
    dedup = run_job(parse_job(write_job(tmp_path, "dedup", "none"), reg), tmp_path / "out_dedup")
    ids = dedup.records.ids
    found = {(ids[a], ids[b]) for a, b in zip(dedup.pairs.left.tolist(), dedup.pairs.right.tolist())}
    assert found == {("a1", "a2"), ("a1", "a3"), ("a4", "a5")}  # the copy a2 is linked to a1 only
    assert dedup.labels[1] == dedup.labels[2] and dedup.labels[0] != dedup.labels[3]
    link = run_job(parse_job(write_job(tmp_path, "link", "none"), reg), tmp_path / "out_link")
    ids = link.records.ids
    found = {(ids[a], ids[b]) for a, b in zip(link.pairs.left.tolist(), link.pairs.right.tolist())}
    assert found == {("a1", "b1"), ("a2", "b1"), ("a3", "b1"), ("a4", "b2"), ("a5", "b2")}
    assert (tmp_path / "out_link" / "pairs.csv").exists()


@pytest.mark.parametrize("defect,mode", CASES)
def test_run_job_reports_the_broken_blocker(plugin_site: Path, tmp_path: Path, defect: str, mode: str) -> None:
    reg = registry_with_plugin()
    out = tmp_path / "out"
    with pytest.raises(PluginError) as err:
        run_job(parse_job(write_job(tmp_path, mode, defect), reg), out)
    text = str(err.value)
    assert f"blocker 'broken_pairs' (plugin {EP}, {DIST} {VERSION}) broke the candidates contract" in text
    assert DEFECTS[defect][1] in text
    assert "fix:" in text and "check_blocker" in text
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("defect,mode", [("unsorted", "dedup"), ("same_source", "link"), ("global_indices", "dedup")])
def test_er_run_exits_2_without_traceback(
    plugin_site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], defect: str, mode: str
) -> None:
    out = tmp_path / "out"
    code = main(["run", str(write_job(tmp_path, mode, defect)), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "plugin error" in err and "'broken_pairs'" in err and f"{DIST} {VERSION}" in err
    assert DEFECTS[defect][1] in err
    assert "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())
    # the same blocker without the defect runs through the CLI
    assert main(["run", str(write_job(tmp_path, mode, "none")), "--out", str(tmp_path / "ok"), "--quiet"]) == 0
    assert (tmp_path / "ok" / "pairs.csv").exists()


def test_checked_candidates_accepts_the_contract_and_names_each_rule(plugin_site: Path, tmp_path: Path) -> None:
    """Engine.checked_candidates directly: a correct answer passes unchanged, each broken one is refused."""
    engine = Engine(parse_job(write_job(tmp_path, "link", "none"), registry_with_plugin()))
    blocker = engine.blockers[0]
    recs = Records(ids=list("abcd"), source=np.array([0, 0, 1, 1], dtype=np.int32), source_names=["a", "b"], fields={"text": ["x"] * 4})
    batch = Batch(records=recs, cross_source_only=True)
    good = Pairs(np.array([0, 0, 1, 1]), np.array([2, 3, 2, 3]))
    assert engine.checked_candidates(blocker, good, batch) is good
    assert len(engine.checked_candidates(blocker, Pairs.empty(), batch)) == 0
    bad = {
        "indices outside 0..3 (from 0 to 4)": Pairs(np.array([0]), np.array([4])),
        "indices outside 0..3 (from -1 to 2)": Pairs(np.array([-1]), np.array([2])),
        "1 with left >= right": Pairs(np.array([2]), np.array([0])),
        "duplicated or not sorted": Pairs(np.array([0, 0]), np.array([2, 2])),
        "not sorted": Pairs(np.array([1, 0]), np.array([2, 2])),
        "1 pairs of records from the same source": Pairs(np.array([0, 0]), np.array([1, 2])),
    }
    for needle, pairs in bad.items():
        with pytest.raises(PluginError, match="broke the candidates contract") as err:
            engine.checked_candidates(blocker, pairs, batch)
        assert needle in str(err.value) and f"{DIST} {VERSION}" in str(err.value)


def test_a_learner_scores_with_the_state_of_its_model() -> None:
    """A learner (fellegi_sunter) scores new pairs with the fitted state of the engine's model: without one
    scoring is an error; with_model gives an engine applying a run's model and leaves the engine as it was.
    The Dask executor fits a code-fitted learner on its summed codes: no refusal there either way."""
    job = parse_job(Path(__file__).resolve().parents[2] / "configs" / "febrl4.yaml")
    engine = Engine(job)
    assert not [m for m in engine.lookup_refusals("partition") if "fellegi_sunter" in m]
    recs = Records(
        ids=["a", "b"],
        source=np.array([0, 1], dtype=np.int32),
        source_names=["A", "B"],
        fields={f: ["x", "x"] for f in job.spec.sources[0].fields},
    )
    with pytest.raises(ValueError, match="no fitted state in the model"):
        engine.score(recs, Pairs(np.array([0]), np.array([1])))
    model = run_job(job, write=False).model
    assert model is not None
    applied = engine.with_model(model)
    assert engine.model.verifier is None and engine.verifier_state() is None
    assert applied.verifier_state() == model.verifier_state and applied.model is model
    assert applied.score(recs, Pairs(np.array([0]), np.array([1]))).shape == (1,)
