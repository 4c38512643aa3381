"""Active labelling: each round of ``er review`` refits the model from every label so far and proposes new
pairs whose labels teach it most (:func:`propose`).

A round reads the job's records again (checked against the run's fingerprints), blocks them, reads the
labels file and fits the verifier twice through the verify stage: from every labelled pair (*after*) and
from the pairs labelled before the last labelled round (*before*; the unsupervised fit when those cannot be
learned from: none, or one kind only for a verifier that needs both). The proposals are chosen under the
*after* model, from three kinds (:mod:`er_framework.engine.active_select` says how each is ranked):

* ``uncertain``: candidates nearest the threshold (most of the round: 8 of 10);
* ``disagreement``: candidates the blockers, the model and the clusterer disagree on (1 of 10);
* ``near-miss``: pairs no blocker produced that share rare values (1 of 10);

a disagreement or a near-miss is proposed only when the refit model puts it as near the threshold as the
round's farthest uncertain pick (a pair far from the threshold teaches the model little: its label is what
the model already says); a kind with too few such pairs leaves its share to the others (uncertain first).
The shares were tuned on generated samples (``er synth inventors/persons --seed 1``), not on the shipped
configs (benchmarks/results/active-tune-*.md). No pair already in the labels file (labelled or
not, in either order) is proposed, and no record appears in two proposals of a round. Every choice is
ordered, ties broken by a hash of the pair and the job's seed: the same job, labels and seed give the same
proposals.

Only a trainable verifier (``fellegi_sunter``) learns from labels; another verifier's scores stay as they
are and its proposals still follow them. Labels of one kind only (all matches, or all non-matches) are
learned from as soon as they are labelled when the verifier can (``learns_from_one_kind``: ``fellegi_sunter``
with ``labels_fit: refine``, the default); for another trainable verifier the model stays the unsupervised
fit until both kinds are labelled (the rule a run applies: :func:`~er_framework.engine.stages.training.read_labels`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Trainable
from er_framework.capabilities import block as block_reported
from er_framework.config.resolve import Job
from er_framework.config.spec import TrainingSpec
from er_framework.data import Batch, LabelledPairs, Pairs, Records
from er_framework.engine.active_select import (
    ExpectedQuality,
    WeightChange,
    disagreements,
    distance_to_threshold,
    expected_quality,
    pair_keys,
    pick_spread,
    pick_uncertain,
    probe_pairs,
    tie_keys,
    weight_changes,
)
from er_framework.engine.engine import Engine
from er_framework.engine.explain import check_databases_unchanged, check_files_unchanged, row_of_terms
from er_framework.engine.log import StageLog
from er_framework.engine.model import Model
from er_framework.engine.stages.blocking import subtract_pairs
from er_framework.engine.stages.clustering import cluster
from er_framework.engine.stages.exact import Exact, exact_duplicates
from er_framework.engine.stages.reading import normalize, read
from er_framework.engine.stages.shingling import Shingled, prune_shingles, shingle_and_sign
from er_framework.engine.stages.training import (
    MATCH_WORDS,
    NON_MATCH_WORDS,
    ReadLabels,
    learns_from_one_kind,
    read_labels,
    record_rows,
    training_labels,
)
from er_framework.engine.stages.verification import Verified, verify
from er_framework.io.labels_file import LabelsFile, read_labels_file
from er_framework.io.outputs import read_report

__all__ = [
    "Missed",
    "DEFAULT_COUNT",
    "BlockedRound",
    "KIND_SHARES",
    "LabelledSoFar",
    "Proposal",
    "Proposals",
    "Refit",
    "block_round",
    "block_with_votes",
    "kind_quotas",
    "labelled_so_far",
    "propose",
]

Int64Array = npt.NDArray[np.int64]

#: pairs proposed in a round when the caller names no count
DEFAULT_COUNT = 20
#: each kind's share of a round: uncertain, disagreement, near-miss
KIND_SHARES = (("uncertain", 0.8), ("disagreement", 0.1), ("near-miss", 0.1))
#: how many of the nearest candidates per proposal are compared to spread the uncertain ones by pattern
SHORTLIST_PER_PROPOSAL = 25


@dataclass(frozen=True)
class Proposal:
    """One proposed pair: its records (global indices into :attr:`Proposals.records`), ids, score under the
    refitted model, why it was chosen (``reason``: uncertain / disagreement / near-miss, and ``detail``) and
    the verifier's terms of its score (empty when the verifier cannot explain it)."""

    left: int
    right: int
    left_source: str
    left_id: str
    right_source: str
    right_id: str
    score: float
    reason: str
    detail: str
    candidate: bool
    terms: dict[str, Any] = field(default_factory=dict)

    def row(self, round_number: int, threshold: float) -> dict[str, Any]:
        """The labels file row of the proposal (its ``match`` empty, to fill in)."""
        return {
            "left_source": self.left_source,
            "left_id": self.left_id,
            "right_source": self.right_source,
            "right_id": self.right_id,
            "score": f"{self.score:.6f}",
            "side": "above" if self.score >= threshold else "below",
            "reason": self.reason,
            "round": str(round_number),
            "match": "",
        }


