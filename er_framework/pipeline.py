"""Runs the stages of a job. No maths here: kernels and components do the work.

    sources -> exact duplicates -> shingler -> signatures -> blockers
            -> verifier -> clusterer -> outputs

Record indices are global (all sources concatenated, in source order). The
exact-duplicate stage may collapse copies onto one representative; the later
stages then see only the *active* records, and their pairs are mapped back
to global indices.
"""

from __future__ import annotations

import platform
import sys
import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import numpy.typing as npt

from .cluster import canonical_labels
from .components import Blocker, Clusterer, Shingler, SignatureBuilder, Verifier
from .config import ComponentSpec, Job
from .data import Batch, Pairs, Records, Signatures, TokenSets
from .errors import ErError, InputError, Problem
from .io import read_source_with_stats, write_outputs
from .memory import peak_rss_mb, reset_peak_rss
from .normalize import normalize_column_with_stats
from .kernels import group_sorted, hash_strings, pairs_in_groups
from .kernels.groups import sorted_unique
from .parallel import split_sizes

Int64Array = npt.NDArray[np.int64]

STAGES = ["read", "normalize", "exact_duplicates", "shingle", "signatures", "block", "diagnostics", "verify", "cluster", "write"]


@dataclass
class StageLog:
    """Seconds and peak memory per stage, with an optional progress display."""

    progress: Callable[[str], None] | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    overall_peak_mb: float = 0.0

    @contextmanager
    def stage(self, name: str) -> Iterator[dict[str, Any]]:
        if self.progress is not None:
            self.progress(name)
        info: dict[str, Any] = {"stage": name}
        self.overall_peak_mb = max(self.overall_peak_mb, peak_rss_mb())
        per_stage = reset_peak_rss()
        t0 = time.perf_counter()
        yield info
        info["seconds"] = round(time.perf_counter() - t0, 4)
        info["peak_rss_mb"] = peak_rss_mb()
        info["peak_rss_scope"] = "stage" if per_stage else "process so far"
        self.overall_peak_mb = max(self.overall_peak_mb, info["peak_rss_mb"])
        self.stages.append(info)

    @contextmanager
    def interleaved(self, names: list[str]) -> Iterator[Callable[[str], Any]]:
        """Stages that alternate chunk by chunk (shingle, signatures, shingle, …).

        Yields ``timer(name)``, a context manager adding its wall time to stage
        ``name``; on exit one entry per stage is logged, in ``names`` order.
        Peak memory is measured over all of them together.
        """
        if self.progress is not None:
            self.progress("+".join(names))
        self.overall_peak_mb = max(self.overall_peak_mb, peak_rss_mb())
        per_stage = reset_peak_rss()
        infos = {name: {"stage": name, "seconds": 0.0} for name in names}

        @contextmanager
        def timer(name: str) -> Iterator[None]:
            t0 = time.perf_counter()
            yield
            infos[name]["seconds"] += time.perf_counter() - t0

        yield timer
        peak = peak_rss_mb()
        for name in names:
            info = infos[name]
            info["seconds"] = round(info["seconds"], 4)
            info["peak_rss_mb"] = peak
            info["peak_rss_scope"] = ("stages " + "+".join(names)) if per_stage else "process so far"
            self.stages.append(info)
        self.overall_peak_mb = max(self.overall_peak_mb, peak)


@dataclass
class Shingled:
    """What the streamed shingle/signature stages produced."""

    sizes: Int64Array
    tokens: TokenSets | None
    signatures: Signatures | None
    chunks: int


