"""The model: everything a job learns from its data, as one value that is saved, loaded and applied.

A run fits what the job learns (the verifier's fitted state, e.g. the
Fellegi-Sunter lambda, m and u of every field and level; the shingles
``prune_shingles:`` dropped; the threshold ``threshold: auto`` chose; the LSH
bands and rows the blockers use), keeps it in a :class:`Model` and writes it
to ``OUT/model.json``. ``er run JOB --model FILE`` (``er_framework.run(job,
model=...)``) applies a saved model without fitting again: the pairs and
clusters are the ones the fitting run gave. The local executor, every Dask
worker and the index apply the same value, so they give the same scores.

The file format (``model.json``, :data:`MODEL_FORMAT` version
:data:`MODEL_VERSION`) is JSON a person can read and diff::

    {
      "format": "er-framework model", "version": 1,
      "er_framework": "0.1.0",                 # the version that fitted it
      "job": {"hash": "…", "file": "configs/febrl4.yaml",
              "sections": {...}},              # the job settings the model depends on (:func:`job_sections`)
      "plugins": {"verifier:fellegi_sunter": {"plugin": …, "distribution": …, "version": …}, …},
      "fitted_on": {"records": 10000, "candidate_pairs": 41234, "per_source": {...}},
      "threshold": {"value": 0.5, "chosen": "fixed" | "auto", "auto": {...} | null},
      "prune": null | {"dropped": [token, …], "report": {...}},
      "blocking": [{"type": "lsh_bands", "bands": 13, "rows": 7, …}, …],
      "verifier": null | {"type": "fellegi_sunter", "state": {...}},
      "training": null | {"labels": "labels.csv", "sha256": "…", "pairs": 37, "matches": 12, "non_matches": 25}
    }

A model is applied only to the job it was fitted for: :func:`check_model`
compares the job's sections (normalizers, shingler, signature, blockers,
verifier parameters, mode, seed, exact duplicates, pruning; not the sources'
files, the output, the executor, the clusterer or a fixed threshold) and the
versions of the plugins of those components, and refuses a model with a
message listing what changed.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Learner
from er_framework.config.resolve import ComponentSpec, Job
from er_framework.engine.reprs import box, kv_table, weights_html
from er_framework.errors import ConfigError, InputError, Problem
from er_framework.io.safe_write import FileKind, write_text_file

__all__ = [
    "MODEL_FILE_KIND",
    "MODEL_FORMAT",
    "MODEL_VERSION",
    "Model",
    "ThresholdChoice",
    "check_model",
    "job_sections",
    "model_plugins",
    "sections_hash",
    "section_changes",
    "load_model",
    "model_text",
    "er_version",
]

MODEL_FORMAT = "er-framework model"
MODEL_VERSION = 1


def er_version() -> str:
    """The installed er-framework's version ("unknown" when run from a source tree)."""
    try:
        return metadata.version("er-framework")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold pairs are kept at: the job's number, or the one ``threshold: auto`` chose (with how)."""

    value: float
    chosen: str = "fixed"  # "fixed" | "auto"
    auto: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "chosen": self.chosen, "auto": self.auto}


