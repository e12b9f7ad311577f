"""One promise, one model: every surface that predicts a speedup prices the whole round with ``round_model.RoundModel``,
and the formula is written in that module only.

- One set of timings gives one number on every surface (the calculator, the roofline, the why-line, a sweep point, the
  session's headline and each case).
- A session whose rollbacks were timed dearer predicts a lower speedup: the headline and every case.
- No module but ``round_model`` writes E·T_decode over a sum of terms.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import specscope
from specscope.profiler.analysis import prediction, why_faster
from specscope.profiler.analysis.roofline import build_roofline
from specscope.profiler.analysis.round_model import RoundModel
from specscope.profiler.analysis.summary import session_case_stats, summarize, summary_cases
from specscope.profiler.cli.main import main
from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"
TERMS = {"tokens_per_round": 1.83, "t_decode_ms": 24.6, "t_verify_ms": 69.7, "t_draft_ms": 13.1,
         "t_rollback_ms": 1.3, "t_bookkeeping_ms": 0.4}
ONE = RoundModel(**TERMS).speedup  # 1.83 · 24.6 / 84.5


def test_the_model_prices_the_whole_round():
    assert ONE == pytest.approx(1.83 * 24.6 / (69.7 + 13.1 + 1.3 + 0.4))
    m = RoundModel(**TERMS)
    assert m.division == pytest.approx(1.83 * 24.6 / (69.7 + 13.1))  # the seed's, labelled apart
    assert m.break_even_verify_ms == pytest.approx(1.83 * 24.6 - 13.1 - 1.3 - 0.4)
    cheap = m.what_if(t_verify_ms=30.0)
    assert cheap.curve([cheap.break_even_alpha(2)], 2)[0] == pytest.approx(1.0)  # the break-even α: the curve at 1
    assert m.break_even_alpha(2) is None  # 3.43 plain steps a round: no α can pay at k = 2
    assert m.what_if(t_rollback_ms=None).untimed == ["t_rollback_ms"]
    assert "T_rollback not timed" in m.what_if(t_rollback_ms=None).formula
    assert RoundModel(1.5, 10.0, 5.0, -6.0).speedup is None  # a round of no cost cannot be priced, never negative


def test_one_set_of_timings_gives_one_number_on_every_surface(capsys):
    t = TERMS
    # the calculator
    assert main(["predict", "--t-decode-ms", str(t["t_decode_ms"]), "--t-verify-ms", str(t["t_verify_ms"]),
                 "--t-draft-ms", str(t["t_draft_ms"]), "--t-rollback-ms", str(t["t_rollback_ms"]),
                 "--t-bookkeeping-ms", str(t["t_bookkeeping_ms"]), "--accept", "0.55,0.28", "--json"]) == 0
    calc = json.loads(capsys.readouterr().out)
    assert calc["predicted_speedup"] == pytest.approx(ONE)
    # the roofline's "now": its curve's T_decode and T_verify(3), the short run's E, draft, rollback and bookkeeping
    curve = {"context": 40, "points": [
        {"positions": 1, "whole_ms": t["t_decode_ms"], "blocks": {"moe": 12.0}, "inter_block_ms": 4.0},
        {"positions": 3, "whole_ms": t["t_verify_ms"], "blocks": {"moe": 40.0}, "inter_block_ms": 8.0}]}
    costs = {n: {"moe": {"weight_bytes": 50e6, "other_bytes": 0, "flops": 1e9 * n, "distinct_experts": 4.0}} for n in (1, 3)}
    machine = {"bandwidth_gbs": 10.0, "peak_tflops": 1.0, "chip": "unknown", "nominal_bandwidth_gbs": None,
               "nominal_tflops": None, "device": "cpu"}
    division = {"drafter": "mtp", "k": 2, "tokens_per_round": t["tokens_per_round"], "t_draft_ms": t["t_draft_ms"],
                "t_rollback_ms": t["t_rollback_ms"], "t_bookkeeping_ms": t["t_bookkeeping_ms"]}
    roof = build_roofline(curve, costs, machine, k=2, division=division)
    assert roof["speedup_now"] == pytest.approx(ONE)
    # the why-line's model of one side
    side = {**t, "k": 2}
    assert why_faster.model_speedup(why_faster.factors(side)) == pytest.approx(ONE)
    # a summary (a session's, a sweep point's, a tune row's) read back into the model
    assert RoundModel.from_summary({**t, "division_inputs": "components"}).speedup == pytest.approx(ONE)


def _rollback_times(session: Session, factor: float) -> Session:
    s = copy.deepcopy(session)
    for c in s.cases:
        for xs in ((c.get("components") or {}).get("rollback_ms") or {}).values():
            xs[:] = [x * factor for x in xs]
    return s


def test_headline_and_each_case_are_one_model_of_their_components():
    session = Session.load(str(FIXTURE))
    s = summarize(session)
    assert s["predicted_speedup"] == pytest.approx(RoundModel.from_summary(s).speedup)
    for c in summary_cases(session):
        st = session_case_stats(session, c)
        hist: dict[int, int] = {}
        for r in prediction.measured_round_tuples(c, session.k):
            if r[3]:
                hist[r[2]] = hist.get(r[2], 0) + 1
        m = prediction.case_model(c, hist, session.k, st["acceptance"]["tokens_per_round"], st["t_decode_ms"])
        assert m is not None and m.t_rollback_ms is not None and m.t_rollback_ms > 0
        assert st["predicted_speedup"] == pytest.approx(m.speedup)
        assert st["division_speedup"] == pytest.approx(m.division) and st["division_speedup"] > st["predicted_speedup"]


def test_dearer_rollbacks_lower_the_headline_and_every_case():
    session = Session.load(str(FIXTURE))
    before = summarize(session)
    dear = _rollback_times(session, 10.0)
    after = summarize(dear)
    assert after["predicted_speedup"] < before["predicted_speedup"]
    assert after["break_even_verify_ms"] < before["break_even_verify_ms"]
    for c_old, c_new in zip(summary_cases(session), summary_cases(dear)):
        old, new = session_case_stats(session, c_old), session_case_stats(dear, c_new)
        assert new["predicted_speedup"] < old["predicted_speedup"], c_old["id"]
        assert new["division_speedup"] == pytest.approx(old["division_speedup"])  # the seed's division has no rollback


# E·T_decode over something, or E·T_decode less something: the model's formula and its break-even
FORMULA = re.compile(r"(\b(E|E_k|tokens_per_round|e_k)\b[\w\[\]\"'.]*\s*\*\s*[\w\[\]\"'.]*t_dec\w*[\w\[\]\"'.]*\s*[/-])"
                     r"|(t_dec\w*[\w\[\]\"'.]*\s*\*\s*[\w\[\]\"'.]*\b(E|E_k|tokens_per_round)\b[\w\[\]\"'.]*\s*[/-])")


def test_the_formula_is_written_once():
    root = Path(specscope.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "round_model.py":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if '"""' in line or code.strip().startswith(("f\"", "\"", "'")):
                continue  # prose (docstrings, labels) may name the formula
            if FORMULA.search(code):
                offenders.append(f"{path.relative_to(root)}:{i}: {line.strip()}")
    assert not offenders, "the round model's formula written outside round_model.py:\n" + "\n".join(offenders)