def _shingle_and_sign(
    records: Records,
    shingler: Shingler | None,
    builder: SignatureBuilder | None,
    keep: str,
    chunk_records: int,
    token_memory_mb: float,
    log: StageLog,
) -> Shingled:
    """Token sets and signatures of ``records``, ``chunk_records`` records at a time.

    Components see whole chunks (never one record); token sets and
    signatures are per record, so the result does not depend on the chunk
    size. ``keep`` says what happens to the token sets once a chunk is
    signed: ``"all"`` keeps them (a blocker reads them), ``"budget"`` keeps
    them while they fit in ``token_memory_mb`` and otherwise drops them all
    (later stages then recompute the token sets of the records they need),
    so peak memory is about the budget plus one chunk; ``"none"`` signs the
    shingler's multisets (no per-row sort; the builder declared
    ``multiset_ok``) and keeps nothing.
    """
    names = (["shingle"] if shingler is not None else []) + (["signatures"] if builder is not None else [])
    n = len(records)
    if shingler is None:
        for name in ["shingle", "signatures"]:  # logged as skipped
            with log.stage(name):
                pass
        return Shingled(np.zeros(0, dtype=np.int64), None, None, 0)
    bounds = list(range(0, n, chunk_records)) + [n] if n else [0, 0]
    # kept token sets are appended to one buffer: np.empty reserves address
    # space only, pages become resident as they are written (no 2x concat)
    cap = int(token_memory_mb * 2**20) // 8 if keep == "budget" else 0
    buffer: npt.NDArray[Any] | None = np.empty(cap, dtype=np.uint64) if cap else None
    used = 0
    token_parts: list[TokenSets] = []
    sig_parts: list[Signatures] = []
    sizes: list[Int64Array] = []
    kept = keep in ("all", "budget")
    with log.interleaved(names) as timer:
        for a, b in zip(bounds[:-1], bounds[1:]):  # one step per chunk of records
            part = records if (a, b) == (0, n) else records.take(np.arange(a, b, dtype=np.int64))
            with timer("shingle"):
                tokens = shingler.shingle_multiset(part) if keep == "none" else shingler.shingle(part)
            sizes.append(tokens.sizes)
            if builder is not None:
                with timer("signatures"):
                    sig_parts.append(builder.build(tokens))
            if keep == "all":
                token_parts.append(tokens)
            elif kept and buffer is not None and used + len(tokens.tokens) <= cap and tokens.tokens.dtype == np.uint64:
                buffer[used : used + len(tokens.tokens)] = tokens.tokens
                used += len(tokens.tokens)
            elif kept:
                kept, buffer = False, None  # over budget: stream from here on
            del tokens
    if builder is None:
        with log.stage("signatures"):
            pass
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    token_sets: TokenSets | None = None
    if keep == "all":
        token_sets = token_parts[0] if len(token_parts) == 1 else TokenSets.concat(token_parts)
    elif kept and buffer is not None:
        indptr = np.zeros(len(all_sizes) + 1, dtype=np.int64)
        np.cumsum(all_sizes, out=indptr[1:])
        token_sets = TokenSets(indptr, buffer[:used])
    return Shingled(
        sizes=all_sizes,
        tokens=token_sets,
        signatures=(sig_parts[0] if len(sig_parts) == 1 else Signatures.concat(sig_parts)) if builder is not None else None,
        chunks=len(bounds) - 1,
    )


@dataclass
class Result:
    """Everything a run produced (in memory), plus where it was written."""

    records: Records
    pairs: Pairs  # verified, global indices, scored, normalized
    labels: Int64Array  # canonical cluster id per record
    report: dict[str, Any]
    outputs: dict[str, Path] = field(default_factory=dict)
    #: every candidate pair of the blockers (global indices) with its verifier score
    candidates: Pairs | None = None

    def summary(self) -> str:
        r = self.report
        lines = [
            f"records read      {r['records']['total']:>12,}",
            f"exact duplicates  {r['exact_duplicates']['records_collapsed']:>12,}",
            f"candidate pairs   {r['candidate_pairs']:>12,}",
            f"verified pairs    {r['verified_pairs']:>12,}",
            f"clusters          {r['clusters']['count']:>12,}  "
            f"(largest {r['clusters']['largest']}, singletons {r['clusters']['singletons']:,})",
            f"seconds           {r['seconds_total']:>12.2f}  peak memory {r['peak_rss_mb']:.0f} MB",
        ]
        link = r.get("link")
        if link:
            a, b = link["sources"][0], link["sources"][-1]
            lines.append(
                f"{b} records matched to {a}: {link['matched'][b]:,} of {r['records']['per_source'][b]:,} "
                f"(score >= {link['threshold']:g}, after clustering)"
            )
        for name, path in self.outputs.items():
            lines.append(f"wrote {path}")
        return "\n".join(lines)