def _component(spec: ComponentSpec, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    params = spec.params.model_dump(mode="json")
    return {"type": spec.cls.name, **{k: v for k, v in params.items() if k not in drop}}


def job_sections(job: Job) -> dict[str, Any]:
    """The settings of ``job`` that what it learns depends on, as plain JSON values with every default filled in.

    Left out, because a model applies across them: the sources' files (a model fitted on one extract
    applies to the next), the output, the executor, workers and memory settings, the clusterer (it runs
    after the model), a fixed threshold (the decision of the run applying the model), the training labels'
    file (what they taught is in the model) and the verifier's own ``threshold`` parameter.
    """
    spec = job.spec
    out: dict[str, Any] = {
        "mode": spec.mode,
        "seed": spec.seed,
        "threshold": "auto" if spec.threshold == "auto" else "fixed",
        "normalize": {name: [_component(s) for s in chain] for name, chain in sorted(job.normalizers.items())},
        "exact_duplicates": job.exact.model_dump(mode="json"),
        "prune_shingles": None if spec.prune_shingles is None else spec.prune_shingles.model_dump(mode="json"),
        "shingler": None if job.shingler is None else _component(job.shingler),
        "signature": None if job.signature is None else _component(job.signature),
        "blockers": [_component(b) for b in job.blockers],
        "verifier": _component(job.verifier, drop=("threshold",)),
    }
    if spec.threshold == "auto":
        auto = spec.auto_threshold
        out["auto_threshold"] = None if auto is None else auto.model_dump(mode="json")
    return out


def sections_hash(sections: Mapping[str, Any]) -> str:
    """sha256 of the sections' canonical JSON (sorted keys)."""
    blob = json.dumps(sections, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def model_plugins(job: Job) -> dict[str, dict[str, str]]:
    """``family:name`` -> the plugin, distribution and version that provided each component a model depends on."""
    specs: list[ComponentSpec | None] = [job.shingler, job.signature, *job.blockers, job.verifier]
    specs += [step for chain in job.normalizers.values() for step in chain]
    used: dict[str, dict[str, str]] = {}
    for spec in specs:
        if spec is None:
            continue
        info = job.registry.components[spec.family][spec.cls.name]
        used[f"{spec.family}:{spec.cls.name}"] = {
            "plugin": info.plugin.name,
            "distribution": info.plugin.distribution,
            "version": str(info.plugin.version),
        }
    return used


def section_changes(then: Any, now: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, one line each (``path: X in the model, Y in the job``)."""
    if isinstance(then, dict) and isinstance(now, dict):
        lines: list[str] = []
        for key in list(then) + [k for k in now if k not in then]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in now:
                lines.append(f"{sub}: {json.dumps(then[key])} in the model, absent from the job")
            elif key not in then:
                lines.append(f"{sub}: absent from the model, {json.dumps(now[key])} in the job")
            else:
                lines += section_changes(then[key], now[key], sub)
        return lines
    if isinstance(then, list) and isinstance(now, list) and len(then) == len(now):
        return [line for i, (a, b) in enumerate(zip(then, now)) for line in section_changes(a, b, f"{path}[{i}]")]
    if then != now:
        return [f"{path or 'job'}: {json.dumps(then)} in the model, {json.dumps(now)} in the job"]
    return []


@dataclass(frozen=True)
class Model:
    """What a job learned from its data (see the module docstring for the file format).

    ``pruned`` holds the shingles ``prune_shingles:`` dropped (sorted uint64), ``verifier`` the verifier's
    fitted state (``{"type": name, "state": {...}}``; :class:`~er_framework.capabilities.Fitted`), ``threshold``
    the threshold pairs are kept at. A part the job does not learn is ``None``. Build one with
    :meth:`for_job` and :meth:`learned`; it never changes.
    """

    job: dict[str, Any]
    plugins: dict[str, dict[str, str]]
    job_file: str | None = None
    threshold: ThresholdChoice | None = None
    pruned: npt.NDArray[np.uint64] | None = None
    prune_report: dict[str, Any] | None = None
    blocking: list[dict[str, Any]] = field(default_factory=list)
    verifier: dict[str, Any] | None = None
    training: dict[str, Any] | None = None
    fitted_on: dict[str, Any] = field(default_factory=dict)
    er_framework: str = field(default_factory=er_version)
    #: where the model came from: "fitted" (by this run) or the file it was loaded from
    origin: str = "fitted"

    @classmethod
    def for_job(cls, job: Job) -> Model:
        """An empty model of ``job``: nothing learned yet."""
        return cls(job=job_sections(job), plugins=model_plugins(job), job_file=str(job.config_path))

    def learned(self, **parts: Any) -> Model:
        """This model with ``parts`` (``threshold=``, ``pruned=``, ``verifier=`` …) set: a new value."""
        return replace(self, **parts)

    @property
    def job_hash(self) -> str:
        return sections_hash(self.job)

    @property
    def verifier_state(self) -> dict[str, Any] | None:
        """The verifier's fitted state, or None when it fitted nothing."""
        return None if self.verifier is None else dict(self.verifier.get("state") or {})

    # ---------------------------------------------------------------- the file

    def to_json(self) -> dict[str, Any]:
        """The model as the JSON document of ``model.json`` (see the module docstring): a copy, so that
        editing the document leaves the model as it is."""
        return copy.deepcopy(
            {
                "format": MODEL_FORMAT,
                "version": MODEL_VERSION,
                "er_framework": self.er_framework,
                "job": {"hash": self.job_hash, "file": self.job_file, "sections": self.job},
                "plugins": self.plugins,
                "fitted_on": self.fitted_on,
                "threshold": None if self.threshold is None else self.threshold.to_json(),
                "prune": None if self.pruned is None else {"dropped": [int(x) for x in self.pruned], "report": self.prune_report or {}},
                "blocking": self.blocking,
                "verifier": self.verifier,
                "training": self.training,
            }
        )

    @classmethod
    def from_json(cls, doc: Any, where: str) -> Model:
        """A model from its JSON document (copied: editing ``doc`` afterwards leaves the model as it is); an
        :class:`InputError` naming what is wrong otherwise."""
        doc = copy.deepcopy(doc)

        def bad(message: str, fix: str = "write it again with er train JOB --model FILE") -> InputError:
            return InputError(Problem(where=where, message=message, fix=fix))

        if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
            raise bad(
                'this is not an er-framework model file (no "format": "er-framework model")',
                "give the model.json that er train or er run wrote",
            )
        version = doc.get("version")
        if version != MODEL_VERSION:
            raise bad(f"model format version {version!r}; this er-framework reads version {MODEL_VERSION}")
        try:
            job = doc["job"]
            sections = job["sections"]
            if not isinstance(sections, dict):
                raise TypeError("job.sections is not an object")
            th = doc.get("threshold")
            threshold = (
                None
                if th is None
                else ThresholdChoice(value=float(th["value"]), chosen=str(th.get("chosen", "fixed")), auto=th.get("auto"))
            )
            prune = doc.get("prune")
            pruned = None
            if prune is not None:
                dropped = [int(x) for x in prune["dropped"]]
                if any(x < 0 or x >= 1 << 64 for x in dropped):
                    raise ValueError("a dropped shingle is not a 64-bit token")
                pruned = np.asarray(sorted(set(dropped)), dtype=np.uint64)
            verifier = doc.get("verifier")
            if verifier is not None and (not isinstance(verifier, dict) or not isinstance(verifier.get("state"), dict)):
                raise TypeError("verifier is not an object with a state")
            model = cls(
                job=sections,
                plugins=dict(doc.get("plugins") or {}),
                job_file=job.get("file"),
                threshold=threshold,
                pruned=pruned,
                prune_report=None if prune is None else dict(prune.get("report") or {}),
                blocking=list(doc.get("blocking") or []),
                verifier=verifier,
                training=doc.get("training"),
                fitted_on=dict(doc.get("fitted_on") or {}),
                er_framework=str(doc.get("er_framework", "unknown")),
                origin=where,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise bad(f"the model file is damaged or was edited by hand: {type(exc).__name__}: {exc}") from None
        if job.get("hash") not in (None, model.job_hash):
            raise bad("the model's job sections do not match its hash: the file was edited by hand or damaged")
        return model

    def save(self, path: str | Path, *, inputs: list[Path] | None = None) -> Path:
        """Write the model to ``path`` (atomically, through :func:`er_framework.io.safe_write.write_text_file`)."""
        return write_text_file(path, model_text(self), what="model file", inputs=inputs or [], kind=MODEL_FILE_KIND)

    @classmethod
    def load(cls, path: str | Path) -> Model:
        """A model saved by :meth:`save` (``er train``), or the ``model.json`` of a run's output folder."""
        return load_model(path)

    # ---------------------------------------------------------------- for people

    def __repr__(self) -> str:
        """One line: the verifier, what it was fitted on, the threshold, the job (never the fitted state)."""
        parts = [f"verifier {self.verifier.get('type')} fitted" if self.verifier is not None else "no fitted verifier"]
        if self.fitted_on.get("records") is not None:
            parts.append(f"on {self.fitted_on['records']:,} records")
        if self.threshold is not None:
            parts.append(f"threshold {self.threshold.value:g} ({self.threshold.chosen})")
        if self.pruned is not None:
            parts.append(f"{len(self.pruned):,} shingles pruned")
        parts.append(f"job {self.job_file or '?'}")
        if self.origin != "fitted":
            parts.append(f"from {self.origin}")
        return "<Model: " + ", ".join(parts) + ">"

    def _repr_html_(self) -> str:
        """A notebook's view: :meth:`summary`'s facts, then the weights table (m, u and the weight in bits of every
        field and level; :func:`~er_framework.engine.reprs.weights_html`)."""
        head = kv_table(self.facts())
        state = self.verifier_state
        body = weights_html(state) if state is not None else "<p>no fitted verifier state</p>"
        return box("er-framework model", head + body)

    def facts(self) -> list[tuple[str, str]]:
        """What the model holds, as (name, value) rows (its HTML view)."""
        out = [("job", self.job_file or "?"), ("er-framework", self.er_framework), ("origin", self.origin)]
        if self.fitted_on:
            out.append(("fitted on", ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in self.fitted_on.items() if isinstance(v, int))))
        if self.threshold is not None:
            out.append(("threshold", f"{self.threshold.value:g} ({self.threshold.chosen})"))
        if self.pruned is not None:
            out.append(("pruned shingles", f"{len(self.pruned):,}"))
        out += [(f"blocker {b.get('type')}", f"{b['bands']} bands x {b['rows']} rows") for b in self.blocking if "bands" in b]
        if self.verifier is not None:
            out.append(("verifier", str(self.verifier.get("type"))))
        if self.training is not None:
            out.append(("trained from", f"{self.training.get('pairs', 0)} labelled pairs"))
        return out

    def summary(self) -> str:
        """A few lines saying what the model holds."""
        lines = [f"model of {self.job_file or 'a job'} (er-framework {self.er_framework}, job hash {self.job_hash[:12]})"]
        if self.threshold is not None:
            lines.append(f"threshold           {self.threshold.value:g} ({self.threshold.chosen})")
        if self.pruned is not None:
            lines.append(f"pruned shingles     {len(self.pruned):,}")
        for b in self.blocking:
            if "bands" in b:
                lines.append(f"blocker {b.get('type')}: {b['bands']} bands x {b['rows']} rows")
        if self.verifier is not None:
            state = self.verifier.get("state") or {}
            lam = state.get("lambda")
            extra = f", lambda {lam:.4g}" if isinstance(lam, float) else ""
            lines.append(f"verifier {self.verifier.get('type')}: fitted{extra}")
        if self.training is not None:
            lines.append(f"trained from        {self.training.get('pairs', 0)} labelled pairs")
        return "\n".join(lines)


#: what an existing file must be for :meth:`Model.save` to replace it: a model er wrote (its first lines
#: name the format), never a data file, a job file or anything else that happens to have the name
MODEL_FILE_KIND = FileKind(
    description="an er model file (it does not start with the model format's name)",
    recognizes=lambda head: f'"format": "{MODEL_FORMAT}"'.encode() in head[:200],
)


def model_text(model: Model) -> str:
    """The JSON text of ``model.json`` (indented, sorted as written, newline at the end)."""
    return json.dumps(model.to_json(), indent=1, ensure_ascii=False) + "\n"


def load_model(path: str | Path) -> Model:
    """Read a model file; a clear error when it is missing, not JSON, or not a model."""
    p = Path(path)
    where = str(p)
    if p.is_dir() and (p / "model.json").is_file():
        p = p / "model.json"
        where = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            Problem(
                where=where,
                message="no such model file",
                fix="write one with er train JOB --model FILE (or use OUT/model.json of an er run)",
            )
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            Problem(where=where, message=f"cannot read the model file: {exc}", fix="give the model.json that er train or er run wrote")
        ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            Problem(
                where=f"{where}:{exc.lineno}",
                message=f"the model file is not JSON: {exc.msg}",
                fix="give the model.json that er train or er run wrote",
            )
        ) from None
    return Model.from_json(doc, where)


def _state_problems(model: Model, job: Job) -> list[str]:
    """The verifier's own check of the model's fitted state (a hand-edited or damaged file): what it says is
    wrong with it (:meth:`~er_framework.capabilities.Learner.state_report` raises ValueError), else nothing."""
    state = model.verifier_state
    if state is None:
        return []
    verifier = job.verifier.instantiate(job.context)
    if not isinstance(verifier, Learner):
        return []
    try:
        verifier.state_report(state)
    except (ValueError, KeyError, TypeError) as e:
        return [f"its fitted verifier state is damaged: {e}"]
    return []


def check_model(model: Model, job: Job) -> None:
    """Refuse ``model`` for ``job`` when the job's sections or its plugins' versions changed since the fit.

    The error lists every change (``verifier.fields[2].levels: [100, 90] in the model, [100, 85] in the job``)
    and says how to go on: undo the change, or fit again (``er train``).
    """
    problems: list[str] = section_changes(model.job, job_sections(job))
    now = model_plugins(job)
    for key in sorted(set(model.plugins) | set(now)):
        a, b = model.plugins.get(key), now.get(key)
        if a is None or b is None:
            continue  # a component added or removed shows in the sections
        if a.get("version") != b.get("version") or a.get("distribution") != b.get("distribution"):
            problems.append(
                f"plugin of {key}: {a.get('distribution')} {a.get('version')} fitted the model, "
                f"{b.get('distribution')} {b.get('version')} is installed"
            )
    if model.job.get("threshold") == "auto" and model.threshold is None:
        problems.append("threshold: auto, but the model holds no chosen threshold")
    if not problems:
        problems += _state_problems(model, job)
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise ConfigError(
            [
                Problem(
                    where=model.origin,
                    message=f"the model does not fit this job ({job.config_path.name}): " + line,
                    fix="undo the change, or fit the model again: er train JOB --model FILE",
                )
                for line in shown
            ]
        )
