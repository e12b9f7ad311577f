"""`specscope compare`: deltas, winners, and a clear refusal across sampling regimes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.cli import main as cli
from specscope.profiler.analysis.compare import compare
from specscope.profiler.renderers.compare_html import compare_to_file
from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"


@pytest.fixture(scope="module")
def base():
    """The bundled session's 3 cases and the same 3 again a little slower (6 cases: a case is then the unit of every
    interval, and T_verify and T_draft have one; with 3 cases they have none)."""
    d = copy.deepcopy(Session.load(FIXTURE).data)
    again = copy.deepcopy(d["cases"])
    for i, c in enumerate(again):
        f = 1.03 + 0.01 * i
        c["id"] += "-again"
        c["plain"]["step_ms"] = [x * f for x in c["plain"]["step_ms"]]
        for r in c["spec"]["rounds"]:
            for key in ("ms", "verify_ms", "draft_ms"):
                if r.get(key) is not None:
                    r[key] *= f
        comp = c.get("components") or {}
        for key in ("verify_ms", "draft_ms"):
            comp[key] = [x * f for x in comp.get(key) or []]
    d["cases"] += again
    return Session.from_dict(d)


def _variant(s: Session, verify_scale=0.7, spec_rate=1.25, **config) -> Session:
    d = copy.deepcopy(s.data)
    for c in d["cases"]:
        for r in c["spec"]["rounds"]:
            if r.get("verify_ms") is not None:
                r["verify_ms"] *= verify_scale
            r["ms"] /= spec_rate  # the measured speed is the rounds' tokens over their time
        comp = c.get("components") or {}
        comp["verify_ms"] = [x * verify_scale for x in comp.get("verify_ms") or []]
        c["spec"]["repeats_tok_s"] = [x * spec_rate for x in c["spec"]["repeats_tok_s"]]
    d["config"].update(config)
    return Session.from_dict(d)


def _row(result, key, table="figures"):
    return next(r for r in result[table] if r["key"] == key)


def test_compare_names_deltas_and_winners(base):
    faster = _variant(base, verify_scale=0.3, spec_rate=2.5)
    r = compare(base, faster, names=("base", "faster"))
    assert r["acceptance_compared"] and r["same_regime"]
    v = _row(r, "t_verify_ms")
    assert v["delta"] == pytest.approx(v["b"] - v["a"]) and v["delta"] < 0
    assert v["a_ci95"][0] > v["b_ci95"][1]  # the intervals separate: a winner
    assert v["winner"] == "faster" and v["by"].endswith("lower") and v["judged"] == "intervals separate"
    m = _row(r, "measured_speedup")
    assert m["winner"] == "faster" and m["relative"] == pytest.approx(1.5, rel=1e-6)
    # a measured winner: the why-line names the round model's term without the point-estimate label
    assert r["why"]["measured_difference"] and r["why"]["cause"] == "verify"
    assert r["why"]["answer"].startswith("faster is faster than base")
    assert _row(r, "plain_tok_s")["winner"] == "tie"
    assert _row(r, "p")["winner"] == "tie"
    keys = {row["key"] for row in r["figures"]}
    for k in ("plain_tok_s", "spec_tok_s", "t_decode_ms", "t_verify_ms", "t_draft_ms", "p", "tokens_per_round",
              "predicted_speedup", "measured_speedup", "prediction_error", "break_even_verify_ms", "verify_multiple"):
        assert k in keys, k
    cats = {row["key"] for row in r["ratios"]}
    assert {"linear_attention", "full_attention", "moe", "output_head", "other", "whole"} <= cats
    assert "faster wins" in r["headline"]


def test_compare_names_no_winner_when_the_intervals_overlap(base):
    """A 1% faster verify on two short sessions: the values differ, their intervals overlap, so no winner is named.
    (1%: the bundled session, re-recorded on a quiet machine, tells a 5% verify change apart.)"""
    close = _variant(base, verify_scale=0.99, spec_rate=1.01)
    r = compare(base, close, names=("base", "close"))
    for key in ("t_verify_ms", "measured_speedup"):
        row = _row(r, key)
        assert row["a"] != row["b"] and row["a_ci95"] and row["b_ci95"]
        assert max(row["a_ci95"][0], row["b_ci95"][0]) <= min(row["a_ci95"][1], row["b_ci95"][1])  # they overlap
        assert row["winner"] == "tie" and row["judged"] == "intervals overlap" and row["by"] is None
    assert "no measurable difference" in r["headline"]
    # a figure with no interval on either side is never judged either
    assert _row(r, "break_even_verify_ms")["judged"] == "no interval"


def test_compare_html_shows_deltas(base, tmp_path):
    other = _variant(base, num_draft_tokens=2, max_tokens=48)
    out = tmp_path / "diff.html"
    compare_to_file(base, other, out, names=("k2-a", "k2-b<script>"))
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "<script>" not in text and "k2-b&lt;script&gt;" in text
    for needle in ("Summary figures", "Verify / decode ratio per block", "T_verify(k)", "Measured speedup",
                   "Δ (", "% lower", "MoE"):
        assert needle in text, needle
    assert "http://" not in text and "https://" not in text


def test_compare_json(base, tmp_path):
    out = tmp_path / "diff.json"
    compare_to_file(base, _variant(base), out, names=("a", "b"))
    d = json.loads(out.read_text())
    assert d["schema"] == "specscope.compare" and d["names"] == ["a", "b"]
    assert any(r["key"] == "measured_speedup" for r in d["figures"])


def test_compare_notes_different_k(base):
    d = copy.deepcopy(base.data)
    d["config"]["num_draft_tokens"] = 3
    r = compare(base, Session.from_dict(d), names=("k2", "k3"))
    assert any("Different k" in n for n in r["notes"])


def test_compare_refuses_acceptance_across_regimes(base, tmp_path):
    sampled = _variant(base, sampling={"temp": 0.7, "top_p": 0.9, "seed": 0, "regime": "temperature 0.7, top-p 0.9"})
    out = tmp_path / "diff.html"
    with pytest.raises(SpecscopeError) as exc:
        compare_to_file(base, sampled, out, names=("greedy-run", "sampled-run"))
    msg = str(exc.value)
    assert "sampling regimes" in msg and "greedy" in msg and "temperature 0.7" in msg
    assert not out.exists()
    # timings alone may still be compared, and the page says acceptance was left out
    r = compare(base, sampled, names=("g", "s"), timings_only=True)
    assert not r["acceptance_compared"]
    keys = {row["key"] for row in r["figures"]}
    assert "t_verify_ms" in keys and "p" not in keys and "measured_speedup" not in keys
    assert not r["acceptance_by_content_class"]
    compare_to_file(base, sampled, out, names=("g", "s"), timings_only=True)
    assert "Acceptance not compared" in out.read_text(encoding="utf-8")


def test_cli_compare(base, tmp_path, capsys):
    a, b = tmp_path / "before.json", tmp_path / "after.json"
    base.save(a)
    _variant(base).save(b)
    out = tmp_path / "diff.html"
    assert cli.main(["compare", str(a), str(b), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    # the two sessions are named by their file names, in the order given
    assert ">before</th>" in html and ">after</th>" in html and "Δ (after − before)" in html
    assert cli.main(["compare", str(a), str(b), "-o", str(out)]) != 0  # exists, no --force
    _variant(base, sampling={"temp": 1.0, "top_p": 1.0, "seed": 0, "regime": "temperature 1"}).save(b)
    rc = cli.main(["compare", str(a), str(b), "-o", str(tmp_path / "d2.html")])
    assert rc != 0
    assert "sampling regimes" in capsys.readouterr().err
