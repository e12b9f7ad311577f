"""Which term makes the faster one faster: the round model of two sessions (or engines) as a product of its terms.

The judged speedup of a session (``round_model``) is

    S = E · T_decode / (T_verify + T_draft + T_rollback + T_bookkeeping)
      = [E / (k+1)]  ·  [(k+1) · T_decode / T_verify]  ·  [1 / (1 + (T_draft + T_rollback + T_bookkeeping) / T_verify)]

— tokens per verified position, the verify's cost per position in plain steps (inverted), and what the round pays
beside its verify — so log(S_A ÷ S_B) is exactly the sum of the logs of the factors' ratios. The last factor's log
is shared among draft, rollback and bookkeeping in proportion to how much each one's share of the verify moved, so
every term has a signed part and the parts add up to the whole. The answer is the term with the largest part in the
direction of the difference. The position count (k+1) keeps two settings with different k honest: an engine that
guesses worse per position but verifies eight positions for the price of three still wins on verify cost, not
acceptance (the seed's account: acceptance 0.38 vs 0.51, 0.37 vs 1.92 plain steps a position, tested).

What the model does not explain — measured ratio against the model's — is reported as its own figure, never folded in.
"""

from __future__ import annotations

import math
from typing import Mapping, TypedDict

from specscope.profiler.analysis.records import WhyFaster, WhyTerm
from specscope.profiler.analysis.round_model import RoundModel, implied_round_ms

TERMS = (
    ("acceptance", "acceptance (tokens per verified position)"),
    ("verify", "verify cost per position"),
    ("draft", "drafting"),
    ("rollback", "rollback"),
    ("bookkeeping", "bookkeeping"),
)
LABELS = dict(TERMS)
NOTHING = 1e-3  # |log ratio| below this (0.1%): nothing to explain


class RoundFactors(TypedDict):
    """One side's round model as ``decompose`` splits it: E over the positions a round verifies, T_verify over them in
    units of T_decode, and the round's other terms in units of T_verify (``x_…``)."""
    E: float
    positions: float                  # k + 1
    t_decode: float
    t_verify: float
    x_draft: float
    x_rollback: float
    x_bookkeeping: float


def factors(s: Mapping) -> RoundFactors | None:
    """The terms of one summary's round model, or None when it lacks one that is needed (E, k, T_decode, T_verify) or
    its round cannot be priced. The round model's rules for a term: an untimed one counts as nothing, a negative one (a
    paired difference below its noise) is kept as timed, never floored."""
    E, k, t_dec, t_v = s.get("tokens_per_round"), s.get("k"), s.get("t_decode_ms"), s.get("t_verify_ms")
    if not E or not k or not t_dec or not t_v or t_v <= 0 or t_dec <= 0:
        return None
    rest = {key: float(s.get(f"t_{key}_ms") or 0.0) for key in ("draft", "rollback", "bookkeeping")}
    if RoundModel(float(E), float(t_dec), float(t_v), rest["draft"], rest["rollback"], rest["bookkeeping"]).speedup is None:
        return None
    return {"E": float(E), "positions": float(k) + 1.0, "t_decode": float(t_dec), "t_verify": float(t_v),
            "x_draft": rest["draft"] / float(t_v), "x_rollback": rest["rollback"] / float(t_v),
            "x_bookkeeping": rest["bookkeeping"] / float(t_v)}


def decompose_measured(a: Mapping, b: Mapping, names: tuple[str, str] = ("A", "B"), why_whole: str = "") -> WhyFaster | None:
    """For an engine that does not report its round's parts: the measured speedup as E/(k+1) times (k+1)·T_decode
    over the measured cycle (E · T_decode ÷ measured speedup), so log(S_A ÷ S_B) splits exactly into acceptance and the
    whole cycle's cost per position; its parts are not split (``why_whole`` says why)."""
    parts = {}
    for side in (a, b):
        E, k, t_dec, s = side.get("tokens_per_round"), side.get("k"), side.get("t_decode_ms"), side.get("measured_speedup")
        if not E or not k or not t_dec or not s:
            return None
    def cycle_per_position(x):  # ms a verified position costs, the whole cycle as measured
        return implied_round_ms(x["tokens_per_round"], x["t_decode_ms"], x["measured_speedup"]) / (x["k"] + 1)

    parts["acceptance"] = math.log((a["tokens_per_round"] / (a["k"] + 1)) / (b["tokens_per_round"] / (b["k"] + 1)))
    parts["cycle"] = math.log((cycle_per_position(b) / b["t_decode_ms"]) / (cycle_per_position(a) / a["t_decode_ms"]))
    total = sum(parts.values())
    labels = {"acceptance": LABELS["acceptance"], "cycle": "the whole cycle's cost per position"}
    terms: list[WhyTerm] = [{"key": key, "label": labels[key], "log": v,
                              "share": v / total if abs(total) >= NOTHING else None} for key, v in parts.items()]
    cause = _cause(terms, total)
    answer = _answer(terms, total, None, names, "measured")
    return {"names": list(names), "terms": terms, "log_ratio": total, "model_ratio": None,
            "measured_ratio": a["measured_speedup"] / b["measured_speedup"], "unexplained_log": None,
            "basis": "measured", "why_whole": why_whole, "cause": cause,
            "answer": answer + (f" ({why_whole})" if why_whole and cause else "")}