#: smallest token budget of a verification block, MB
VERIFY_MIN_MB = 64


def _score_streamed(
    verifier: Verifier, batch: Batch, pairs: Pairs, sizes: Int64Array, token_memory_mb: float
) -> tuple[npt.NDArray[np.float64], int, int]:
    """Scores of ``pairs`` with token sets recomputed per block of pairs: (scores, records shingled, blocks).

    A pair costs the token counts of its two records (``sizes``, an upper
    bound of the set sizes); blocks hold about ``token_memory_mb`` of tokens
    (at least one pair; at least :data:`VERIFY_MIN_MB`, so that a zero budget,
    which keeps no token sets after signing, still verifies in large blocks).
    Each pair is scored exactly once, with the same
    token sets as without blocks, so the scores do not depend on the budget.
    """
    budget = int(max(token_memory_mb, VERIFY_MIN_MB) * 2**20) // 8
    cost = sizes[pairs.left] + sizes[pairs.right] + 2
    scores = np.empty(len(pairs), dtype=np.float64)
    shingled = 0
    blocks = split_sizes(cost, budget)
    for a, b in blocks:  # one step per block of pairs
        left, right = pairs.left[a:b], pairs.right[a:b]
        involved = sorted_unique(np.concatenate([left, right]))
        shingled += len(involved)
        scores[a:b] = np.asarray(
            verifier.score(
                batch.subset(involved), Pairs(np.searchsorted(involved, left), np.searchsorted(involved, right))
            ),
            dtype=np.float64,
        )
    return scores, shingled, len(blocks)


#: below this many values (all normalized fields together) normalizers run in this process
PARALLEL_NORMALIZE_MIN_VALUES = 200_000


def normalize_fields(
    records: Records, spec: dict[str, Any], workers: int
) -> dict[str, tuple[list[str | None], dict[str, Any]]]:
    """Every field of ``spec`` through its normalizers: ``{field: (values, stats)}``.

    Normalizers are Python per distinct value (they hold the GIL), so on large
    inputs the fields are spread over ``workers`` forked processes, one task
    per field; each field's result is the same function's, wherever it ran.
    """
    fields = list(spec)
    total = sum(len(records.fields[f]) for f in fields)
    if workers <= 1 or len(fields) <= 1 or total < PARALLEL_NORMALIZE_MIN_VALUES:
        return {f: normalize_column_with_stats(records.fields[f], spec[f]) for f in fields}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(workers, len(fields)), mp_context=ctx) as pool:
        futures = {f: pool.submit(normalize_column_with_stats, records.fields[f], spec[f]) for f in fields}
        return {f: futures[f].result() for f in fields}


