"""The page of ``er review OUT --serve``: label pairs and split clusters in a browser.

One self-contained page (HTML, CSS and script inline; nothing loaded from elsewhere) that talks to the
local server of :mod:`er_framework.cli.serve` through its JSON API, sending the session's token in the
``X-ER-Token`` header. The pair and cluster views are drawn here, on the server, from the same code as
report.html (:func:`~er_framework.report.review.pair_card` and
:func:`~er_framework.report.review.waterfall_svg`): every text taken from the data is escaped.

Keys on the pairs view: ``m`` or ``y`` a match, ``n`` not a match, ``s`` skip, ``u`` or Backspace undo,
the arrow keys move, ``r`` the next round of pairs; ``p`` and ``c`` switch between the pairs and the clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from er_framework.report.review import REVIEW_CSS, Values, esc, pair_card, waterfall_svg

__all__ = ["CELL_CHARS", "LABEL_PAGE_CSS", "LABEL_PAGE_SCRIPT", "cluster_view", "label_page", "pair_view"]

#: characters of a value shown in a cluster's table before the rest is cut
CELL_CHARS = 300

LABEL_PAGE_CSS = (
    REVIEW_CSS
    + """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1f23;background:#f6f7f9}
header{background:#1f3b57;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
header h1{font-size:16px;margin:0;font-weight:600}header .file{opacity:.8;font-size:12.5px}
nav button{background:#2d5277;color:#fff;border:0;border-radius:4px;padding:4px 10px;cursor:pointer}
nav button.on{background:#fff;color:#1f3b57}nav kbd{color:#1d1f23}
main{padding:10px 16px;max-width:1280px}
.bar{height:6px;background:#e2e4e8;border-radius:3px;overflow:hidden;width:220px;display:inline-block;vertical-align:middle}
.bar span{display:block;height:6px;background:#2f9e44;width:0}
.tools{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:6px 0 4px}
.tools button{border:1px solid #c4c8cf;background:#fff;border-radius:4px;padding:5px 11px;cursor:pointer;font-size:13.5px}
.tools button.yes{border-color:#2f9e44;color:#1a6b2c}.tools button.no{border-color:#c92a2a;color:#a61e1e}
kbd{border:1px solid #bbb;border-bottom-width:2px;border-radius:3px;padding:0 4px;font-size:12px;background:#fafafa}
#status{min-height:1.5em;margin:4px 0;color:#1a6b2c}#status.bad{color:#b3261e}
#where{font-weight:600}.lab1{color:#1a6b2c}.lab0{color:#a61e1e}.lab{color:#777}
#list{display:flex;flex-wrap:wrap;gap:3px;margin:6px 0}
#list button{width:26px;height:22px;font-size:11px;border:1px solid #ccd;background:#fff;border-radius:3px;cursor:pointer;padding:0}
#list button.m1{background:#c3e6cb}#list button.m0{background:#f5c2c0}#list button.at{outline:2px solid #1f3b57}
table.cl td,table.cl th{border-bottom:1px solid #e6e8eb;padding:3px 6px;text-align:left;vertical-align:top}
table.cl{border-collapse:collapse;width:100%}table.cl td.g{white-space:nowrap}
#clusters{max-height:190px;overflow:auto;border:1px solid #e2e4e8;border-radius:4px;padding:4px;background:#fff}
#clusters button.c{border:1px solid #ccd;background:#fff;border-radius:3px;margin:2px;padding:2px 8px;cursor:pointer}
#clusters button.c.at{background:#1f3b57;color:#fff}
.hidden{display:none}
"""
)

LABEL_PAGE_SCRIPT = r"""
"use strict";
const TOKEN = document.querySelector('meta[name="er-token"]').content;
const $ = (id) => document.getElementById(id);
const st = {pairs: [], at: 0, view: "pairs", cluster: null, rounds: false};
let chain = Promise.resolve();

function queue(fn) { chain = chain.then(fn).catch((e) => say(e.message, true)); return chain; }
function say(text, bad) { const s = $("status"); s.textContent = text; s.className = bad ? "bad" : ""; }

async function api(path, body) {
  const opts = {method: body === undefined ? "GET" : "POST", headers: {"X-ER-Token": TOKEN}};
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { data = {error: "the server answered " + r.status}; }
  if (!r.ok) { throw new Error(data.error || ("the server answered " + r.status)); }
  return data;
}

function word(m) { return m === "1" ? "match" : m === "0" ? "not a match" : "not labelled"; }

function progress(d) {
  $("progress").textContent = d.labelled + " of " + d.total + " labelled";
  $("bar").style.width = (d.total ? 100 * d.labelled / d.total : 0) + "%";
  if (d.pairs) { d.pairs.forEach((m, i) => { if (st.pairs[i]) st.pairs[i].match = m; }); }
  drawList();
}

function drawList() {
  const list = $("list");
  list.textContent = "";
  st.pairs.forEach((p, i) => {
    const b = document.createElement("button");
    b.textContent = String(i + 1);
    b.title = p.left.join(" ") + "  ~  " + p.right.join(" ") + " (" + word(p.match) + ")";
    b.className = (p.match ? "m" + p.match : "") + (i === st.at ? " at" : "");
    b.addEventListener("click", () => queue(() => show(i)));
    list.appendChild(b);
  });
}

async function show(i) {
  if (!st.pairs.length) { $("pair").textContent = "No pairs to label."; return; }
  st.at = Math.max(0, Math.min(st.pairs.length - 1, i));
  const d = await api("/api/pair?i=" + st.at);
  const p = st.pairs[st.at];
  p.match = d.match;
  $("where").textContent = ["pair " + (st.at + 1) + " of " + st.pairs.length, p.reason, p.side].filter(Boolean).join(" · ");
  $("why").textContent = p.detail ? "why: " + p.detail : "";
  const lab = $("label");
  lab.textContent = word(d.match);
  lab.className = d.match ? "lab" + d.match : "lab";
  $("pair").innerHTML = d.html;
  drawList();
}

async function label(match) {
  if (!st.pairs.length) return;
  const i = st.at;
  const d = await api("/api/label", {pair: i, match: match});
  progress(d);
  const more = st.rounds && d.labelled === d.total ? "; every pair of this round is labelled: r for the next round" : "";
  say(d.message + more);
  await show(i + 1 < st.pairs.length ? i + 1 : i);
}

async function undo() {
  const d = await api("/api/undo", {});
  progress(d);
  say(d.message);
  if (typeof d.pair === "number") { setView("pairs"); await show(d.pair); }
  else if (d.cluster !== undefined && d.cluster !== null) { setView("clusters"); await openCluster(d.cluster); }
}

function takePairs(d) {
  st.pairs = d.pairs;
  st.rounds = d.rounds;
  $("summary").textContent = d.summary || "";
  $("bround").classList.toggle("hidden", !d.rounds);
  progress(d);
  const first = st.pairs.findIndex((p) => !p.match);
  return show(first < 0 ? 0 : first);
}

async function loadPairs() { await takePairs(await api("/api/pairs")); }

async function nextRound() {
  say("proposing the next round: the model is refitted from every label so far …");
  const d = await api("/api/round", {});
  await takePairs(d);
  say(d.message);
}

async function loadClusters() {
  const d = await api("/api/clusters");
  const box = $("clusters");
  box.textContent = "";
  $("cnote").textContent = d.note;
  d.clusters.forEach((c) => {
    const b = document.createElement("button");
    b.className = "c";
    b.dataset.id = c.id;
    b.textContent = c.id + " (" + c.size + ")";
    b.addEventListener("click", () => queue(() => openCluster(c.id)));
    box.appendChild(b);
  });
}

async function openCluster(id) {
  const d = await api("/api/cluster?id=" + encodeURIComponent(id));
  st.cluster = id;
  document.querySelectorAll("#clusters button.c").forEach((b) => b.classList.toggle("at", b.dataset.id === id));
  $("cluster").innerHTML = d.html;
  $("splitbox").classList.remove("hidden");
}

async function split() {
  if (st.cluster === null) return;
  const groups = [[], []];
  document.querySelectorAll("#cluster tr[data-i]").forEach((tr) => {
    const b = tr.querySelector('input[value="1"]');
    groups[b && b.checked ? 1 : 0].push(Number(tr.dataset.i));
  });
  const d = await api("/api/split", {cluster: st.cluster, groups: groups});
  progress(d);
  say(d.message);
}

function setView(v) {
  st.view = v;
  $("pairsview").classList.toggle("hidden", v !== "pairs");
  $("clustersview").classList.toggle("hidden", v !== "clusters");
  $("tabpairs").classList.toggle("on", v === "pairs");
  $("tabclusters").classList.toggle("on", v === "clusters");
  if (v === "clusters" && !$("clusters").childElementCount) queue(loadClusters);
}

const KEYS = {
  m: () => label(1), y: () => label(1), n: () => label(0), s: () => show(st.at + 1),
  u: undo, Backspace: undo, r: () => (st.rounds ? nextRound() : null), ArrowRight: () => show(st.at + 1), ArrowDown: () => show(st.at + 1),
  ArrowLeft: () => show(st.at - 1), ArrowUp: () => show(st.at - 1),
};

document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const t = ev.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
  if (ev.key === "p") { setView("pairs"); return; }
  if (ev.key === "c") { setView("clusters"); return; }
  const fn = KEYS[ev.key];
  if (!fn) return;
  if (st.view !== "pairs" && ev.key !== "u" && ev.key !== "Backspace") return;
  ev.preventDefault();
  queue(fn);
});

$("bmatch").addEventListener("click", () => queue(() => label(1)));
$("bnon").addEventListener("click", () => queue(() => label(0)));
$("bskip").addEventListener("click", () => queue(() => show(st.at + 1)));
$("bundo").addEventListener("click", () => queue(undo));
$("bprev").addEventListener("click", () => queue(() => show(st.at - 1)));
$("bnext").addEventListener("click", () => queue(() => show(st.at + 1)));
$("bsplit").addEventListener("click", () => queue(split));
$("bround").addEventListener("click", () => queue(nextRound));
$("tabpairs").addEventListener("click", () => setView("pairs"));
$("tabclusters").addEventListener("click", () => setView("clusters"));
queue(loadPairs);
"""

_BODY = """
<header><h1>er review</h1><span class="file">{title} · labels saved to {labels}</span>
<nav><button id="tabpairs" class="on">Pairs <kbd>p</kbd></button> <button id="tabclusters">Clusters <kbd>c</kbd></button></nav>
<span><span class="bar"><span id="bar"></span></span> <span id="progress">…</span></span></header>
<main>
<div id="status" role="status" aria-live="polite"></div>
<section id="pairsview">
<p class="note" id="summary"></p>
<div class="tools"><span id="where"></span> <span id="label" class="lab"></span></div>
<p class="note" id="why"></p>
<div class="tools">
<button id="bmatch" class="yes">Match <kbd>m</kbd></button>
<button id="bnon" class="no">Not a match <kbd>n</kbd></button>
<button id="bskip">Skip <kbd>s</kbd></button>
<button id="bundo">Undo <kbd>u</kbd></button>
<button id="bprev">◀ <kbd>←</kbd></button><button id="bnext"><kbd>→</kbd> ▶</button>
<button id="bround" class="hidden">Next round <kbd>r</kbd></button>
</div>
<div id="list"></div>
<div id="pair"></div>
</section>
<section id="clustersview" class="hidden">
<p class="note" id="cnote"></p>
<div id="clusters"></div>
<div id="cluster"></div>
<div id="splitbox" class="tools hidden"><button id="bsplit">Save the split as labels</button>
<span class="note">pairs across the two groups are saved as not a match (0), pairs within a group as a match (1)</span></div>
</section>
</main>
"""


def label_page(token: str, nonce: str, title: str, labels_name: str) -> str:
    """The whole page: ``token`` is the session's (sent back in the API's header), ``nonce`` the script's
    (the server's Content-Security-Policy allows only that script), ``title`` names the run and
    ``labels_name`` the labels file."""
    body = _BODY.format(title=esc(title), labels=esc(labels_name))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="er-token" content="{esc(token)}"><title>er review · {esc(title)}</title>'
        f"<style>{LABEL_PAGE_CSS}</style></head><body>{body}"
        f'<script nonce="{esc(nonce)}">{LABEL_PAGE_SCRIPT}</script></body></html>'
    )


def pair_view(report: dict[str, Any], entry: dict[str, Any], rank: int, values: Values, fields: Sequence[str]) -> str:
    """One pair (``entry``: ``{left: {source, id}, right: {source, id}, score, terms}``) as HTML: both records'
    fields side by side with the differences marked and the verifier's terms, as report.html shows them,
    then the waterfall of its match weight when the verifier gave weights."""
    threshold = (report.get("review") or {}).get("threshold")
    t = float(threshold) if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else None
    out = pair_card(report, entry, rank, t, values, fields)
    terms = entry.get("terms")
    if isinstance(terms, dict) and ("match_weight" in terms or "prior_weight" in terms):
        lk = (str(entry["left"]["source"]), str(entry["left"]["id"]))
        rk = (str(entry["right"]["source"]), str(entry["right"]["id"]))
        fall = waterfall_svg(terms, report, values.get(lk), values.get(rk), fields)
        out += f'<div class="rv"><h4>waterfall of the match weight</h4>{fall}</div>'
    return out


def _cell(value: str | None) -> str:
    if value is None:
        return '<span class="miss">(missing)</span>'
    text = " ".join(value.split())
    if len(text) > CELL_CHARS:
        return f'{esc(text[:CELL_CHARS])}<span class="elide">… ({len(text):,} characters)</span>'
    return esc(text)


def cluster_view(cluster_id: str, members: Sequence[tuple[str, str]], values: Values, fields: Sequence[str]) -> str:
    """One cluster's records as a table, each row with a choice of group A (the default) or B for a split."""
    head = "".join(f"<th>{esc(f)}</th>" for f in fields)
    rows = []
    for i, key in enumerate(members):
        vals = values.get(key)
        if vals is None:
            cells = f'<td colspan="{max(1, len(fields))}" class="miss">not found among the records read</td>'
        else:
            cells = "".join(f"<td>{_cell(vals.get(f))}</td>" for f in fields)
        rows.append(
            f'<tr data-i="{i}"><td class="g">'
            f'<label><input type="radio" name="g{i}" value="0" checked> A</label> '
            f'<label><input type="radio" name="g{i}" value="1"> B</label></td>'
            f"<td>{esc(key[0])}</td><td><code>{esc(key[1])}</code></td>{cells}</tr>"
        )
    title = f"cluster {cluster_id}: {len(members):,} records"
    return (
        f"<h3>{esc(title)}</h3>"
        '<p class="note">Put the records that are not the same entity as the others in group B, then save the split.</p>'
        f'<table class="cl"><thead><tr><th>group</th><th>source</th><th>id</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
