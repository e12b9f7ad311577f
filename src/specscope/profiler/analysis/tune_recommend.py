"""What ``specscope tune`` confirms and what it recommends: the settings worth an end-to-end check (each drafter's
best predicted k and its neighbours) and, once they are measured, the one recommendation (a win only when the
measured interval clears 1×)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specscope.drafter_kinds import DRAFTER_LABELS, WHAT_IF_DRAFTERS
from specscope.errors import SpecscopeError
from specscope.profiler.analysis.records import Recommendation
from specscope.profiler.analysis.tune_confirm import MIN_INTERVAL_REPS
from specscope.profiler.analysis.tune_trees import is_tree, setting_text

LABELS = DRAFTER_LABELS
WHAT_IF = set(WHAT_IF_DRAFTERS)


CONFIRM_CHOICES = ("decide", "best", "all")


def confirm_set(pred: dict[str, list[dict]], k_max: int, which: str = "decide", neighbours: int = 1) -> list[tuple[str, int]]:
    """(drafter, k) pairs to confirm: "decide" (the default), the best predicted setting of them all and its nearest
    rival (the next best predicted; a real drafter's before a what-if's; with tree settings tuned, the best of the
    other kind, tree or chain), the rest ranked from the trace and the timings alone; "best", each drafter's best predicted k and its neighbours; "all", every k."""
    if which == "decide":
        ranked = sorted(((r["predicted_speedup"], name, r["k"]) for name, rows in pred.items() for r in rows
                         if r.get("predicted_speedup") is not None),
                        key=lambda x: (x[1] in WHAT_IF, -x[0]))
        if not ranked:
            return []
        best, rest = ranked[0], ranked[1:]
        # with trees tuned beside chains the question is first "does a tree pay here": the rival is the best of the
        # other kind (a chain against the best tree, or a tree against the best chain), where there is one
        other = [r for r in rest if is_tree(r[1]) != is_tree(best[1]) and r[1] not in WHAT_IF]
        rival = other[:1] or rest[:1]
        return [(name, k) for _, name, k in [best] + rival]
    out = []
    for name, rows in pred.items():
        ks = sorted(r["k"] for r in rows)  # a chain's k = 1..K_max; a tree setting's budgets (``tune_trees``)
        if which != "all":
            at = ks.index(max(rows, key=lambda r: r["predicted_speedup"])["k"])
            ks = ks[max(0, at - neighbours): at + neighbours + 1]
        out += [(name, k) for k in ks]
    return out


def recommendation(rows: Sequence[Mapping[str, Any]], decision: Mapping[str, Any] | None = None) -> Recommendation:
    """The best measured real drafter's setting (the oracle only when nothing else ran), said with whether its order
    against the rival and its verdict are decided (``decision``: ``tune.decision``)."""
    measured = [r for r in rows if r.get("measured_speedup") is not None]
    if not measured:
        raise SpecscopeError("no confirmation run was measured")
    real = [r for r in measured if not r["what_if"]] or measured
    best = max(real, key=lambda r: r["measured_speedup"])
    who = setting_text(best["drafter"], best["k"])
    m, p = best["measured_speedup"], best["predicted_speedup"]
    mci = best.get("measured_ci95")
    # a win is a win only when the measured interval clears 1× (with no interval: too few repeats to say)
    shown = m > 1.0 and mci is not None and mci[0] > 1.0
    if shown:
        assert mci is not None  # a win is shown only with an interval
        text = (f"use {who}: {m:.2f}× measured ({mci[0]:.2f}–{mci[1]:.2f}, "
                       f"predicted {p:.2f}×)")
    elif m > 1.0:
        why = (f"its 95% interval {mci[0]:.2f}–{mci[1]:.2f} holds 1×" if mci else
               f"fewer than {MIN_INTERVAL_REPS} repeats cannot give an interval")
        text = (f"no k is shown to win: the best, {who}, measures {m:.2f}× (predicted "
                       f"{p:.2f}×), but {why}: plain decoding may be as fast")
    else:
        need = best["break_even_verify_ms"]  # None: out of reach (the round model breaks even at or below 0 ms)
        text = (f"no k wins here: the best, {who}, measures {m:.2f}× (predicted {p:.2f}×); "
                       + (f"it would need T_verify ≤ {need:.1f} ms (it is {best['t_verify_ms']:.1f} ms)" if need is not None and need > 0 else
                          "its draft alone costs more than the tokens it could save"))
    if best["what_if"]:
        text += " — a what-if: no real drafter took part"
    if decision and decision.get("pick"):
        text += (f". Decided: {decision['text']}" if decision.get("decided") else
                 f". Not decided within the repeats: {decision['text']}")
    return {"drafter": best["drafter"], "k": best["k"], "measured_speedup": m, "predicted_speedup": p,
            "predicted_ci95": best["predicted_ci95"], "measured_ci95": mci, "wins": shown, "what_if": best["what_if"],
            "t_verify_ms": best["t_verify_ms"], "break_even_verify_ms": best["break_even_verify_ms"], "text": text}
