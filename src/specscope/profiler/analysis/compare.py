"""Compare two sessions: deltas of every summary figure and per-block ratio,
which one wins and by how much.

Acceptance (and everything that depends on it: tokens per round, speedups,
break-even) is only comparable within one sampling regime. Sessions measured
in different regimes are refused with a clear message; ``timings_only=True``
compares the timings alone and says so on the page.

``compare(a, b, names)`` returns a ``records.Comparison`` (a plain dict at run time; Qt-free); ``renderers.compare_html.compare_to_file``
writes it as HTML or JSON.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from specscope.errors import SpecscopeError

from specscope.profiler.analysis.by_block import compare_by_block
from specscope.profiler.analysis.intervals import noise_label
from specscope.profiler.analysis.records import ComparedFigure, Comparison, Judgement, SessionDescription, WhyFaster
from specscope.profiler.analysis.stats import LOW_SAMPLE_DRAFTED
from specscope.profiler.analysis.summary import BLOCK_LABELS, summarize
from specscope.profiler.analysis.why_faster import decompose, decompose_measured
from specscope.profiler.session.measured import EnergySummary
from specscope.profiler.session.records import drafter_label, engine_facts

# A winner is named only when the two sessions' 95% intervals separate; otherwise "no measurable difference".
INTERVALS = {"plain_tok_s": "plain_tok_s_ci95", "spec_tok_s": "spec_tok_s_ci95", "t_decode_ms": "t_decode_ms_ci95",
             "t_verify_ms": "t_verify_ms_ci95", "t_draft_ms": "t_draft_ms_ci95", "p": "p_ci95",
             "tokens_per_round": "tokens_per_round_ci95", "measured_speedup": "measured_speedup_ci95",
             "prediction_error": "prediction_error_ci"}
NO_DIFFERENCE = "no measurable difference"

# key, label, unit, which is better ("higher", "lower", "abs-lower", None), depends on acceptance
FIGURES = [
    ("plain_tok_s", "Plain decoding", "tok/s", "higher", False),
    ("spec_tok_s", "Speculative decoding", "tok/s", "higher", True),
    ("t_decode_ms", "T_decode (whole graph)", "ms", "lower", False),
    ("t_verify_ms", "T_verify(k)", "ms", "lower", False),
    ("t_draft_ms", "T_draft(k)", "ms", "lower", False),
    ("t_rollback_ms", "Rollback per round", "ms", "lower", False),
    ("verify_multiple", "Verify cost in plain steps", "×", "lower", False),
    ("p", "Acceptance p", "%", "higher", True),
    ("tokens_per_round", "Tokens per round E", "tokens", "higher", True),
    ("predicted_speedup", "Predicted speedup (timed apart)", "×", "higher", True),
    ("ledger_speedup", "Ledger (consistency check)", "×", None, True),
    ("measured_speedup", "Measured speedup", "×", "higher", True),
    ("prediction_error", "Prediction error", "%", "abs-lower", True),
    ("break_even_verify_ms", "Break-even T_verify", "ms", "higher", True),
    ("break_even_multiple", "Break-even (× T_decode)", "×", "higher", True),
    ("match_rate", "Greedy token match", "%", "higher", True),
]
BREAKDOWN_FIGURES = [
    ("whole_ms", "whole graph", "ms", "lower"),
    ("block_sum_ms", "sum of blocks", "ms", "lower"),
    ("inter_block_ms", "inter-block overhead", "ms", "lower"),
    ("barrier_distortion", "barrier distortion", "%", "abs-lower"),
]


BREAK_EVEN_KEYS = {"break_even_verify_ms", "break_even_multiple"}
OUT_OF_REACH = "out of reach"


def _vouched(side: Mapping[str, Any], key: str):
    """A breakdown figure, or "below noise" for an estimated time whose spread reaches zero (never a negative time)."""
    v = side.get(key)
    label = noise_label(v, (side.get("spread") or {}).get(key)) if key == "inter_block_ms" else None
    return label or v


def _judge(a, b, better, names, iva=None, ivb=None) -> Judgement:
    """Delta b − a, relative change, and the winner with how much it wins by. A winner only when both figures have
    an interval and the intervals do not overlap ("tie": no measurable difference, or no interval to judge by)."""
    out: Judgement = {"a": a, "b": b, "delta": None, "relative": None, "winner": None, "by": None, "a_ci95": iva, "b_ci95": ivb}
    if a is None or b is None:
        return out
    out["delta"] = b - a
    out["relative"] = (b - a) / abs(a) if a else None
    if better is None:
        return out
    if better == "abs-lower":
        va, vb, lower = abs(a), abs(b), True
    else:
        va, vb, lower = a, b, better == "lower"
    if not (iva and ivb):
        out["winner"], out["judged"] = "tie", "no interval"
        return out
    if better == "abs-lower":  # an error: which one's interval lies nearer zero, wholly
        da = 0.0 if iva[0] <= 0 <= iva[1] else min(abs(iva[0]), abs(iva[1]))
        db = 0.0 if ivb[0] <= 0 <= ivb[1] else min(abs(ivb[0]), abs(ivb[1]))
        separate = max(abs(ivb[0]), abs(ivb[1])) < da or max(abs(iva[0]), abs(iva[1])) < db
    else:
        separate = iva[1] < ivb[0] or ivb[1] < iva[0]
    if va == vb or not separate:
        out["winner"], out["judged"] = "tie", "intervals overlap"
        return out
    out["judged"] = "intervals separate"
    b_wins = (vb < va) if lower else (vb > va)
    w, l = (vb, va) if b_wins else (va, vb)
    out["winner"] = names[1] if b_wins else names[0]
    if w * l <= 0:  # opposite sides of zero (or zero): a relative margin would mean nothing
        return out
    if lower:
        # "x% lower" for times: the loser's value relative to the winner's
        out["by"] = f"{(l - w) / abs(l) * 100:.1f}% lower"
    else:
        out["by"] = f"{(w - l) / abs(l) * 100:.1f}% higher"
    return out


def _describe(session) -> SessionDescription:
    cfg = session.config
    env = session.data.get("environment") or {}
    model = session.data.get("model") or {}
    d = cfg.get("drafter") or {}
    return {
        "model": model.get("name"),
        "demo": bool(model.get("demo")),
        "demo_trained": isinstance(model.get("demo"), dict) and model["demo"].get("kind") == "trained",
        "device": f"{env.get('device_name', '?')} ({env.get('chip', '')})",
        "mlx": env.get("mlx"),
        "engine": engine_facts(cfg)["name"],  # whose speculative loop ran
        "drafter": drafter_label(cfg) if d else None,
        "drafter_kind": d.get("kind"),
        "what_if": session.what_if,
        "k": session.k,
        "regime": session.regime,
        "cases": len(session.cases),
        "max_tokens": cfg.get("max_tokens"),
        "status": session.status,
    }


def compare(a, b, names=("A", "B"), timings_only: bool = False) -> Comparison:
    names = tuple(names)
    if names[0] == names[1]:
        names = (f"{names[0]} (A)", f"{names[1]} (B)")
    sa, sb = summarize(a), summarize(b)
    same_regime = sa["regime"] == sb["regime"]
    if not same_regime and not timings_only:
        raise SpecscopeError(
            f"refusing to compare acceptance across sampling regimes: {names[0]} was measured {sa['regime']}, "
            f"{names[1]} {sb['regime']}. Acceptance, tokens per round, the speedups and the break-even all depend on "
            "the regime, so their deltas would mean nothing. Re-run one session in the other's regime "
            "(same temperature and top-p), or compare timings only."
        )
    accept_ok = same_regime
    figures = _figures(sa, sb, names, accept_ok) + energy_rows(sa["energy"], sb["energy"], names)
    ratios, breakdown = _breakdown_figures(sa.get("breakdown"), sb.get("breakdown"), names)
    da, db = _describe(a), _describe(b)
    m = next((f for f in figures if f["key"] == "measured_speedup"), None)
    winner = m if m and m["winner"] else next((f for f in figures if f["key"] == "t_verify_ms"), None)
    return {
        "schema": "specscope.compare",
        "schema_version": 1,
        "names": list(names),
        "sessions": {names[0]: da, names[1]: db},
        "same_regime": same_regime,
        "acceptance_compared": accept_ok,
        # correctness before speed: a session whose greedy output left plain decoding with a clear margin is wrong,
        # and its speed is no win
        "headline": correctness_line(sa, sb, names) + headline(winner, names) + energy_headline(figures, names),
        "correct": {names[0]: not sa.get("engine_faults"), names[1]: not sb.get("engine_faults")},
        # which term of the round model makes the faster one faster (acceptance is needed: same regime only)
        "why": _why(sa, sb, names, m, (a, b)) if accept_ok else None,
        "figures": figures,
        "ratios": ratios,
        "breakdown": breakdown,
        "acceptance_by_content_class": _by_content_class(sa, sb, names) if accept_ok else [],
        # where the two engines' verify forwards differ, block by block and per position count (analysis.by_block)
        "by_block": compare_by_block(a, b, names),
        "notes": _notes(sa, sb, da, db) + energy_notes(sa["energy"], sb["energy"], names),
    }


ENERGY_FIGURES: tuple[tuple[str, str, str, Callable[[EnergySummary], tuple[float | None, list[float] | None]]], ...] = (
    # key, label, unit, (figure, its interval): lower is better for each
    ("energy_plain_j_per_token", "Energy per token, plain", "J/token",
     lambda e: (e["plain"]["joules_per_token"], e["plain"]["joules_per_token_ci95"]) if e["plain"] else (None, None)),
    ("energy_spec_j_per_token", "Energy per token, speculative", "J/token",
     lambda e: (e["spec"]["joules_per_token"], e["spec"]["joules_per_token_ci95"]) if e["spec"] else (None, None)),
    ("energy_spec_j_per_accepted", "Energy per accepted draft", "J/token",
     lambda e: (e["spec"]["joules_per_accepted"], e["spec"]["joules_per_accepted_ci95"]) if e["spec"] else (None, None)),
    ("energy_ratio", "Energy ratio (speculative ÷ plain J/token)", "×", lambda e: (e["ratio"], e["ratio_ci95"])),
)


def energy_rows(ea: EnergySummary, eb: EnergySummary, names) -> list[ComparedFigure]:
    """The energy figures side by side, judged as the speeds are (a winner only where the intervals separate), when
    both sessions read energy from the same kind of counter; none otherwise (``energy_notes`` says why)."""
    if not (ea["available"] and eb["available"]) or ea["domain"] != eb["domain"]:
        return []
    rows: list[ComparedFigure] = []
    for key, label, unit, get in ENERGY_FIGURES:
        (a, iva), (b, ivb) = get(ea), get(eb)
        if a is None or b is None:
            continue
        rows.append({"key": key, "label": label if key == "energy_ratio" else f"{label} ({ea['domain']})", "unit": unit,
                     "better": "lower", **_judge(a, b, "lower", names, iva, ivb)})
    return rows


def energy_headline(figures: list[ComparedFigure], names) -> str:
    """" X spends less energy per speculative token …" when the intervals separate; "" otherwise."""
    row = next((f for f in figures if f["key"] == "energy_spec_j_per_token"), None)
    if not row or row["winner"] in (None, "tie"):
        return ""
    return f" {row['winner']} spends less energy per speculative token: {row['a']:.3f} vs {row['b']:.3f} J, {row['by']}."


def energy_notes(ea: EnergySummary, eb: EnergySummary, names) -> list[str]:
    if not ea["available"] and not eb["available"]:
        same = ea["reason"] == eb["reason"]
        return [f"Energy not compared: not available in either session ({ea['reason']}"
                + ("" if same else f"; {eb['reason']}") + ")."]
    for name, e in zip(names, (ea, eb)):
        if not e["available"]:
            return [f"Energy not compared: not available in {name} ({e['reason']})."]
    if ea["domain"] != eb["domain"]:
        return [f"Energy not compared: {names[0]} read the {ea['domain']} counter, {names[1]} the {eb['domain']} one."]
    return []


def _figures(sa, sb, names, accept_ok: bool) -> list[ComparedFigure]:
    """The headline figures side by side (``FIGURES``), those that need acceptance only in the same regime."""
    figures: list[ComparedFigure] = []
    for key, label, unit, better, needs_acc in FIGURES:
        if needs_acc and not accept_ok:
            continue
        if key == "match_rate" and not (sa["regime"] == "greedy" and sb["regime"] == "greedy"):
            continue
        ci = INTERVALS.get(key)
        row: ComparedFigure = {"key": key, "label": label, "unit": unit, "better": better,
               **_judge(sa.get(key), sb.get(key), better, names, sa.get(ci) if ci else None, sb.get(ci) if ci else None)}
        if key in BREAK_EVEN_KEYS:  # no verify time can pay: said in words, never a negative time, nothing subtracted
            for which, sm in (("a", sa), ("b", sb)):
                if sm.get("break_even_out_of_reach"):
                    row[which] = OUT_OF_REACH  # type: ignore[literal-required]
                    row.update({"delta": None, "relative": None, "winner": None, "by": None})
        figures.append(row)
    return figures


def _breakdown_figures(bda, bdb, names) -> tuple[list[ComparedFigure], list[ComparedFigure]]:
    """Where both sessions have a breakdown: each block's verify/decode ratio, and each phase's block times and
    figures (``BREAKDOWN_FIGURES``)."""
    ratios: list[ComparedFigure] = []
    breakdown: list[ComparedFigure] = []
    if not (bda and bdb):
        return ratios, breakdown
    cats = list(dict.fromkeys(list(bda["block_order"]) + list(bdb["block_order"])))
    for c in cats + ["whole"]:
        label = ((bdb.get("labels") or {}).get(c) or (bda.get("labels") or {}).get(c)
                 or BLOCK_LABELS.get(c, "Whole graph" if c == "whole" else c))
        ratios.append({"key": c, "label": label, "better": "lower",
                       **_judge(bda["ratios"].get(c), bdb["ratios"].get(c), "lower", names)})
    for side in ("decode", "verify"):
        for c in cats:
            label = (bda.get("labels") or {}).get(c) or BLOCK_LABELS.get(c, c)
            breakdown.append({"key": f"{side}.{c}", "label": f"{side}: {label}", "unit": "ms", "better": "lower",
                              **_judge(bda[side]["blocks"].get(c), bdb[side]["blocks"].get(c), "lower", names,
                                       _spread(bda[side], c), _spread(bdb[side], c))})
        for key, label, unit, better in BREAKDOWN_FIGURES:
            va, vb = _vouched(bda[side], key), _vouched(bdb[side], key)
            judged = _judge(None if isinstance(va, str) else va, None if isinstance(vb, str) else vb, better, names,
                            (bda[side].get("spread") or {}).get(key), (bdb[side].get("spread") or {}).get(key))
            judged["a"], judged["b"] = va, vb  # "below noise" is shown as such, and neither judged nor subtracted
            breakdown.append({"key": f"{side}.{key}", "label": f"{side}: {label}", "unit": unit, "better": better,
                              **judged})
    return ratios, breakdown


def _by_content_class(sa, sb, names) -> list[ComparedFigure]:
    """Acceptance per content class, side by side (same regime only)."""
    out: list[ComparedFigure] = []
    for c in sorted(set(sa["acceptance_by_content_class"]) | set(sb["acceptance_by_content_class"])):
        ca, cb = sa["acceptance_by_content_class"].get(c) or {}, sb["acceptance_by_content_class"].get(c) or {}
        out.append({"key": c, "label": c, "unit": "%", "better": "higher",
                    **_judge(ca.get("p"), cb.get("p"), "higher", names, ca.get("p_ci95"), cb.get("p_ci95"))})
    return out


def _notes(sa, sb, da, db) -> list[str]:
    """What the reader must know before trusting a delta: different regimes, k, models, machines, drafters."""
    notes = []
    accept_ok = sa["regime"] == sb["regime"]
    if not accept_ok:
        notes.append(f"Timings only: the sessions were measured in different sampling regimes ({sa['regime']} vs {sb['regime']}); "
                     "acceptance and every figure that depends on it are left out on purpose.")
    if da["k"] != db["k"]:
        notes.append(f"Different k ({da['k']} vs {db['k']}): T_verify and T_draft cover different numbers of positions, "
                     "and per-block ratios are relative to different position counts.")
    if da["model"] != db["model"]:
        notes.append("Different models: timing deltas mix the model and everything else.")
    if da["device"] != db["device"]:
        notes.append("Different machines: timing deltas mix hardware and everything else.")
    if da["what_if"] or db["what_if"]:
        notes.append("At least one session uses the oracle (what-if) drafter: its acceptance was chosen, not measured from a real drafter.")
    if da["demo"] or db["demo"]:
        from specscope.demo_labels import TRAINED_NOTE

        if all(d.get("demo_trained") for d in (da, db) if d["demo"]):
            notes.append(f"Demo model involved ({TRAINED_NOTE}).")
        else:
            notes.append("Synthetic demo model involved: timings real, text/acceptance not meaningful.")
    if (sa.get("low_sample") or sb.get("low_sample")) and accept_ok:
        notes.append(f"At least one session drafted fewer than {LOW_SAMPLE_DRAFTED} tokens: acceptance deltas are mostly noise.")
    return notes


def _why(sa, sb, names, measured_row, sessions) -> WhyFaster | None:
    """The why-line (``why_faster.decompose``), labelled as point estimates when the measured speedups do not differ
    measurably (a cause named for a difference nobody can vouch for would read as a finding). Where a session's
    engine does not report its round's parts (another engine's loop), the measured speedups are split instead, into
    acceptance and the whole cycle (``decompose_measured``): specscope's components time specscope's rounds, not the
    other engine's, so their terms would explain nothing about it."""
    whole = [n for n, s in zip(names, sessions)
             if "verify_ms" not in (engine_facts(s.config).get("reports") or ["verify_ms"])]
    if whole:
        d = decompose_measured(sa, sb, names, f"{' and '.join(whole)} do{'es' if len(whole) == 1 else ''} not report "
                                              "its round's parts: the cycle is compared whole")
    else:
        d = decompose(sa, sb, names)
    if d is None:
        return None
    d["measured_difference"] = bool(measured_row and measured_row["winner"] not in (None, "tie"))
    if not d["measured_difference"] and d["cause"] is not None:
        of = "the point estimates" if d.get("basis") == "measured" else "the round models' point estimates"
        d["answer"] = f"the measured speedups do not differ measurably; of {of}: " + d["answer"]
    return d


