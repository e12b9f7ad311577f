"""No negative time is ever printed: a barrier-free estimate or an inter-block overhead whose interval reaches
zero reads "below noise" in the CLI summary and the CSV (the app's views and the HTML report: tests/gui)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from specscope.profiler.renderers.csv_renderer import render as render_csv
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary_text import format_summary

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_v1_demo.json"  # negative inter-block overheads
NEGATIVE_NUMBER = re.compile(r"(?<![\w.])[-−]\d")


def noisy_session() -> Session:
    """The fixture (its inter-block overheads are negative: barriers cost more than they expose), with an
    output-head skip estimate of −3.3 ms whose spread over reps crosses zero, as a 2-case run measured it."""
    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    for c in d["cases"]:
        for side in ("decode", "verify"):
            b = c["breakdown"][side]
            b["skip_estimates"]["output_head"] = -3.3
            b["spread"] = {"inter_block_ms": [b["inter_block_ms"] - 2.0, b["inter_block_ms"] + 8.0],
                           "skip_estimates": {"output_head": [-5.1, 1.2], "moe": [b["skip_estimates"]["moe"] - 1,
                                                                                  b["skip_estimates"]["moe"] + 1]},
                           "whole_ms": [b["whole_ms"] - 1, b["whole_ms"] + 1]}
    return Session.from_dict(d)


def test_summary_text_shows_below_noise_never_a_negative_time():
    text = format_summary(noisy_session())
    section = text[text.index("where time goes"):]
    assert not NEGATIVE_NUMBER.search(section), section
    assert section.count("below noise") >= 3  # decode and verify inter-block, the output head's estimates
    moe = next(ln for ln in section.splitlines() if ln.strip().startswith("skipped: MoE"))
    assert "below noise" not in moe  # an estimate clear of zero is a time, with its spread


def test_an_older_session_without_spreads_still_never_prints_a_negative_time():
    text = format_summary(Session.load(FIXTURE))
    section = text[text.index("where time goes"):]
    assert not NEGATIVE_NUMBER.search(section) and "below noise" in section


def test_csv_writes_below_noise_for_an_overhead_inside_its_noise():
    rows = list(csv.DictReader(io.StringIO(render_csv(noisy_session()))))
    assert all(r["decode_inter_block_ms"] == "below noise" for r in rows)
    timed = [k for k in rows[0] if k.endswith("_ms")]
    for r in rows:
        for k in timed:
            assert not r[k].startswith("-"), (k, r[k])
    assert all(r["discarded"] == "false" for r in rows)


def test_trace_and_compare_say_below_noise_for_an_overhead_inside_its_noise():
    from specscope.profiler.analysis.compare import compare
    from specscope.profiler.renderers.trace import events

    s = noisy_session()
    evs = events(s)
    for ev in evs:
        v = (ev.get("args") or {}).get("inter_block_ms")
        assert not (isinstance(v, (int, float)) and v < 0), ev
        assert ev.get("dur", 0) >= 0
    assert any((ev.get("args") or {}).get("inter_block_ms") == "below noise" for ev in evs)
    rows = {r["key"]: r for r in compare(s, noisy_session())["breakdown"]}
    row = rows["decode.inter_block_ms"]
    assert row["a"] == row["b"] == "below noise" and row["delta"] is None and row["winner"] is None
    assert isinstance(rows["decode.whole_ms"]["a"], float)