def link_answer(
    records: Records, candidates: Pairs, scores: npt.NDArray[np.float64], labels: Int64Array, threshold: float
) -> dict[str, Any]:
    """Link modes: how many records of each source matched another source.

    ``matched`` counts, after clustering, the records of each source whose
    cluster holds a record of another source (with ``one_to_one`` that is the
    number of matched pairs). ``by_threshold`` counts, from the scored
    candidates before clustering, the records of each source having at least
    one cross-source pair at or above each threshold (the chosen one and a
    few around it); ``score_histogram`` is the distribution of the
    cross-source candidate scores.
    """
    names = records.source_names
    src = records.source
    n_src = len(names)
    # clusters holding records of more than one source
    order = np.lexsort((src, labels))
    lab, s_sorted = labels[order], src[order]
    first = np.ones(len(lab), dtype=bool)
    first[1:] = (lab[1:] != lab[:-1]) | (s_sorted[1:] != s_sorted[:-1])
    sources_per_cluster = np.bincount(lab[first], minlength=int(labels.max()) + 1 if len(labels) else 0)
    mixed = sources_per_cluster[labels] > 1 if len(labels) else np.zeros(0, dtype=bool)
    matched = {names[i]: int((mixed & (src == i)).sum()) for i in range(n_src)}

    cross = src[candidates.left] != src[candidates.right]
    left, right, sc = candidates.left[cross], candidates.right[cross], scores[cross]
    finite = sc[np.isfinite(sc)]
    hi = float(finite.max()) if len(finite) else threshold
    grid = sorted({round(threshold * f, 6) for f in (0.8, 0.9, 1.0, 1.05, 1.1)} | {round(threshold, 6)})
    grid = [t for t in grid if t <= max(hi, threshold)]
    by_threshold = []
    for t in grid:
        keep = sc >= t
        lk, rk = left[keep], right[keep]
        row: dict[str, Any] = {"threshold": t, "pairs": int(keep.sum())}
        for i in range(n_src):
            row[names[i]] = int(len(sorted_unique(np.concatenate([lk[src[lk] == i], rk[src[rk] == i]]))))
        by_threshold.append(row)
    lo = float(finite.min()) if len(finite) else 0.0
    counts, edges = np.histogram(finite, bins=20, range=(min(lo, threshold), max(hi, threshold))) if len(finite) else (np.zeros(0), np.zeros(0))
    return {
        "sources": names,
        "threshold": threshold,
        "matched": matched,
        "by_threshold": by_threshold,
        "score_histogram": {"edges": [round(float(e), 6) for e in edges], "counts": [int(c) for c in counts]},
    }