@dataclass(frozen=True)
class Refit:
    """A fit of the verifier from some of the labels: the model, the expected quality of its decisions
    (None when its scores are not match probabilities) and how many labelled pairs it learned from."""

    model: Model
    threshold: float
    expected: ExpectedQuality | None
    matches: int
    non_matches: int


@dataclass(frozen=True)
class LabelledSoFar:
    """What the labels file holds: every pair in it (labelled or not), the labels' counts, the round each
    labelled pair was proposed in (0: no round column), and the next round's number."""

    keys: set[tuple[str, str, str, str]]
    rounds: dict[tuple[str, str, str, str], int]
    matches: int
    non_matches: int
    next_round: int


@dataclass(frozen=True)
class Missed:
    """What the near-miss probe says of blocking: how many pairs no blocker produced it scored (the pairs
    sharing the rarest values), how many of them the refit model puts at or above the threshold (pairs the
    blockers may lose), and the best of those (at most :data:`MISSED_SHOWN`, proposed or not)."""

    probed: int
    matched: int
    examples: list[Proposal]


#: how many of the near-misses the model matches a round names
MISSED_SHOWN = 3


@dataclass(frozen=True)
class Proposals:
    """A round of active labelling (:func:`propose`)."""

    rows: list[Proposal]
    round: int
    threshold: float
    #: the fits from the labels before the last labelled round, and from all of them
    before: Refit
    after: Refit
    #: every level's weight in both fits, largest change first (a verifier with per-level weights)
    weights: list[WeightChange]
    labelled: LabelledSoFar
    #: the records as read (the fields a person recognizes) and as compared (normalized)
    records: Records
    compared: Records
    described: dict[str, Any]
    notes: list[str]
    candidates: int
    trainable: bool
    #: whether the verifier learns from labels of one kind only (else it needs both before it refits)
    one_kind: bool = False
    #: the near-miss probe's pairs that the model matches (what blocking may lose)
    missed: Missed | None = None

    def label_rows(self) -> list[dict[str, Any]]:
        """The rows to add to the labels file."""
        return [p.row(self.round, self.threshold) for p in self.rows]


def kind_quotas(count: int) -> dict[str, int]:
    """How many of ``count`` proposals each kind gets first (:data:`KIND_SHARES`; rounding to uncertain)."""
    quotas = {kind: int(math.floor(count * share)) for kind, share in KIND_SHARES}
    quotas["uncertain"] += count - sum(quotas.values())
    return quotas


def _key(row: Mapping[str, str]) -> tuple[str, str, str, str]:
    return (str(row.get("left_source", "")), str(row.get("left_id", "")), str(row.get("right_source", "")), str(row.get("right_id", "")))


def _round_of(text: str) -> int:
    try:
        return max(int(str(text).strip() or 0), 0)
    except ValueError:
        return 0


def labelled_so_far(path: Path) -> LabelledSoFar:
    """What the labels file ``path`` holds (nothing when it does not exist yet); its problems as InputError."""
    labels = read_labels_file(path, fix="give another --labels file", allow_empty=True) if path.exists() else LabelsFile()
    keys: set[tuple[str, str, str, str]] = set()
    rounds: dict[tuple[str, str, str, str], int] = {}
    matches = non_matches = last = 0
    for row in labels.records():
        key = _key(row)
        keys.update((key, (key[2], key[3], key[0], key[1])))
        r = _round_of(row.get("round", ""))
        last = max(last, r)
        word = str(row.get("match", "")).strip().lower()
        if word in MATCH_WORDS or word in NON_MATCH_WORDS:
            rounds[key] = r
            matches += word in MATCH_WORDS
            non_matches += word in NON_MATCH_WORDS
    return LabelledSoFar(keys, rounds, matches, non_matches, last + 1)


