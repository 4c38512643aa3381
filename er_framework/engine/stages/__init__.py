"""One function per stage of a job. No maths here: kernels and components do the work.

    read -> normalize -> exact duplicates -> [prune] -> shingle + sign -> block
         -> diagnostics -> verify -> cluster -> write

Every executor and the index call these functions (the local executor all
of them in order; the Dask executor the per-partition ones on its workers and
the rest on the client), so a behaviour lives in one place.

Record indices are global (all sources concatenated, in source order). The
exact-duplicate stage may collapse copies onto one representative; the later
stages then see only the *active* records, and their pairs are mapped back
to global indices.

The stages live in the modules of this package, each with its constants:

* :mod:`~er_framework.engine.stages.reading`: read (files or DataFrames) and normalize;
* :mod:`~er_framework.engine.stages.exact`: exact duplicates (and the groups of copies they found);
* :mod:`~er_framework.engine.stages.shingling`: prune, shingle + sign;
* :mod:`~er_framework.engine.stages.blocking`: block and the blockers' diagnostics;
* :mod:`~er_framework.engine.stages.verification`: verify (and the verifier's comparisons of any pairs);
* :mod:`~er_framework.engine.stages.training`: the training labels of ``training: {labels: FILE}``;
* :mod:`~er_framework.engine.stages.clustering`: cluster, and the answer (the pairs a job reports);
* :mod:`~er_framework.engine.stages.matching`: the stages from exact duplicates to clustering, in order;
* :mod:`~er_framework.engine.stages.writing`: the run's tables and reports written, the output folder checked.

This module is the stage table the executors, the index and the ``er``
command call (``stages.verify(...)``): it re-exports the stage functions and
the types they return, not the constants or helpers of a stage. Modules of
``er_framework.engine`` import from the stage's module, and so does whatever
changes a constant (a test's monkeypatch): the module that reads it.
"""

from er_framework.engine.stages.blocking import block, diagnostics
from er_framework.engine.stages.clustering import Answer, answer, cluster, cluster_stats
from er_framework.engine.stages.exact import Exact, exact_duplicates, exact_from_keys, exact_groups, exact_keys
from er_framework.engine.stages.matching import Matched, match_records
from er_framework.engine.stages.reading import database_arguments, html_to_text, normalize, normalize_keeping_input, read, read_sources
from er_framework.engine.stages.shingling import (
    Pruning,
    Shingled,
    check_frequency_memory,
    check_pruning_leaves_shingles,
    prune_shingles,
    pruned_by_frequency,
    pruned_share,
    shingle_and_sign,
    shingle_frequencies,
)
from er_framework.engine.stages.training import record_rows, training_labels
from er_framework.engine.stages.verification import Verified, explainer, screened_scores, verify, with_exact
from er_framework.engine.stages.writing import output_tables, require_out_dir, write

__all__ = [
    "Answer",
    "Exact",
    "Matched",
    "Pruning",
    "Shingled",
    "Verified",
    "answer",
    "block",
    "check_frequency_memory",
    "check_pruning_leaves_shingles",
    "cluster",
    "cluster_stats",
    "database_arguments",
    "diagnostics",
    "exact_duplicates",
    "exact_from_keys",
    "exact_groups",
    "exact_keys",
    "explainer",
    "html_to_text",
    "match_records",
    "normalize",
    "normalize_keeping_input",
    "output_tables",
    "prune_shingles",
    "pruned_by_frequency",
    "pruned_share",
    "read",
    "read_sources",
    "record_rows",
    "require_out_dir",
    "screened_scores",
    "shingle_and_sign",
    "shingle_frequencies",
    "training_labels",
    "verify",
    "with_exact",
    "write",
]
