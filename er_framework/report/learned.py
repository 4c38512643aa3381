"""report.html's "How the weights were learned": a Fellegi–Sunter fit's training sessions side by side and the
dependence of exact agreements (``report["verifier"]["sessions"]`` and ``["dependence"]``;
docs/record-matching.md), like Splink's chart comparing the parameter estimates of its training sessions."""

from __future__ import annotations

from typing import Any

from er_framework.report.charts import esc

__all__ = ["training_section"]


def _bits(x: Any) -> str:
    return f"{float(x):+.2f}" if isinstance(x, (int, float)) else "—"


def training_section(report: dict[str, Any]) -> str | None:
    """The section's HTML, or None when the verifier did not train in sessions."""
    v = report.get("verifier") or {}
    sessions = v.get("sessions")
    if not isinstance(sessions, dict) or not isinstance(sessions.get("sessions"), list):
        return None
    per_field = v.get("per_field") or {}
    fields = [str(f) for f in per_field]
    rows = sessions["sessions"]
    lam = v.get("lambda")
    expected = v.get("expected_matches")
    intro = [
        "u comes from random pairs and is held; each session below is the candidates agreeing on one blocking key "
        "(its fields are left out), where EM estimated m of the other fields. A field's m is the mean of the sessions "
        "that estimated it. Cells: the weight in bits of the closest level / of the last level."
    ]
    if isinstance(lam, (int, float)) and isinstance(expected, (int, float)):
        over = "every record pair" if sessions.get("lambda_over") == "population" else "the candidates"
        intro.append(f"λ = {lam:.4g} over {over}: {expected:,.1f} expected matching pairs.")
    if sessions.get("m_from_candidate_em"):
        intro.append(f"No session estimated {', '.join(sessions['m_from_candidate_em'])}: m from EM on the candidates.")
    head = (
        "<tr><th>field</th>"
        + "".join(
            f"<th>{esc(' + '.join(s.get('agree_on') or []))}<br><small>{int(s.get('pairs') or 0):,} pairs, "
            f"{100 * float(s.get('lambda') or 0):.1f}% matches{'' if s.get('used') else ', not used'}</small></th>"
            for s in rows
        )
        + "<th>model</th></tr>"
    )
    body = []
    for f in fields:
        cells = []
        for s in rows:
            w = (s.get("weight_log2") or {}).get(f)
            cells.append(f"<td>{_bits(w[0])} / {_bits(w[-1])}</td>" if isinstance(w, list) and w else "<td>·</td>")
        w = per_field[f].get("weight_log2") or []
        model = f"<td><b>{_bits(w[0])} / {_bits(w[-1])}</b></td>" if w else "<td>—</td>"
        body.append(f"<tr><td>{esc(f)}</td>{''.join(cells)}{model}</tr>")
    out = f'<p class="note">{esc(" ".join(intro))}</p><table><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'
    dep = v.get("dependence")
    if isinstance(dep, dict):
        # (lifts under 0.1 bits left out: noise of independent fields)
        lifts = {k: float(x) for k, x in (dep.get("log_lift") or {}).items() if isinstance(x, (int, float)) and x > 0.07}
        if lifts:
            items = "".join(
                f"<tr><td>{esc(k.replace('|', ' & '))}</td><td>{x / 0.6931471805599453:.2f} bits</td></tr>"
                for k, x in sorted(lifts.items(), key=lambda kv: -kv[1])
            )
            out += (
                '<p class="note">'
                + esc(
                    "Exact agreements that go together among non-matches (relatives share a surname and an address): "
                    "a pair agreeing on both loses this much of the later field's weight, from the rarest field on "
                    f"({' → '.join(dep.get('order') or [])})."
                )
                + f"</p><table><thead><tr><th>fields</th><th>lift</th></tr></thead><tbody>{items}</tbody></table>"
            )
    return out