def normalize_text(text: str) -> str:
    """NFKC, case-folded, whitespace runs folded to one space, stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def read_records(job: Job) -> tuple[Records, dict[str, Any]]:
    """Read every source; problems of all sources are reported together.

    HTML columns (``html:`` of a source) are replaced by their visible text.
    Returns the records and per-source reading statistics for the report.
    """
    from .html import extract_text

    parts: list[Records] = []
    problems: list[Problem] = []
    stats: dict[str, Any] = {}
    for i, src in enumerate(job.spec.sources):
        files: list[Records] = []
        st: dict[str, Any] = {}
        for path in job.source_paths(i):
            try:
                recs, st_file = read_source_with_stats(
                    path,
                    id_column=src.id,
                    fields=src.fields,
                    name=src.name,
                    where=f"{job.config_path}: sources[{i}]",
                    layout=src.layout,
                )
            except ErError as exc:
                problems.extend(exc.problems)
                continue
            st.update(st_file)
            files.append(recs)
        if len(files) != len(job.source_paths(i)):
            continue
        recs = files[0] if len(files) == 1 else merge_files(files, f"{job.config_path}: sources[{i}] ({src.path})")
        if src.html is not None:
            for column in src.html.fields or src.fields:
                texts, html_stats = extract_text(
                    recs.fields[column], boilerplate=src.html.boilerplate, language=src.html.language
                )
                recs.fields[column] = texts
                st[f"html:{column}"] = html_stats
        if len(files) > 1:
            st["files"] = len(files)
        stats[src.name] = st
        parts.append(recs)
    if problems:
        raise InputError(problems)
    return Records.concat(parts), stats


def merge_files(files: list[Records], where: str) -> Records:
    """The records of one source read from several files, in file order; ids unique across the files."""
    from collections import Counter

    ids = [i for f in files for i in f.ids]
    dup = sorted(i for i, c in Counter(ids).items() if c > 1)
    if dup:
        raise InputError(Problem(where=where, message=f"{len(dup)} id(s) appear in more than one file of the source: "
                                 f"{', '.join(dup[:5])}" + (" …" if len(dup) > 5 else ""),
                                 fix="ids must be unique within a source, across all its files"))
    return Records(
        ids=ids,
        source=np.zeros(len(ids), dtype=np.int32),
        source_names=list(files[0].source_names),
        fields={k: [v for f in files for v in f.fields[k]] for k in files[0].fields},
    )


def exact_keys(records: Records, normalize: bool) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """``(keys, nonempty)``: the stable 64-bit hash of each record's (normalized) text.

    Records with equal keys are exact duplicates; an empty text is nobody's
    duplicate (``nonempty`` false).
    """
    texts = records.text()
    if normalize:
        texts = [normalize_text(t) for t in texts]
    keys = hash_strings(texts)
    nonempty = np.fromiter((len(t) > 0 for t in texts), dtype=bool, count=len(texts))
    return keys, nonempty


def exact_duplicate_groups(
    records: Records, normalize: bool, collapse: bool
) -> tuple[Pairs, Int64Array, dict[str, Any]]:
    """Exact copies by one stable 64-bit hash of the (normalized) record text.

    Returns ``(pairs, active, stats)``. With ``collapse`` (dedup modes) each
    group of identical records is linked as a star to its first record with
    score 1.0 and only that representative stays active for the later stages.
    Without ``collapse`` (link mode) all cross-source pairs inside a group are
    returned and every record stays active (within-source copies are not
    pairs in link mode, but each must still find its near-duplicates in the
    other source). Empty texts are never exact duplicates of each other.
    """
    keys, nonempty = exact_keys(records, normalize)
    return exact_groups_from_keys(keys, nonempty, records.source, collapse)


def exact_groups_from_keys(
    keys: npt.NDArray[np.uint64], nonempty: npt.NDArray[np.bool_], source: npt.NDArray[Any], collapse: bool
) -> tuple[Pairs, Int64Array, dict[str, Any]]:
    """:func:`exact_duplicate_groups` from the records' :func:`exact_keys` and sources."""
    n = len(keys)
    idx = np.flatnonzero(nonempty).astype(np.int64)
    order, starts, sizes = group_sorted(keys[idx])
    members = idx[order]  # stable sort: ascending record index within each group
    group_of = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    in_group = sizes[group_of] >= 2
    multi = sizes >= 2
    active = np.arange(n, dtype=np.int64)
    stats: dict[str, Any] = {"groups": int(multi.sum()), "records_in_groups": int(sizes[multi].sum())}
    if collapse:
        rep_of = members[starts[group_of]]  # representative = smallest index of the group
        dup = in_group & (members != rep_of)
        pairs = Pairs(rep_of[dup], members[dup], np.ones(int(dup.sum()))).normalized()
        collapsed = np.zeros(n, dtype=bool)
        collapsed[members[dup]] = True
        active = np.flatnonzero(~collapsed).astype(np.int64)
        stats["records_collapsed"] = int(collapsed.sum())
    else:
        left, right = pairs_in_groups(members, starts[multi], sizes[multi])
        cross = source[left] != source[right]
        pairs = Pairs(left[cross], right[cross], np.ones(int(cross.sum()))).normalized()
        stats["records_collapsed"] = 0
    stats["pairs"] = int(len(pairs))
    return pairs, active, stats


def _subtract(pairs: Pairs, known: Pairs) -> Pairs:
    """Pairs not in ``known`` (both normalized)."""
    if len(known) == 0 or len(pairs) == 0:
        return pairs
    n = int(max(pairs.right.max(), known.right.max())) + 1
    a = pairs.left * n + pairs.right
    b = known.left * n + known.right
    return pairs.select(~np.isin(a, b))


def _versions(job: Job) -> dict[str, Any]:
    try:
        er_version = metadata.version("er-framework")
    except metadata.PackageNotFoundError:  # running from a source tree
        er_version = "unknown"
    used: dict[str, Any] = {}
    specs: list[ComponentSpec | None] = [job.shingler, job.signature, *job.blockers, job.verifier, job.clusterer]
    for spec in specs:
        if spec is None:
            continue
        info = job.registry.components[spec.family][spec.cls.name]
        used[f"{spec.family}:{spec.cls.name}"] = {
            "plugin": info.plugin.name,
            "distribution": info.plugin.distribution,
            "version": info.plugin.version,
        }
    return {
        "er_framework": er_version,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "components": used,
    }


