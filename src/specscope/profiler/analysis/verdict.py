"""Plain-words verdicts and the three audit questions, shared by the CLI, GUI and reports."""

from __future__ import annotations


from specscope.profiler.session.records import Summary
from specscope.profiler.session.divergence import ROUNDING, divergence_message, logits_text
from specscope.profiler.analysis.formatting import fmt
from specscope.profiler.analysis.stats import LOW_SAMPLE_DRAFTED
from specscope.profiler.analysis.tree_text import round_priced, tree_acceptance_phrase, verify_width


# a run's interval resamples its cases: an offset they all share is beyond it (analysis.over_runs)
ONE_RUN_NOTE = ("its interval resamples this run's own cases or rounds: an offset they all share (the machine's state, the "
                "process) is not in it; `specscope verdict` judges several runs of one setting together")

def _pct(x: float) -> str:
    return f"{abs(x) * 100:.0f}%"


def acceptance_phrase(s: Summary) -> str:
    """An acceptance number never travels without its regime and sample size."""
    if s.get("tree"):
        return tree_acceptance_phrase(s)
    p, ci = s.get("p"), s.get("p_ci95")
    if p is None or ci is None:
        return "acceptance: no rounds measured"
    lo, hi = ci
    text = f"acceptance {p * 100:.1f}% (95% CI {lo * 100:.1f}–{hi * 100:.1f}%, {s['regime']}, {s['drafted']} drafted tokens)"
    if s.get("low_sample"):
        text += f" — fewer than {LOW_SAMPLE_DRAFTED} drafted tokens: treat as noise"
    if s.get("what_if"):
        text += " — oracle what-if, not a real drafter"
    return text


SAMPLED_NOTE = ("sampled regime: outputs differ by design; "
                "the accept/reject rule is tested for distribution equality")

def _more(items: list[dict]) -> str:
    if len(items) <= 1:
        return ""
    rest = [d["case"] for d in items[1:]]
    return f" — and {len(rest)} more case{'s' if len(rest) != 1 else ''} ({', '.join(rest[:5])}{', …' if len(rest) > 5 else ''})"


def engine_fault_line(s: Summary) -> str | None:
    faults = s.get("engine_faults") or []
    if not faults:
        return None
    return divergence_message(faults[0]["case"], faults[0]) + _more(faults)


def divergence_note(s: Summary) -> str | None:
    """Greedy runs: what the divergences from plain decoding were, or None when there were none."""
    if s.get("regime", "greedy") != "greedy":
        return None
    faults = s.get("engine_faults") or []
    if faults:
        return engine_fault_line(s)
    unchecked = s.get("unchecked_divergences") or []
    if unchecked:
        u = unchecked[0]
        return (f"case {u['case']} diverges from plain decoding at token {u['position']} and its margin was not measured "
                "(session from an older specscope): kernel rounding cannot be told from an engine fault" + _more(unchecked))
    ties = [d for d in (s.get("divergences") or []) if d.get("verdict") == ROUNDING]
    if ties:
        return divergence_message(ties[0]["case"], ties[0]) + _more(ties)
    return None


# what a session measured (its "measure") when it is not a run: no verdict to give, and the page that shows it
MEASURED = {"roofline": ("A verify cost measurement", "Verify cost"), "tune": ("A tune", "Tune"),
            "check": ("A check", "Checks"), "capture": ("A GPU capture", "Checks"), "bench": ("A benchmark", "Checks"),
            "memory_peak": ("A memory reading", "Checks")}


def measurement_headline(measure: str | None, status: str, there: str | None = None) -> str | None:
    """The headline of a session that is not a run (a page's measurement, a check, a benchmark): it has no verdict,
    and says where its figures are (``there``; by default the app's page that shows it). None for a run."""
    what = MEASURED.get(measure or "run")
    if what is None:
        return None
    return f"{what[0]} ({status}): no run here, so no verdict; {there or f'the {what[1]} page shows it'}."


def verdict(s: Summary) -> str:
    """The headline: the speed verdict, led by an engine fault when greedy output left plain decoding."""
    text = _speed_verdict(s)
    faults = s.get("engine_faults") or []
    if faults:
        d = faults[0]
        how = (f"with a clear margin ({logits_text(d['plain_lead'])} logits)" if d.get("plain_lead") is not None
               else f"with no margin to call it a near-tie ({d.get('reason') or 'not measured'})")
        return (f"Engine fault: speculative output diverged from plain decoding at case {d['case']} position {d.get('position')} "
                f"{how}{_more(faults)}. The speed figures measure a faulty engine — " + text)
    return text


def break_even_phrase(multiple: float | None, formula: str | None = None) -> str:
    """The break-even verify time in units of T_decode; None (or at or below zero) is out of reach, said with what the
    round's other terms take (``formula``: ``RoundModel.break_even_formula``), never a negative time."""
    if multiple is None or multiple <= 0:
        return (f"break-even is out of reach: {formula or 'E·T_decode − T_draft'} ≤ 0, so no verify, however fast, "
                "can pay")
    return f"break-even needs ≤ {multiple:.2f}× T_decode"


