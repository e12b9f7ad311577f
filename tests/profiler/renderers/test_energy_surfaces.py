"""Where people look for energy — the summary text, CSV, compare, the report — on simulated recordings
(``energy_recordings``): each shows the figures from a counter it can trust, or says why not; on this machine's own
session (Linux: no sensors) each says energy is not available and prints no number."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from energy_recordings import Counter, record, with_windows

from specscope.gui.reports.html import build
from specscope.profiler.analysis.compare import compare
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.analysis.summary_text import format_summary
from specscope.profiler.renderers.csv_renderer import render as render_csv
from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"


def _session(**kw) -> tuple[Session, object]:
    s = Session.load(FIXTURE)
    windows, truth = record(case_ids=[c["id"] for c in s.cases], repeats=3, **kw)
    return with_windows(s, windows), truth


def _csv_rows(s: Session) -> list[dict]:
    return list(csv.DictReader(io.StringIO(render_csv(s))))


def test_the_linux_session_says_not_available_everywhere():
    s = Session.load(FIXTURE)   # measured on this kind of machine: no sensors
    e = summarize(s)["energy"]
    assert not e["available"] and "macOS on Apple silicon only" in e["reason"]
    text = format_summary(s)
    assert "energy            not available: GPU frequency" in text and "J/token" not in text
    rows = _csv_rows(s)
    assert all(r["energy_counter"] == "not available" and r["plain_joules_per_token"] == "" for r in rows)
    html = build(s, charts={})
    assert "<h2>Energy</h2>" in html and "No energy figure is printed" in html and "J per generated token" not in html
    other = Session.load(FIXTURE)
    result = compare(s, other, names=("A", "B"))
    assert not [f for f in result["figures"] if f["key"].startswith("energy")]
    assert any(n.startswith("Energy not compared: not available in either session") for n in result["notes"])


def test_a_live_recording_reaches_the_text_the_csv_and_the_report():
    s, truth = _session(noise=0.05, case_spread=0.1, seed=3)
    e = summarize(s)["energy"]
    assert e["available"] and e["domain"] == "package"
    assert e["spec"]["joules_per_token"] == pytest.approx(truth.per_token("spec"))
    text = format_summary(s)
    assert "energy speculative" in text and "J/accepted draft" in text and "energy ratio" in text
    rows = _csv_rows(s)
    assert all(r["energy_counter"] == "package" for r in rows)
    # per case: that case's measured windows; the paired phase's ledger pass left out
    c0 = s.cases[0]["id"]
    mine = [w for w in s.data["sensors"] if w["case"] == c0 and w["mode"] == "spec" and w.get("pass") == "measured"]
    assert float(rows[0]["spec_joules_per_token"]) == pytest.approx(
        sum(w["energy_j"]["package"] for w in mine) / sum(w["tokens"] for w in mine), rel=1e-3)
    assert float(rows[0]["spec_joules_per_accepted"]) > float(rows[0]["spec_joules_per_token"])
    html = build(s, charts={})
    assert "J per generated token" in html and "Energy ratio (speculative ÷ plain J per token)" in html


def test_a_batched_package_counter_is_labelled_gpu_only_on_every_surface():
    s, truth = _session(package=Counter("batched", 2.0, 0.5))
    e = summarize(s)["energy"]
    assert e["domain"] == "gpu"
    assert "GPU only: the package counter updates in batches" in format_summary(s)
    assert all(r["energy_counter"] == "gpu" for r in _csv_rows(s))
    html = build(s, charts={})
    assert "From the gpu energy counter" in html and "GPU only" in html


def test_stale_counters_print_no_number_anywhere():
    s, _ = _session(package=Counter("stale"), gpu=Counter("stale"))
    text = format_summary(s)
    assert "did not move in any of" in text and "J/token" not in text
    assert all(r["energy_counter"] == "not available" and r["spec_joules_per_token"] == "" for r in _csv_rows(s))
    assert "J per generated token" not in build(s, charts={})


def test_compare_names_the_session_that_spends_less():
    a, _ = _session(spec_w=26.0, noise=0.02, seed=4)
    b, _ = _session(spec_w=18.0, noise=0.02, seed=5)
    result = compare(a, b, names=("A", "B"))
    rows = {f["key"]: f for f in result["figures"] if f["key"].startswith("energy")}
    assert set(rows) == {"energy_plain_j_per_token", "energy_spec_j_per_token", "energy_spec_j_per_accepted", "energy_ratio"}
    assert rows["energy_spec_j_per_token"]["winner"] == "B" and rows["energy_ratio"]["winner"] == "B"
    assert rows["energy_plain_j_per_token"]["winner"] == "tie"   # the same plain power: no measurable difference
    assert "B spends less energy per speculative token" in result["headline"]
    # the control: one session without energy — no energy rows, and the note says which
    c = Session.load(FIXTURE)
    result = compare(a, c, names=("A", "C"))
    assert not [f for f in result["figures"] if f["key"].startswith("energy")]
    assert any("not available in C" in n for n in result["notes"])