def _spread(side: Mapping[str, Any], block: str):
    """A breakdown block's spread over reps (its interval for a comparison), or None."""
    return ((side.get("spread") or {}).get("blocks") or {}).get(block)


def correctness_line(sa, sb, names) -> str:
    """"" when both sessions' outputs are right; else which is wrong and where, said before any speed."""
    wrong = []
    for name, s in zip(names, (sa, sb)):
        faults = s.get("engine_faults") or []
        if faults:
            f = faults[0]
            wrong.append(f"{name} is wrong: its greedy output left plain decoding at case {f['case']} position "
                         f"{f.get('position')} with a clear margin ({len(faults)} case{'s' if len(faults) != 1 else ''})")
    return ("; ".join(wrong) + ", so its speed is no win. ") if wrong else ""


def headline(row, names) -> str:
    if not row or row["winner"] is None:
        return "Not enough measurements to name a winner."
    if row["winner"] == "tie":
        return f"{row['label']}: {NO_DIFFERENCE} ({row['a']:.3f} vs {row['b']:.3f}; {row.get('judged', 'intervals overlap')})."
    what = "end-to-end speculative speedup" if row["key"] == "measured_speedup" else "verify time"
    return (f"{row['winner']} wins on {what}: {row['a']:.3f} ({names[0]}) vs {row['b']:.3f} ({names[1]}), "
            f"{row['by']}.")
