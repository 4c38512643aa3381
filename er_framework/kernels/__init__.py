"""Pure numpy kernels: hashing, MinHash, LSH banding, exact Jaccard, grouping.

Everything here is whole-batch and vectorized; every fast function has a naive
``*_reference`` twin in the same module used as a test oracle. Formulas follow
Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3.
"""

from typing import TYPE_CHECKING

from er_framework.kernels.lazy import lazy_names

if TYPE_CHECKING:
    from er_framework.kernels.banding import (
        band_keys,
        bucket_candidates,
        bucket_candidates_reference,
        bucket_ids,
        candidate_probability,
        choose_bands,
        false_positive_area,
        threshold_estimate,
    )
    from er_framework.kernels.chains import (
        ChainFlag,
        chain_flags,
        chain_flags_reference,
        max_spanning_forest,
        max_spanning_forest_reference,
    )
    from er_framework.kernels.digests import (
        normalize_text,
        normalized_digests,
        normalized_digests_reference,
        text_digest_reference,
        text_digests,
    )
    from er_framework.kernels.fss import fss_reference, fss_signatures
    from er_framework.kernels.groups import (
        group_sorted,
        pack_pairs,
        pairs_in_groups,
        unique_pairs,
        unpack_pairs,
    )
    from er_framework.kernels.hashing import (
        char_shingles,
        char_shingles_reference,
        codepoints,
        hash_string_reference,
        hash_strings,
        mix64,
        mix64_reference,
        stopword_shingles,
        stopword_shingles_reference,
        word_ngrams,
        word_ngrams_reference,
        word_tokens,
    )
    from er_framework.kernels.jaccard import jaccard_pairs, jaccard_reference
    from er_framework.kernels.minhash import (
        EMPTY,
        PRIME,
        estimate_jaccard,
        estimate_jaccard_pairs,
        hash_params,
        is_permutation,
        minhash_reference,
        minhash_rowwise_reference,
        minhash_signatures,
    )
    from er_framework.kernels.oph import oph_reference, oph_signatures
    from er_framework.kernels.threshold import ThresholdFit, choose_threshold

__all__ = [
    # hashing
    "mix64",
    "mix64_reference",
    "codepoints",
    "hash_strings",
    "hash_string_reference",
    "char_shingles",
    "char_shingles_reference",
    "word_ngrams",
    "word_ngrams_reference",
    "word_tokens",
    "stopword_shingles",
    "stopword_shingles_reference",
    # whole-text digests (exact duplicates)
    "text_digests",
    "text_digest_reference",
    "normalize_text",
    "normalized_digests",
    "normalized_digests_reference",
    # minhash
    "PRIME",
    "EMPTY",
    "hash_params",
    "minhash_signatures",
    "minhash_reference",
    "minhash_rowwise_reference",
    "estimate_jaccard",
    "estimate_jaccard_pairs",
    "is_permutation",
    # one-permutation hashing
    "oph_signatures",
    "oph_reference",
    # fast similarity sketching
    "fss_signatures",
    "fss_reference",
    # banding
    "candidate_probability",
    "threshold_estimate",
    "false_positive_area",
    "choose_bands",
    "band_keys",
    "bucket_candidates",
    "bucket_ids",
    "bucket_candidates_reference",
    # jaccard
    "jaccard_pairs",
    "jaccard_reference",
    # groups
    "group_sorted",
    "pairs_in_groups",
    "pack_pairs",
    "unpack_pairs",
    "unique_pairs",
    # chains (clusters that look like a chain)
    "ChainFlag",
    "chain_flags",
    "chain_flags_reference",
    "max_spanning_forest",
    "max_spanning_forest_reference",
    # threshold from the score distribution
    "ThresholdFit",
    "choose_threshold",
]

#: the submodule of each public name: a submodule is imported when one of its names is first used
#: (``er --help`` and ``er validate`` do not load the numpy kernels they do not need)
_WHERE: dict[str, str] = {
    **dict.fromkeys(
        (
            "band_keys",
            "bucket_candidates",
            "bucket_ids",
            "bucket_candidates_reference",
            "candidate_probability",
            "choose_bands",
            "false_positive_area",
            "threshold_estimate",
        ),
        "banding",
    ),
    **dict.fromkeys(
        ("ChainFlag", "chain_flags", "chain_flags_reference", "max_spanning_forest", "max_spanning_forest_reference"), "chains"
    ),
    **dict.fromkeys(
        ("normalize_text", "normalized_digests", "normalized_digests_reference", "text_digest_reference", "text_digests"), "digests"
    ),
    **dict.fromkeys(("fss_reference", "fss_signatures"), "fss"),
    **dict.fromkeys(("group_sorted", "pack_pairs", "pairs_in_groups", "unique_pairs", "unpack_pairs"), "groups"),
    **dict.fromkeys(
        (
            "char_shingles",
            "char_shingles_reference",
            "codepoints",
            "hash_string_reference",
            "hash_strings",
            "mix64",
            "mix64_reference",
            "stopword_shingles",
            "stopword_shingles_reference",
            "word_ngrams",
            "word_ngrams_reference",
            "word_tokens",
        ),
        "hashing",
    ),
    **dict.fromkeys(("jaccard_pairs", "jaccard_reference"), "jaccard"),
    **dict.fromkeys(("oph_reference", "oph_signatures"), "oph"),
    **dict.fromkeys(("ThresholdFit", "choose_threshold"), "threshold"),
    **dict.fromkeys(
        (
            "EMPTY",
            "PRIME",
            "estimate_jaccard",
            "estimate_jaccard_pairs",
            "hash_params",
            "is_permutation",
            "minhash_reference",
            "minhash_rowwise_reference",
            "minhash_signatures",
        ),
        "minhash",
    ),
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
