"""Built-in plugin: pair scorers for structured (customer) records.

Two verifiers for records with fields such as ``first_name``, ``last_name``,
``address``, ``city``, ``zip``, ``phone``, ``email``, ``dob`` (values
already normalized by the engine; a missing value is ``None``):

``field_score``
    The seed's scheme (SEEDS §5): every field is compared with a string
    similarity on a 0..100 scale, weighted, and summed; with three fields
    (e.g. name, address, phone) a pair scores out of 300. Its threshold is
    on that total scale, so it must be set on the verifier itself.
``fellegi_sunter``
    Unsupervised probabilistic record linkage (Fellegi & Sunter 1969): the
    per-field similarities are cut into agreement levels, a two-class latent
    model (match / non-match, fields independent given the class) is fitted
    by EM on the candidate pairs (weights monotone in the level by default;
    or trained from labelled pairs), and each pair is scored with its posterior
    match probability in [0, 1] (ordinary verifier threshold semantics).

Both compare the fields the job lists in ``fields:`` (required: no default
columns). Both explain a score (``comparisons``: per-field levels and weights in bits,
or similarities and points).

The code: :mod:`er_plugins.record_columns` (a compared field's values over
the records taking part, compared a chunk of pairs at a time),
:mod:`er_plugins.field_score`, :mod:`er_plugins.fellegi_sunter` and its
maths, :mod:`er_framework.kernels.em`. This module registers the two.

Comparisons (``scorer`` / ``comparison``), all on 0..100:

=================== ==========================================================
``ratio``            :func:`rapidfuzz.fuzz.ratio` (normalized InDel similarity)
``partial_ratio``    :func:`rapidfuzz.fuzz.partial_ratio` (best substring alignment)
``token_sort_ratio`` :func:`rapidfuzz.fuzz.token_sort_ratio` (words sorted first)
``token_set_ratio``  :func:`rapidfuzz.fuzz.token_set_ratio`
``jaro_winkler``     ``rapidfuzz.distance.JaroWinkler.normalized_similarity * 100``
``levenshtein``      ``rapidfuzz.distance.Levenshtein.normalized_similarity * 100``
``exact``            100 when the values are equal, else 0
``digits``           ``exact`` on the digits 0-9 of the values only ("(555) 123-4567"
                     equals "555.123.4567"); with ``last_digits: N`` only the last N
                     digits ("+1 555 123 4567" equals "555-123-4567" with N = 10);
                     a value without digits is missing
=================== ==========================================================

A field is ``field: name`` or ``field: [first_name, last_name]`` (several
columns joined by one space, missing parts skipped). A value that is ``None``,
empty or only whitespace is *missing*; a pair's field is missing when either
side's value is.
"""

from __future__ import annotations

from er_framework import hookimpl
from er_framework.components import Verifier
from er_plugins.fellegi_sunter import FellegiSunter
from er_plugins.field_score import FieldScore

__all__ = ["er_register_verifiers"]


@hookimpl
def er_register_verifiers() -> list[type[Verifier]]:
    return [FieldScore, FellegiSunter]