def block_with_votes(engine: Engine, batch: Batch, exact: Exact) -> tuple[Pairs, Int64Array]:
    """The block stage's candidates (global indices, normalized, exact pairs removed: those of
    :func:`~er_framework.engine.stages.blocking.block`) and how many blockers produced each."""
    parts = [engine.checked_candidates(b, block_reported(b, batch).pairs, batch) for b in engine.blockers]
    local = parts[0] if len(parts) == 1 else Pairs.union(parts)
    n = len(batch)
    union_keys = pair_keys(local.left, local.right, n)
    votes = np.zeros(len(local), dtype=np.int64)
    for p in parts:
        votes[np.searchsorted(union_keys, pair_keys(p.left, p.right, n))] += 1
    active = exact.active
    candidates = Pairs(active[local.left], active[local.right])
    kept = subtract_pairs(candidates, exact.pairs)
    if len(kept) == len(candidates):
        return candidates, votes
    total = int(max(len(active), int(active[-1]) + 1 if len(active) else 0))
    inside = np.isin(pair_keys(candidates.left, candidates.right, total), pair_keys(kept.left, kept.right, total))
    return kept, votes[inside]


@dataclass
class BlockedRound:
    """The stages of a round up to the candidates (:func:`block_round`)."""

    engine: Engine
    exact: Exact
    batch: Batch
    shingled: Shingled
    candidates: Pairs
    votes: Int64Array


def block_round(job: Job, records: Records, log: StageLog) -> BlockedRound:
    """Exact duplicates, pruning, shingling and blocking of the normalized ``records``, as a run does them."""
    engine = Engine(job)
    exact = exact_duplicates(job, records)
    sub = records.take(exact.active) if len(exact.active) != len(records) else records
    batch = Batch(records=sub, active=exact.active, cross_source_only=engine.link, seed=job.context.seed)
    engine, pruning = prune_shingles(engine, sub, log)
    shingled = shingle_and_sign(engine, sub, batch, log, pruning)
    candidates, votes = block_with_votes(engine, batch, exact)
    return BlockedRound(engine, exact, batch, shingled, candidates, votes)


def _labels_job(job: Job, path: Path) -> Job:
    """``job`` training from the labels file ``path``."""
    prior = job.spec.training.prior if job.spec.training is not None else "em"
    spec = job.spec.model_copy(update={"training": TrainingSpec(labels=str(path), prior=prior)})
    return replace(job, spec=spec)


def _subset(read_: ReadLabels, keep: npt.NDArray[np.bool_], one_kind: bool) -> ReadLabels | None:
    """The labels ``keep`` selects, or None when they cannot be learned from: none, or (unless ``one_kind``)
    no match or no non-match."""
    match = read_.match[keep]
    if not _learnable(int(match.sum()), int((~match).sum()), one_kind):
        return None
    return ReadLabels(read_.left[keep], read_.right[keep], match, dict(read_.stats))


def _fit(blocked: BlockedRound, records: Records, job: Job, labels: ReadLabels | None, log: StageLog) -> tuple[Verified, Refit]:
    """The verify stage with ``labels`` (None: unsupervised) and the fit it made."""
    labelled: LabelledPairs | None = None
    training: dict[str, Any] = {}
    if labels is not None:
        labelled, training = training_labels(job, records, blocked.exact, labels)
    ver = verify(blocked.engine, blocked.batch, blocked.candidates, blocked.exact, blocked.shingled, len(records), log, labelled)
    engine = ver.engine
    model = engine.run_model(records, len(blocked.candidates), training)
    probability = engine.verifier_state() is not None and "lambda" in (engine.verifier_state() or {})
    expected = expected_quality(ver.scores, engine.threshold) if probability else None
    matches = int(labels.match.sum()) if labels is not None else 0
    non_matches = int((~labels.match).sum()) if labels is not None else 0
    return ver, Refit(model, engine.threshold, expected, matches, non_matches)


def _learnable(matches: int, non_matches: int, one_kind: bool) -> bool:
    """Whether labels of these counts can be learned from: at least one, and both kinds unless ``one_kind``."""
    return matches + non_matches > 0 and (one_kind or (matches > 0 and non_matches > 0))