def run_job(
    job: Job,
    out_dir: str | Path | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    write: bool = True,
) -> Result:
    """Run a validated job; write outputs atomically to ``out_dir``."""
    if job.spec.executor.type == "dask":
        from .dask_executor import run_job_dask

        return run_job_dask(job, out_dir, progress=progress, write=write)  # type: ignore[no-any-return]
    t_start = time.perf_counter()
    log = StageLog(progress=progress)
    ctx = job.context
    mode = job.spec.mode
    out_path = job.output_dir(out_dir)
    if write and out_path is None:
        raise InputError(
            Problem(
                where=str(job.config_path),
                path="output.dir",
                message="no output folder given",
                fix="pass --out DIR or set output: {dir: …} in the YAML",
            )
        )

    with log.stage("read") as info:
        records, source_stats = read_records(job)
        n = len(records)
        info["records"] = n

    normalize_stats: dict[str, Any] = {}
    # the report shows records as read: keep the columns that normalizers replace
    as_read = Records(records.ids, records.source, records.source_names, dict(records.fields))
    with log.stage("normalize") as info:
        done = normalize_fields(records, job.spec.normalize, ctx.workers)
        for fname, (values, stats) in done.items():
            records.fields[fname], normalize_stats[fname] = values, stats
        info["fields"] = sorted(normalize_stats)

    with log.stage("exact_duplicates") as info:
        if job.exact.enabled:
            exact_pairs, active, exact_stats = exact_duplicate_groups(
                records, job.exact.normalize, collapse=(mode != "link")
            )
        else:
            exact_pairs, active = Pairs.empty(scored=True), np.arange(n, dtype=np.int64)
            exact_stats = {"groups": 0, "records_in_groups": 0, "records_collapsed": 0, "pairs": 0}
        exact_stats["enabled"] = job.exact.enabled
        info.update(exact_stats)

    sub = records.take(active) if len(active) != n else records
    batch = Batch(records=sub, active=active, cross_source_only=(mode == "link"), seed=ctx.seed)

    needs: set[str] = set()
    for spec in job.blockers:
        needs |= set(spec.cls.needs)  # type: ignore[attr-defined]
    needs |= set(job.verifier.cls.needs)  # type: ignore[attr-defined]
    if job.signature is not None:
        needs.add("signatures")
    report_tokens: dict[str, Any] = {}
    described: dict[str, Any] = {"shingler": None, "signature": None}

    shingler: Shingler | None = None
    if job.shingler is not None and needs & {"tokens", "signatures"}:
        shingler = job.shingler.instantiate(ctx)
        assert isinstance(shingler, Shingler)
    builder: SignatureBuilder | None = None
    if job.signature is not None and shingler is not None:
        builder = job.signature.instantiate(ctx)
        assert isinstance(builder, SignatureBuilder)
    # Stream the corpus: shingles -> signatures one chunk of records at a time.
    # Token sets are kept when a blocker reads them (or the shingler must see
    # every record at once); otherwise while they fit in token_memory_mb, and
    # beyond that dropped after signing and recomputed for the records a later
    # stage asks for (verification, diagnostics) through batch.token_source.
    must_keep = (
        builder is None
        or any("tokens" in spec.cls.needs for spec in job.blockers)  # type: ignore[attr-defined]
        or (shingler is not None and not shingler.streamable)
    )
    chunk = job.spec.chunk_records if shingler is None or shingler.streamable else max(len(sub), 1)
    keep = "all" if must_keep else ("none" if builder is not None and builder.multiset_ok else "budget")
    shingled = _shingle_and_sign(sub, shingler, builder, keep, chunk, job.spec.token_memory_mb, log)
    if shingler is not None:
        described["shingler"] = shingler.describe()
        batch.tokens = shingled.tokens
        sizes = shingled.sizes
        report_tokens = {
            "records_shingled": int(len(sizes)),
            "empty_token_sets": int((sizes == 0).sum()),
            "mean_tokens": round(float(sizes.mean()), 2) if len(sizes) else 0.0,
            "total_tokens": int(sizes.sum()),
            # multisets: shingles counted with repeats (the sets were never built)
            "tokens_counted": "with repeats" if keep == "none" else "distinct",
            "token_sets_kept": shingled.tokens is not None,
            "chunks": shingled.chunks,
        }
        log.stages[-2 if builder is not None else -1].update(report_tokens)
        if shingled.tokens is None:
            active_shingler = shingler
            batch.token_source = lambda rows: active_shingler.shingle(sub.take(rows))
    if builder is not None:
        batch.signatures = shingled.signatures
        described["signature"] = builder.describe()
        assert batch.signatures is not None
        log.stages[-1]["shape"] = list(batch.signatures.values.shape)
        log.stages[-1]["bytes"] = int(batch.signatures.values.nbytes)

    blocker_reports: list[dict[str, Any]] = []
    with log.stage("block") as info:
        found: list[Pairs] = []
        blockers_used: list[Blocker] = []
        for spec in job.blockers:
            blocker = spec.instantiate(ctx)
            assert isinstance(blocker, Blocker)
            blockers_used.append(blocker)
            cand = batch.allowed(blocker.candidates(batch))
            found.append(cand)
            rep = blocker.describe()
            rep["candidate_pairs"] = int(len(cand))
            blocker_reports.append(rep)
        local = Pairs.union(found)
        candidates = Pairs(active[local.left], active[local.right]).normalized()
        candidates = _subtract(candidates, exact_pairs)
        info["candidate_pairs"] = int(len(candidates))

    diagnostics: dict[str, Any] = {}
    if job.spec.diagnostics > 0:
        with log.stage("diagnostics") as info:
            for used in blockers_used:
                d = used.diagnostics(batch, job.spec.diagnostics)
                if d is not None:
                    diagnostics.update(d)
            info["entries"] = sorted(diagnostics)

    with log.stage("verify") as info:
        verifier = job.verifier.instantiate(ctx)
        assert isinstance(verifier, Verifier)
        threshold = verifier.threshold
        # verifiers see the batch (active records): map global -> local indices
        local_of = np.full(n, -1, dtype=np.int64)
        local_of[active] = np.arange(len(active), dtype=np.int64)
        local_cand = Pairs(local_of[candidates.left], local_of[candidates.right])
        if batch.tokens is None and batch.token_source is not None and "tokens" in verifier.needs:
            # streamed corpus: the token sets of the records in candidate pairs
            # only, a block of pairs at a time so that the sets in memory stay
            # within token_memory_mb (pairs are sorted by left record, so a
            # record's pairs mostly fall into one block)
            scores, info["records_reshingled"], info["verify_blocks"] = _score_streamed(
                verifier, batch, local_cand, shingled.sizes, job.spec.token_memory_mb
            )
        else:
            scores = np.asarray(verifier.score(batch, local_cand), dtype=np.float64)
        if scores.shape != (len(candidates),):
            raise ErError(
                f"verifier {verifier.name!r} returned {scores.shape} scores for {len(candidates)} pairs"
            )
        keep = scores >= threshold
        verified = Pairs(candidates.left[keep], candidates.right[keep], scores[keep])
        all_pairs = Pairs(
            np.concatenate([exact_pairs.left, verified.left]),
            np.concatenate([exact_pairs.right, verified.right]),
            np.concatenate([exact_pairs.score if exact_pairs.score is not None else np.ones(len(exact_pairs)), verified.score]),  # type: ignore[list-item]
        ).normalized()
        info.update({"threshold": threshold, "verified_pairs": int(len(verified)), "rejected_pairs": int((~keep).sum())})

    with log.stage("cluster") as info:
        clusterer = job.clusterer.instantiate(ctx)
        assert isinstance(clusterer, Clusterer)
        raw_labels = np.asarray(clusterer.cluster(n, all_pairs))
        if raw_labels.shape != (n,):
            raise ErError(f"clusterer {clusterer.name!r} returned {raw_labels.shape} labels for {n} records")
        labels = canonical_labels(raw_labels)
        counts = np.bincount(labels) if n else np.zeros(0, dtype=np.int64)
        cluster_stats = {
            "count": int(len(counts)),
            "singletons": int((counts == 1).sum()),
            "largest": int(counts.max()) if len(counts) else 0,
            "records_in_multi_record_clusters": int(counts[counts > 1].sum()),
        }
        info.update(cluster_stats)

    per_source = {name: int((records.source == i).sum()) for i, name in enumerate(records.source_names)}
    report: dict[str, Any] = {
        "job": job.spec.name,
        "config": str(job.config_path),
        "config_hash": job.config_hash(),
        "mode": mode,
        "seed": ctx.seed,
        "workers": ctx.workers,
        "records": {"total": n, "per_source": per_source},
        "sources": source_stats,
        "normalize": normalize_stats,
        "exact_duplicates": exact_stats,
        "shingler": described["shingler"],
        "tokens": report_tokens,
        "signature": described["signature"],
        "blockers": blocker_reports,
        "candidate_pairs": int(len(candidates)),
        "verified_pairs": int(len(verified)),
        "pairs_written": int(len(all_pairs)),
        "verifier": {**verifier.describe(), "threshold": threshold},
        "clusterer": clusterer.describe(),
        "clusters": cluster_stats,
        "link": link_answer(records, candidates, scores, labels, threshold) if mode != "dedup" else None,
        "diagnostics": diagnostics,
        "stages": log.stages,
        "versions": _versions(job),
    }
    result = Result(
        records=records, pairs=all_pairs, labels=labels, report=report,
        candidates=Pairs(candidates.left, candidates.right, scores),
    )

    if write and out_path is not None:
        with log.stage("write"):
            tables = output_tables(records, all_pairs, labels)
            if job.spec.output.candidates:
                cand = Pairs(candidates.left, candidates.right, scores)
                tables["candidates"] = output_tables(records, cand, labels)["pairs"]
            report["seconds_total"] = round(time.perf_counter() - t_start, 4)
            report["peak_rss_mb"] = max(log.overall_peak_mb, peak_rss_mb())
            result.outputs = write_outputs(out_path, tables, {"report": report}, fmt=job.spec.output.format)
        try:  # the visual report is derived from the outputs; a failure must not lose them
            from .report import RunData, write_report

            result.outputs["report_html"] = write_report(
                out_path, config_path=job.config_path, run=RunData(as_read, all_pairs, labels)
            )
        except Exception as exc:  # noqa: BLE001 - reported, outputs kept
            print(f"warning: report.html not written: {type(exc).__name__}: {exc} "
                  f"(the other outputs are complete; retry with: er report {out_path})", file=sys.stderr)
    report["seconds_total"] = round(time.perf_counter() - t_start, 4)
    report["peak_rss_mb"] = max(log.overall_peak_mb, peak_rss_mb())
    return result


def output_tables(records: Records, pairs: Pairs, labels: Int64Array) -> dict[str, dict[str, Any]]:
    """The ``pairs`` and ``clusters`` tables with ids and source names."""
    ids = np.asarray(records.ids, dtype=object)
    names = np.asarray(records.source_names, dtype=object)
    src = records.source
    return {
        "pairs": {
            "left_source": names[src[pairs.left]],
            "left_id": ids[pairs.left],
            "right_source": names[src[pairs.right]],
            "right_id": ids[pairs.right],
            "score": pairs.score if pairs.score is not None else np.ones(len(pairs)),
        },
        "clusters": {
            "source": names[src],
            "id": ids,
            "cluster_id": labels,
        },
    }
