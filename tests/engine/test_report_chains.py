"""report.json ``chains`` and report.html: clusters that look like two entities chained by a weak bridge."""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

from er_framework.config.resolve import parse_job
from er_framework.executors import run_job
from er_framework.synth.documents import chained_records


def test_chained_clusters_are_flagged_with_their_bridge(tmp_path: Path) -> None:
    d = chained_records(300, seed=3)
    data = tmp_path / "chained.jsonl"
    data.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(d.ids, d.texts)), encoding="utf-8")
    cfg = tmp_path / "job.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 1
        threshold: 0.45
        sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 5}}
        signature: {{type: minhash, num_perm: 128}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        cluster: {{type: connected_components}}
        diagnostics: 0
    """)
    )
    out = tmp_path / "out"
    run_job(parse_job(cfg), out)
    report = json.loads((out / "report.json").read_text())
    chains = report["chains"]
    assert chains["flagged"] > 0 and chains["listed"] and chains["checked"] <= chains["clusters"]
    entity = dict(zip(d.ids, d.entity))
    cluster_of = {row["id"]: row["cluster_id"] for row in csv.DictReader((out / "clusters.csv").open())}
    impure = 0
    for flag in chains["listed"]:
        (_, a), (_, b) = flag["bridge"]
        assert cluster_of[a] == cluster_of[b] == str(flag["cluster"])  # the bridge lies inside the flagged cluster
        assert sum(flag["sides"]) == flag["size"] and flag["cut_max_score"] < min(flag["side_median_score"])
        members = [i for i, c in cluster_of.items() if c == str(flag["cluster"])]
        impure += len({entity[i] for i in members}) > 1
    assert impure == len(chains["listed"])  # every listed cluster really holds two or more entities
    html = (out / "report.html").read_text()
    assert 'id="chains"' in html and "Clusters that look chained" in html
    a, b = chains["listed"][0]["bridge"]
    assert f"{a[0]}:{a[1]}" in html and f"{b[0]}:{b[1]}" in html