def _refits(
    job: Job, blocked: BlockedRound, records: Records, path: Path, so_far: LabelledSoFar, log: StageLog
) -> tuple[Verified, Refit, Refit, list[str]]:
    """The *after* fit (every label) with its verify stage, the *before* fit, and notes on what was fitted."""
    notes: list[str] = []
    trainable = isinstance(blocked.engine.verifier, Trainable)
    one_kind = learns_from_one_kind(blocked.engine.verifier)
    if not trainable or not _learnable(so_far.matches, so_far.non_matches, one_kind):
        if trainable and so_far.matches + so_far.non_matches:
            notes.append(
                f"the labels hold {so_far.matches} matches and {so_far.non_matches} non-matches: the verifier learns from "
                "labels once both kinds are labelled, until then the model is the unsupervised fit"
            )
        ver, fit = _fit(blocked, records, job, None, log)
        return ver, fit, fit, notes
    labels_job = _labels_job(job, path)
    read_ = read_labels(labels_job, records, one_kind=one_kind)
    ids, names = records.ids, records.source_names
    key_of = [
        (names[int(records.source[a])], str(ids[a]), names[int(records.source[b])], str(ids[b]))
        for a, b in zip(read_.left.tolist(), read_.right.tolist())
    ]
    round_of = [so_far.rounds.get(k, so_far.rounds.get((k[2], k[3], k[0], k[1]), 0)) for k in key_of]
    last = max(round_of) if round_of else 0
    earlier = _subset(read_, np.asarray([r < last for r in round_of], dtype=bool), one_kind) if last > 0 else None
    ver, after = _fit(blocked, records, labels_job, read_, log)
    before = _fit(blocked, records, labels_job, earlier, log)[1]
    return ver, before, after, notes


def _excluded(records: Records, so_far: LabelledSoFar, n: int) -> Int64Array:
    """The pair keys of every pair of the labels file (records no source holds are left out)."""
    wanted = {(k[0], k[1]) for k in so_far.keys} | {(k[2], k[3]) for k in so_far.keys}
    index = record_rows(records, wanted)
    found = [(index[(k[0], k[1])], index[(k[2], k[3])]) for k in so_far.keys if (k[0], k[1]) in index and (k[2], k[3]) in index]
    if not found:
        return np.zeros(0, dtype=np.int64)
    arr = np.asarray(found, dtype=np.int64)
    return np.unique(pair_keys(arr[:, 0], arr[:, 1], n))


@dataclass
class _Pool:
    """The pairs a round chooses from (global indices) and what it knows of them."""

    left: Int64Array
    right: Int64Array
    scores: npt.NDArray[np.float64]
    ties: npt.NDArray[np.uint64]
    used: set[int] = field(default_factory=set)
    chosen: list[tuple[int, str, str]] = field(default_factory=list)  # (position, reason, detail)


def _patterns(engine: Engine, compared: Records, left: Int64Array, right: Int64Array) -> list[Any] | None:
    """Each pair's comparison pattern (the verifier's levels), or None when the verifier gives none."""
    terms = _terms(engine, compared, left, right)
    levels = [k for k in terms if k.startswith("level_")]
    if not levels:
        return None
    return list(zip(*(np.asarray(terms[k]).tolist() for k in levels)))


def _terms(engine: Engine, compared: Records, left: Int64Array, right: Int64Array) -> dict[str, npt.NDArray[Any]]:
    """The verifier's terms of the pairs (global indices of ``compared``), on a small batch of their records."""
    if not len(left):
        return {}
    involved, inverse = np.unique(np.concatenate([left, right]), return_inverse=True)
    batch = engine.batch(compared.take(involved), tokens="tokens" in engine.verifier.needs, signatures=False)
    local = Pairs(inverse[: len(left)].astype(np.int64), inverse[len(left) :].astype(np.int64))
    return engine.comparisons(batch, local)


def _scores(engine: Engine, compared: Records, left: Int64Array, right: Int64Array) -> npt.NDArray[np.float64]:
    """The model's scores of any pairs (global indices of ``compared``), on a small batch of their records."""
    if not len(left):
        return np.zeros(0)
    involved, inverse = np.unique(np.concatenate([left, right]), return_inverse=True)
    needs = engine.verifier.needs
    batch = engine.batch(compared.take(involved), tokens="tokens" in needs, signatures="signatures" in needs)
    local = Pairs(inverse[: len(left)].astype(np.int64), inverse[len(left) :].astype(np.int64))
    return engine.score_batch(batch, local)