def break_even_text(s: Summary) -> str:
    """"T_verify ≤ 82.15 ms (≤ 1.29 × T_decode; E·T_decode − T_draft − T_rollback − T_bookkeeping)", or that no verify
    can break even (never a negative time)."""
    formula = s.get("break_even_formula") or "E·T_decode − T_draft"
    if s.get("break_even_out_of_reach"):
        return f"out of reach: {formula} ≤ 0"
    ms, mult = s.get("break_even_verify_ms"), s.get("break_even_multiple")
    if ms is None or mult is None:
        return "—"
    if ms <= 0:
        return f"out of reach: {formula} ≤ 0"
    return f"T_verify ≤ {ms:.2f} ms (≤ {mult:.2f} × T_decode; {formula})"


def _speed_verdict(s: Summary) -> str:
    m = s.get("measured_speedup")
    if m is None:
        return "No verdict yet: plain and speculative runs are still being measured."
    k = s["k"]
    head = f"Speculation {'wins' if m >= 1 else 'loses'} {_pct(m - 1)}"
    parts = []
    verify_multiple, break_even = s.get("verify_multiple"), s.get("break_even_multiple")
    if verify_multiple is not None:
        parts.append(f"verifying {verify_width(s)} costs {verify_multiple:.2f} plain steps")
    if break_even is not None or s.get("break_even_out_of_reach"):
        parts.append(break_even_phrase(break_even, s.get("break_even_formula")))
    text = head + (": " + "; ".join(parts) if parts else "") + "."
    if k == 1 and verify_multiple is not None and verify_multiple >= 2:
        text += " Verify costs two plain steps or more, so no drafter can win at k=1: only a cheaper verify can."
    pred = prediction_phrase(s)
    if pred:
        text += " " + pred[0].upper() + pred[1:] + "."
    if s.get("what_if"):
        text += " (oracle what-if drafter)"
    return text


def _signed_pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def prediction_error_text(s: Summary) -> str | None:
    """The prediction error with its interval, its level and method said: "+2.1% (95% bootstrap interval
    −3.0…+7.4%)"; after an ``--until decided`` stop the error corrected for it beside ("; +1.6% corrected for the
    sequential stop"); None when not measured."""
    err = s.get("prediction_error")
    if err is None:
        return None
    corrected = s.get("prediction_error_corrected")
    tail = f"; {_signed_pct(corrected)} corrected for the sequential stop" if corrected is not None else ""
    iv = s.get("prediction_error_ci")
    if not iv:
        return _signed_pct(err) + (f" ({tail[2:]})" if tail else "")
    hi = "+∞" if iv[1] == float("inf") else _signed_pct(iv[1])
    # cases: a percentile bootstrap over cases; round blocks: the delta method with Student's t (uncertainty.py)
    method = "bootstrap" if s.get("prediction_unit") == "cases" else "delta-method" if s.get("prediction_unit") else ""
    return f"{_signed_pct(err)} (95% {method + ' ' if method else ''}interval {_signed_pct(iv[0])}…{hi}{tail})"


def prediction_phrase(s: Summary) -> str | None:
    """The verdict on the prediction (components timed apart) against the measurement, by the one rule
    (``verdict_rule``): agrees, off, or too little data to judge (with what would decide it). None before anything is
    measured."""
    v = s.get("prediction_verdict") or {}
    if s.get("predicted_speedup") is None:
        why = s.get("prediction_unavailable")
        return f"no prediction ({why})" if why and s.get("measured_speedup") is not None else None
    if v.get("state") is None:
        return None
    if v["state"] == "too_little_data":
        head = "too little data to judge"
        return head + " the prediction" + v["text"][len(head):] if v["text"].startswith(head) else v["text"]
    if v["state"] == "agrees":
        return "the prediction " + v["text"]
    if v["state"] == "within_noise":  # a verdict stored by an older specscope, under its older rule
        return "the prediction was judged " + v["text"] + " (an older rule: its interval held zero)"
    return "the prediction is " + v["text"]


def prediction_short(s: Summary) -> str:
    """A tile-sized verdict with the judged interval as it is, its level said (bootstrap intervals are not symmetric,
    so never "±"): "agrees (+1.2%; 95% −0.9…+3.3%)", "off by +8.0% (99.8% +6.1…+9.9%)", "too little data (95% −9…+14%)",
    or "—"."""
    v = s.get("prediction_verdict") or {}
    state, iv = v.get("state"), v.get("interval")
    err = s.get("prediction_error")
    # the judged interval's level said: 95%, or the sequential level it was widened to (--until decided)
    level = f"{(v.get('level') or 0.95) * 100:.3g}%"  # as the verdict's text writes it
    span = f"{level} {iv[0] * 100:+.1f}…{iv[1] * 100:+.1f}%" if iv else None
    if state == "agrees" and err is not None and span:
        return f"agrees ({err * 100:+.1f}%; {span})"
    if state == "within_noise" and span:  # stored by an older specscope, under its older rule
        return f"within noise ({span}, older rule)"
    if state == "off" and err is not None and span:
        return f"off by {err * 100:+.1f}% ({span})"
    if state == "too_little_data":
        return f"too little data to judge ({level} {iv[0] * 100:+.0f}…{iv[1] * 100:+.0f}%)" if iv else "too little data to judge"
    return "—"


