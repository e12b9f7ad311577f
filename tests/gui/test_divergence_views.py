"""Greedy divergence and the sampled regime, as the reports and the app's verdict bar say them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.verdict import SAMPLED_NOTE

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"


def _session(lead=None, regime="greedy") -> Session:
    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    d["config"]["sampling"]["regime"] = regime
    s = Session.from_dict(d)
    if lead is not None:
        c = s.cases[0]
        plain_token = c["plain"]["tokens"][7]
        c["spec"]["tokens"][7] = spec_token = plain_token + 1
        s.apply({"event": "divergence", "case": c["id"], "position": 7, "plain_token": plain_token, "spec_token": spec_token,
                 "plain_margin": abs(lead), "verify_margin": abs(lead), "plain_lead": lead, "verify_lead": lead,
                 "plain_top": [plain_token, spec_token], "verify_top": [plain_token, spec_token], "dtype": "float32", "tolerance": 1e-3,
                 "verdict": "engine_fault" if abs(lead) > 1e-3 else "rounding"})
    return s


def _html(s: Session, target="screen") -> str:
    from specscope.gui.reports import html

    return html.build(s, charts={}, target=target)


@pytest.mark.parametrize("target", ["screen", "print"])  # print: the HTML the PDF is made from
def test_report_engine_fault_banner(target):
    s = _session(lead=1.25)
    assert s.status == "failed"
    text = _html(s, target)
    case = s.cases[0]["id"]
    assert (f"engine fault: speculative output diverged from plain decoding at case {case} position 7 "
            "with a clear margin") in text
    assert "Engine fault: speculative output diverged from plain decoding at case" in text  # the verdict line
    assert "ENGINE FAULT" in text  # per-case table and outputs
    assert "may sum in different orders" not in text and "kernel rounding)" not in text


def test_report_near_tie_is_rounding():
    s = _session(lead=2e-4)
    assert s.status == "complete"
    text = _html(s)
    assert "at a near-tie (kernel rounding" in text and "(near-tie)" in text
    assert "engine fault" not in text.lower()


def test_report_sampled_regime_has_no_greedy_match():
    text = _html(_session(regime="temperature 0.7"))
    assert "Greedy match" not in text and "greedy match" not in text
    assert SAMPLED_NOTE in text and "by design" in text


def test_report_old_identical_session_unchanged():
    text = _html(_session())
    assert "Greedy match" in text and "(all cases identical)" in text and "engine fault" not in text.lower()


def test_verdict_bar_engine_fault_rounding_and_sampled(qtbot):
    from specscope.gui.charts.data import all_chart_data
    from specscope.gui.views.verdict_bar import VerdictBar

    def show(s: Session) -> VerdictBar:
        bar = VerdictBar()
        qtbot.addWidget(bar)
        snap = all_chart_data(s)
        snap.update(status=s.status, errors=list(s.data["errors"]), model=dict(s.data.get("model", {})))
        bar.update_snapshot(snap)
        return bar

    bar = show(_session(lead=1.25))
    assert bar.headline.text().startswith("Engine fault: speculative output diverged from plain decoding at case")
    assert not bar.error.isHidden()
    assert "engine fault: speculative output diverged from plain decoding" in bar.error.text()
    assert "with a clear margin" in bar.error.text()

    bar = show(_session(lead=2e-4))
    assert bar.headline.text().startswith("Speculation") and bar.error.isHidden()
    assert "at a near-tie (kernel rounding" in bar.detail.text()

    bar = show(_session(regime="temperature 0.7"))
    assert SAMPLED_NOTE in bar.detail.text() and "greedy match" not in bar.detail.text().lower()