def _take_uncertain(pool: _Pool, engine: Engine, compared: Records, count: int, probability: bool) -> None:
    if count <= 0 or not len(pool.left):
        return
    distance = distance_to_threshold(pool.scores, engine.threshold, probability)
    short = np.lexsort((pool.ties, distance))[: max(count * SHORTLIST_PER_PROPOSAL, 50)].astype(np.int64)
    patterns = _patterns(engine, compared, pool.left[short], pool.right[short])
    at = pick_uncertain(
        distance[short], engine.keep(pool.scores[short]), pool.ties[short], pool.left[short], pool.right[short], count, pool.used, patterns
    )
    pool.chosen += [(int(short[i]), "uncertain", "the model is least sure of it") for i in at]


def _take_disagreements(
    pool: _Pool, engine: Engine, votes: Int64Array | None, same: npt.NDArray[np.bool_] | None, count: int, allowed: npt.NDArray[np.bool_]
) -> None:
    """Up to ``count`` disagreements among the ``allowed`` pairs of the pool, round robin over their kinds."""
    if count <= 0:
        return
    kinds = disagreements(pool.scores, engine.keep(pool.scores), votes, len(engine.blockers), same, pool.ties)
    kinds = [(what, order[allowed[order]]) for what, order in kinds]
    picked = [(what, pick_spread(order, pool.left, pool.right, count, set(pool.used))) for what, order in kinds]
    taken = 0
    for k in range(count):  # round robin over the kinds
        for what, at in picked:
            if taken < count and k < len(at) and not ({int(pool.left[at[k]]), int(pool.right[at[k]])} & pool.used):
                pool.chosen.append((at[k], "disagreement", what))
                pool.used.update((int(pool.left[at[k]]), int(pool.right[at[k]])))
                taken += 1


def _near_misses(
    engine: Engine, compared: Records, exact: Exact, candidates: Int64Array, excluded: Int64Array, seed: int, count: int
) -> _Pool:
    """Pairs of active records no blocker produced, sharing rare values, scored by the model: the best by
    probe, ordered by the model's score (the clearest losses first)."""
    active = exact.active
    sub = compared.take(active) if len(active) != len(compared) else compared
    left, right, _probe = probe_pairs(sub.fields, np.asarray(sub.source), engine.link, seed)
    left, right = active[left], active[right]
    n = len(compared)
    keys = pair_keys(left, right, n)
    fresh = ~np.isin(keys, candidates) & ~np.isin(keys, excluded) & ~np.isin(keys, pair_keys(exact.pairs.left, exact.pairs.right, n))
    top = np.flatnonzero(fresh)[: max(count * SHORTLIST_PER_PROPOSAL, 50)]
    left, right, keys = left[top], right[top], keys[top]
    scores = _scores(engine, compared, left, right)
    ties = tie_keys(keys, seed)
    order = np.lexsort((ties, -scores))
    return _Pool(left[order], right[order], scores[order], ties[order])


def _same_cluster(engine: Engine, ver: Verified, records: Records, candidates: Pairs) -> npt.NDArray[np.bool_]:
    labels = cluster(engine, len(records), ver.pairs, records.source)
    return np.asarray(labels[candidates.left] == labels[candidates.right], dtype=bool)


def _proposal(compared: Records, pool: _Pool, chosen: tuple[int, str, str], candidate: bool) -> Proposal:
    i, reason, detail = chosen
    left, right, score = int(pool.left[i]), int(pool.right[i]), float(pool.scores[i])
    names, ids, src = compared.source_names, compared.ids, compared.source
    return Proposal(
        left, right, names[int(src[left])], str(ids[left]), names[int(src[right])], str(ids[right]), float(score), reason, detail, candidate
    )


def _with_terms(engine: Engine, compared: Records, rows: list[Proposal]) -> list[Proposal]:
    left = np.asarray([p.left for p in rows], dtype=np.int64)
    right = np.asarray([p.right for p in rows], dtype=np.int64)
    terms = _terms(engine, compared, left, right)
    if not terms:
        return rows
    return [replace(p, terms=row_of_terms(terms, i)) for i, p in enumerate(rows)]


def _near(distance: npt.NDArray[np.float64], cutoff: float) -> npt.NDArray[np.bool_]:
    """The pairs at most ``cutoff`` from the threshold (the round's farthest uncertain pick)."""
    return np.asarray(distance <= cutoff, dtype=bool)


def _missed(engine: Engine, compared: Records, near: _Pool) -> Missed:
    """The probed near-misses the model scores at or above the threshold (:class:`Missed`); ``near`` is
    ordered by score, best first."""
    at_or_above = np.flatnonzero(near.scores >= engine.threshold)
    shown = [
        _proposal(compared, near, (int(i), "near-miss", "the model matches it; no blocker produced it"), False)
        for i in at_or_above[:MISSED_SHOWN]
    ]
    return Missed(probed=len(near.scores), matched=len(at_or_above), examples=shown)


