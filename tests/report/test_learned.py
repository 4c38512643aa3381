"""Tests of er_framework.report.learned: the sessions side by side and the dependence in report.html."""

from __future__ import annotations

from er_framework.report.learned import training_section


def _report() -> dict:
    return {
        "verifier": {
            "lambda": 2e-5,
            "expected_matches": 990.5,
            "per_field": {"name": {"weight_log2": [6.5, -3.0]}, "dob": {"weight_log2": [10.0, -4.0]}},
            "sessions": {
                "lambda_over": "population",
                "sessions": [
                    {"agree_on": ["name"], "pairs": 1200, "lambda": 0.4, "used": True, "weight_log2": {"dob": [9.5, -3.5]}},
                    {"agree_on": ["dob"], "pairs": 3000, "lambda": 0.2, "used": False, "weight_log2": {"name": [6.0, -2.5]}},
                ],
                "m_from_candidate_em": [],
            },
            "dependence": {"order": ["dob", "name"], "log_lift": {"name|dob": 0.6931471805599453, "a|b": 0.0}},
        }
    }


def test_sessions_side_by_side_and_the_dependence():
    html = training_section(_report())
    assert html is not None
    assert "1,200 pairs, 40.0% matches" in html and "3,000 pairs, 20.0% matches, not used" in html
    assert "+9.50 / -3.50" in html and "+6.00 / -2.50" in html  # each session's estimate
    assert "<b>+10.00 / -4.00</b>" in html  # the model's
    assert "990.5 expected matching pairs" in html and "every record pair" in html
    assert "name &amp; dob" in html and "1.00 bits" in html and "a &amp; b" not in html
    assert "dob → name" in html


def test_nothing_without_sessions():
    assert training_section({"verifier": {"per_field": {}}}) is None
    assert training_section({}) is None
    r = _report()
    r["verifier"]["sessions"]["m_from_candidate_em"] = ["name"]
    assert "No session estimated name" in (training_section(r) or "")
