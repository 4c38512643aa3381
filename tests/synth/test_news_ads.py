"""Ad sets of the generated news pages: seeded, 6-10 blocks by default, different sets for different seeds."""

from __future__ import annotations

from er_framework.synth.news_ads import AdSet, make_ads


def test_ad_sets_are_seeded_and_sized() -> None:
    a, b = make_ads(1), make_ads(1)
    assert isinstance(a, AdSet) and a == b  # same seed, same set
    sizes = {len(make_ads(s).ads) for s in range(200)}
    assert min(sizes) >= 6 and max(sizes) <= 10 and len(sizes) > 1
    assert make_ads(2) != make_ads(3)
    small = make_ads(5, n=(2, 2))
    assert len(small.ads) == 2