def ledger_text(s: Summary) -> str | None:
    """The same-round accounting, said as what it is: a consistency check, not a forecast."""
    if s.get("ledger_speedup") is None:
        return None
    res = s.get("ledger_residual")
    res_txt = f", residual {res * 100:+.1f}%" if res is not None else ""
    return (f"ledger {s['ledger_speedup']:.3f}×: rounds = draft + verify + rollback + bookkeeping{res_txt} "
            "(the run's own instrumented rounds: a consistency check, not a forecast)")


def model_formula(s: Summary, say_lacks: bool = True) -> str:
    """The judged figure's formula, with the terms it holds and (``say_lacks``) the ones it says it lacks: the round
    model's own (``RoundModel.formula``) where the summary has it."""
    f = s.get("prediction_formula")
    if f and s.get("predicted_speedup") is not None:
        return f if say_lacks or not f.endswith(" not timed)") else f[:f.rindex(" (")]
    if s.get("division_inputs") == "components" and s.get("t_rollback_ms") is not None:
        if s.get("t_bookkeeping_ms") is not None:
            return "E·T_decode / (T_verify + T_draft + T_rollback + T_bookkeeping)"
        lacks = " (T_bookkeeping, the round's work after the read-back, not timed apart in this session)" if (
            say_lacks and "t_bookkeeping_ms" in (s.get("prediction_untimed") or [])) else ""
        return f"E·T_decode / (T_verify + T_draft + T_rollback){lacks}"
    return "E·T_decode / (T_verify + T_draft)"


def rollback_term_text(s: Summary) -> str | None:
    """The seed's bare division as its own labelled figure beside the judged round model (what a user computes by hand
    from T_verify and T_draft), with the rollback the round model adds."""
    rb, share, div = s.get("t_rollback_ms"), s.get("rollback_share"), s.get("division_speedup")
    if rb is None or share is None or div is None or s.get("division_inputs") != "components":
        return None
    err = s.get("division_error")
    return (f"E·T_decode / (T_verify + T_draft) = {div:.3f}×" + (f" (error {err * 100:+.1f}%)" if err is not None else "")
            + f": by hand, without the rollback the round pays ({rb:.2f} ms, {share * 100:.1f}% of T_verify + T_draft, "
              "timed apart)" + (f" and its bookkeeping ({s['t_bookkeeping_ms']:.2f} ms)" if s.get("t_bookkeeping_ms")
                               is not None else ""))


def audit_answers(s: Summary) -> list[tuple[str, str]]:
    """The three questions to ask of any speculative-decoding benchmark, answered for this run."""
    q1 = (
        f"One verify of {verify_width(s)} costs {s['verify_multiple']:.2f} plain decode steps "
        f"(T_verify {s['t_verify_ms']:.2f} ms vs T_decode {s['t_decode_ms']:.2f} ms)."
        if s.get("verify_multiple") is not None
        else "Not measured yet."
    )
    cats = ", ".join(sorted(s.get("acceptance_by_content_class", {})))
    q2 = f"{acceptance_phrase(s)}; content classes: {cats or 'none'}."
    q3 = (
        f"End to end: {s['spec_tok_s']:.1f} vs {s['plain_tok_s']:.1f} tok/s on the same prompts and token budget "
        + (f"(measured {s['measured_speedup']:.3f}×; the division, from components timed apart, predicted "
           f"{s['predicted_speedup']:.3f}×)." if s.get("predicted_speedup") is not None
           else f"(measured {s['measured_speedup']:.3f}×; no prediction: {s.get('prediction_unavailable') or 'not available'}).")
        if s.get("measured_speedup") is not None
        else "Not measured yet."
    )
    return [
        ("How many plain steps does one verify round cost?", q1),
        ("What regime, length and content was acceptance measured on?", q2),
        ("Is the speed measured end to end or inferred?", q3),
    ]


def instrumentation_cost_text(s: Summary) -> str | None:
    """What timing draft, verify and rollback apart costs, as a percentage; None when the run has no
    end-to-end rounds. A negative figure (end-to-end rounds not faster) is noise, said as such, never a cost."""
    cost = s.get("instrumentation_cost")
    if cost is None:
        return None
    if cost <= 0:
        return "none measurable (end-to-end rounds were not faster: within noise)"
    return f"+{cost * 100:.1f}%"


def tail_text(s: Summary) -> str | None:
    """Why the prediction is judged against the full rounds, where some rounds drafted fewer than k (None if none)."""
    if not s.get("tail_tokens") or s.get("judged_measured_speedup") is None:
        return None
    return (f"the prediction prices {round_priced(s)}, so it is judged against the full rounds "
            f"({fmt(s['judged_measured_speedup'], '.3f', '×')}); near each case's end the engine drafts only the tokens "
            f"left, and those shorter rounds ({s['tail_tokens']} tokens, {fmt((s.get('tail_share') or 0) * 100, '.0f', '%')}"
            f" of the measured) are in the end-to-end figure only")
