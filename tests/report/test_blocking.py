"""Blocking statistics as tables (report/blocking.py)."""

from __future__ import annotations

from er_framework.report.blocking import blocker_tables

KEYS = [
    {
        "key": "city",
        "fields": ["city"],
        "records_keyed": 900,
        "records_missing": 100,
        "distinct_values": 40,
        "buckets": 30,
        "largest_bucket": 150,
        "pairs_generated": 5000,
        "purged": {
            "buckets": 2,
            "records": 700,
            "pairs_cost": 124_650,
            "largest": [{"value": "<b>Paris</b>", "size": 400}, {"value": "Lyon", "size": 300}],
        },
    },
    {"key": "zip", "records_keyed": 1000, "pairs_generated": 10, "purged": {"buckets": 0, "records": 0, "pairs_cost": 0, "largest": []}},
]


def test_per_key_table_and_purged_blocks_with_their_pairs() -> None:
    html = blocker_tables({"type": "field_hash", "per_key": KEYS}, "dedup")
    assert html.count('<table class="blk">') == 2
    assert "<code>city</code>" in html and "<code>zip</code>" in html
    assert ">124,650<" in html and ">700<" in html  # the pairs the purged blocks cost, the records in them
    assert "&lt;b&gt;Paris&lt;/b&gt;" in html and "<b>Paris" not in html  # escaped
    assert ">79,800<" in html and ">44,850<" in html  # each purged block's pairs, m(m-1)/2 in dedup mode
    assert "largest block (records)" in html and ">150<" in html


def test_link_mode_gives_no_per_block_pairs_and_bucket_blockers_no_table() -> None:
    html = blocker_tables({"per_key": KEYS}, "link")
    assert ">79,800<" not in html and "depend on its records" in html
    assert blocker_tables({"type": "lsh_bands", "buckets": 5}, "dedup") == ""
    assert "blocks purged" not in blocker_tables({"per_key": [{"key": "k", "pairs_generated": 3}]}, "dedup")