def _choose(
    job: Job, blocked: BlockedRound, ver: Verified, compared: Records, so_far: LabelledSoFar, count: int, seed: int
) -> tuple[list[Proposal], Missed]:
    """The round's proposals: uncertain pairs up to their quota; disagreements and near-misses up to theirs,
    only those as near the threshold as the round's farthest uncertain pick; then the shortfall from the
    others in the same order. With them, what the near-miss probe says of blocking (:func:`_missed`)."""
    engine = ver.engine
    n = len(compared)
    cand = blocked.candidates
    keys = pair_keys(cand.left, cand.right, n)
    excluded = _excluded(compared, so_far, n)
    free = ~np.isin(keys, excluded)
    pool = _Pool(cand.left[free], cand.right[free], ver.scores[free], tie_keys(keys[free], seed))
    probability = "lambda" in (engine.verifier_state() or {})
    votes = blocked.votes[free]
    same = _same_cluster(engine, ver, compared, cand)[free]
    near = _near_misses(engine, compared, blocked.exact, keys, excluded, seed, count)
    near.used = pool.used
    distance = distance_to_threshold(pool.scores, engine.threshold, probability)
    near_distance = distance_to_threshold(near.scores, engine.threshold, probability)

    def room(cap: int) -> int:
        return max(min(cap, count - len(pool.chosen) - len(near.chosen)), 0)

    quotas = kind_quotas(count)
    for fill in (False, True):  # each kind up to its quota, then the shortfall from the others in the same order
        _take_uncertain(pool, engine, compared, room(count if fill else quotas["uncertain"]), probability)
        cutoff = max((float(distance[c[0]]) for c in pool.chosen if c[1] == "uncertain"), default=math.inf)
        _take_disagreements(pool, engine, votes, same, room(count if fill else quotas["disagreement"]), _near(distance, cutoff))
        ok = np.flatnonzero(_near(near_distance, cutoff)).astype(np.int64)
        at = pick_spread(ok, near.left, near.right, room(count if fill else quotas["near-miss"]), near.used)
        near.chosen += [(i, "near-miss", "no blocker produced it; it shares rare values") for i in at]
    rows = [_proposal(compared, pool, c, True) for c in pool.chosen] + [_proposal(compared, near, c, False) for c in near.chosen]
    return _with_terms(engine, compared, rows), _missed(engine, compared, near)


def propose(
    job: Job,
    out_dir: str | Path,
    labels_path: str | Path,
    count: int = DEFAULT_COUNT,
    *,
    report: Mapping[str, Any] | None = None,
    allow_changed: bool = False,
) -> Proposals:
    """One round of active labelling for the run in ``out_dir`` of ``job``: the model refitted from every
    label of ``labels_path`` (a labels file; it may not exist yet), and ``count`` new pairs to label.

    The sources are read again, refused when they changed since the run (its report.json's fingerprints;
    ``allow_changed``: read as they are now, with a note). Nothing is written: the caller adds
    :meth:`Proposals.label_rows` to the labels file."""
    if count < 1:
        raise ValueError(f"count {count}: propose at least one pair")
    if report is None:
        report = read_report(out_dir)
    notes = check_files_unchanged(report, job, allow_changed=allow_changed)
    as_read, read_stats = read(job)
    notes += check_databases_unchanged(report, job, read_stats, allow_changed=allow_changed)
    compared, _stats = normalize(job, as_read, job.context.workers)
    path = Path(labels_path)
    so_far = labelled_so_far(path)
    log = StageLog()
    blocked = block_round(job, compared, log)
    ver, before, after, fit_notes = _refits(job, blocked, compared, path, so_far, log)
    seed = int(job.spec.seed) * 1_000_003 + so_far.next_round
    rows, missed = _choose(job, blocked, ver, compared, so_far, count, seed)
    described = dict(report.get("verifier") or {})
    return Proposals(
        rows=rows,
        round=so_far.next_round,
        threshold=ver.engine.threshold,
        before=before,
        after=after,
        weights=weight_changes(before.model.verifier_state, after.model.verifier_state),
        labelled=so_far,
        records=as_read,
        compared=compared,
        described=described,
        notes=notes + fit_notes,
        candidates=len(blocked.candidates),
        trainable=isinstance(blocked.engine.verifier, Trainable),
        one_kind=learns_from_one_kind(blocked.engine.verifier),
        missed=missed,
    )