def model_speedup(f: RoundFactors) -> float:
    """The round model's speedup from one side's factors (``factors``)."""
    t_v = f["t_verify"]
    out = RoundModel(f["E"], f["t_decode"], t_v, f["x_draft"] * t_v, f["x_rollback"] * t_v, f["x_bookkeeping"] * t_v).speedup
    assert out is not None  # factors() returns None for a round that cannot be priced
    return out


def decompose(a: Mapping, b: Mapping, names: tuple[str, str] = ("A", "B")) -> WhyFaster | None:
    """log(S_A ÷ S_B) split over the terms (see the module); None when either side lacks the round model's inputs."""
    fa, fb = factors(a), factors(b)
    if fa is None or fb is None:
        return None
    parts = {
        "acceptance": math.log((fa["E"] / fa["positions"]) / (fb["E"] / fb["positions"])),
        # a cheaper verify per position makes A faster: the inverse of its cost, so a positive part favours A
        "verify": math.log((fb["t_verify"] / (fb["positions"] * fb["t_decode"]))
                           / (fa["t_verify"] / (fa["positions"] * fa["t_decode"]))),
    }
    xa = sum((fa["x_draft"], fa["x_rollback"], fa["x_bookkeeping"]))
    xb = sum((fb["x_draft"], fb["x_rollback"], fb["x_bookkeeping"]))
    rest = math.log((1.0 + xb) / (1.0 + xa))  # what the round beside its verify gives A (positive: A pays less)
    moved = {"draft": fb["x_draft"] - fa["x_draft"], "rollback": fb["x_rollback"] - fa["x_rollback"],
             "bookkeeping": fb["x_bookkeeping"] - fa["x_bookkeeping"]}
    total_moved = sum(moved.values())
    for t, d in moved.items():
        parts[t] = rest * d / total_moved if abs(total_moved) > 1e-15 else rest / 3.0
    total = sum(parts.values())
    model_ratio = model_speedup(fa) / model_speedup(fb)
    ma, mb = a.get("measured_speedup"), b.get("measured_speedup")
    measured_ratio = ma / mb if ma and mb else None
    terms: list[WhyTerm] = [{"key": key, "label": LABELS[key], "log": parts[key],
                              "share": parts[key] / total if abs(total) >= NOTHING else None} for key, _ in TERMS]
    # what the round model leaves of the measured ratio (its prediction errors): said apart, never shared out
    unexplained = math.log(measured_ratio) - total if measured_ratio else None
    return {"names": list(names), "terms": terms, "log_ratio": total, "model_ratio": model_ratio,
            "measured_ratio": measured_ratio, "basis": "round model", "unexplained_log": unexplained,
            "cause": _cause(terms, total),  # the term's key, None when there is nothing to explain
            "answer": _answer(terms, total, unexplained, names, "round model")}


def _cause(terms: list[WhyTerm], total: float) -> str | None:
    if abs(total) < NOTHING:
        return None
    sign = 1.0 if total > 0 else -1.0
    best = max(terms, key=lambda t: sign * t["log"])
    return best["key"] if sign * best["log"] > 0 else None


def _answer(terms: list[WhyTerm], total: float, un: float | None, names: tuple[str, str], basis: str) -> str:
    """The why-line: ``terms`` and ``total`` (log_ratio), ``un`` the unexplained log, ``basis`` the record's."""
    if abs(total) < NOTHING:
        return (f"{names[0]} and {names[1]} have the same round model (speedups within 0.1%): no term to name")
    faster, slower = (names[0], names[1]) if total > 0 else (names[1], names[0])
    key = _cause(terms, total)
    assert key is not None  # a nonzero total has a term on its side
    term = next(t for t in terms if t["key"] == key)
    ratio = math.exp(abs(total))
    basis = "measured" if basis == "measured" else "by the round model"
    share = term["share"]
    assert share is not None  # a nonzero total: every term has its share
    text = (f"{faster} is faster than {slower} ({ratio:.2f}× {basis}) mainly through {term['label']}: "
            f"{share * 100:.0f}% of log(speedup {names[0]} ÷ speedup {names[1]})")
    against = [t for t in terms if t["log"] * total < 0 and abs(t["log"]) >= 0.1 * abs(total)]
    if against:
        text += "; against it: " + ", ".join(f"{t['label']} ({(t['share'] or 0.0) * 100:+.0f}%)" for t in against)
    if un is not None and abs(un) >= 0.02:
        text += f"; the measured ratio differs from the model's by {math.expm1(un) * 100:+.1f}% (its prediction errors)"
    return text
