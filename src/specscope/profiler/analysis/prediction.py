"""The prediction the method is about, beside the ledger.

The summary's "predicted speedup" takes T_verify and T_draft as the means of the very rounds whose speed
it is compared with, so predicted ≈ measured is close to an accounting identity: it is the **ledger**.
The **prediction** uses only times measured apart from the speculative run — T_decode and T_verify(k+1)
from the verify curve's whole-graph forwards (``specscope roofline``, the Verify cost page, or
``run --roofline``), T_draft from draft steps timed on their own in the roofline's short instrumented run —
and takes from the run only its acceptance (E). Held against the end-to-end measurement, its error is
what the method can really promise; the ledger's error only shows what rollback, bookkeeping and the last
short round cost.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NotRequired, TypedDict

from specscope.profiler.session.records import Summary, Verdict
from specscope.profiler.analysis import round_model, stats
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.records import ComponentPrediction, ComponentSamples, RoundRest
from specscope.profiler.analysis.rounds import counts_for_acceptance, full_round, judged_rounds, measured_rounds


class GenuinePrediction(TypedDict):
    """The prediction from components timed apart, or from the verify curve (``prediction.genuine_prediction``):
    ``available`` False with ``why`` (and the inputs found so far), or the judged round model, the seed's division
    beside it, its error against the measured speedup, the error's interval and its verdict. Read by the summary,
    never written as it is (``division`` and ``model`` are objects)."""
    available: bool
    source: str | None                # "components" | "verify curve"; None: neither
    t_verify_ms: NotRequired[float]
    t_draft_ms: NotRequired[float]
    t_bookkeeping_ms: NotRequired[float | None]  # components only
    samples: NotRequired[ComponentSamples]
    cases_timed: NotRequired[int]
    why: NotRequired[str]             # not available: why
    model: NotRequired[round_model.RoundModel]
    speedup: NotRequired[float]
    division_speedup: NotRequired[float | None]
    division_error: NotRequired[float | None]
    untimed: NotRequired[list[str]]
    tokens_per_round: NotRequired[float]
    t_decode_ms: NotRequired[float]
    t_rollback_ms: NotRequired[float | None]
    speedup_with_rollback: NotRequired[float | None]
    rollback_share: NotRequired[float | None]
    error: NotRequired[float | None]
    error_ci: NotRequired[list[float] | None]
    error_corrected: NotRequired[float | None]   # --until decided: the error with its stopping bias taken out
    error_correction: NotRequired[str | None]    # ... and how (sequential.CORRECTION)
    unit: NotRequired[str | None]
    units: NotRequired[int]
    verdict: NotRequired[Verdict]
    error_with_rollback: NotRequired[float | None]
    draft_samples: NotRequired[list[list[float]] | None]
    rollback_untimed_counts: NotRequired[list[int]]


def for_session(session, summary: Summary) -> ComponentPrediction:
    """The prediction for a session (its stored roofline, its run's drafter) from its ``summarize``-d figures."""
    d = session.config.get("drafter")
    name = d.get("name") if isinstance(d, dict) else d
    return component_prediction(session.data.get("roofline"), summary, name)


def component_prediction(roof: dict | None, summary: Mapping[str, Any], drafter: str | None = None) -> ComponentPrediction:
    """``{"available": False, "why": …}`` or the prediction with its inputs and its error against the measured
    speedup. A prediction needs a curve point at k+1 positions and a draft time for the run's drafter at k.
    ``summary``: a session's ``Summary``, or as much of one as is known (``k``, ``tokens_per_round``, and the measured
    and ledger figures when there are any)."""
    k, E = summary.get("k"), summary.get("tokens_per_round")
    if not roof or not roof.get("curve"):
        return {"available": False, "why": "no verify cost measured for this session (Verify cost page, or run --roofline)"}
    if not k or E is None:
        return {"available": False, "why": "the run has no speculative rounds to take acceptance from"}
    pts = {p.get("positions"): p for p in roof["curve"]}
    if 1 not in pts or (k + 1) not in pts:
        return {"available": False, "why": f"the verify curve does not reach k+1 = {k + 1} positions"}
    div = roof.get("division") or {}
    if div.get("k") != k or div.get("t_draft_ms") is None:
        return {"available": False, "why": f"the verify-cost measurement timed no drafts at k = {k}"}
    if drafter and div.get("drafter") and div["drafter"] != drafter:
        return {"available": False, "why": f"draft steps were timed with {div['drafter']}, the run used {drafter}"}
    t_dec, t_ver, t_draft = pts[1]["whole_ms"], pts[k + 1]["whole_ms"], float(div["t_draft_ms"])
    # the verify curve times no rollback or bookkeeping: the round model names them untimed
    speedup = round_model.RoundModel(E, t_dec, t_ver, t_draft).speedup
    if speedup is None:
        return {"available": False, "why": "the verify curve's T_verify and T_draft cannot price a round (they sum to zero or less)"}
    measured = summary.get("measured_speedup")
    return {
        "available": True,
        "speedup": speedup,
        "t_decode_ms": t_dec,
        "t_verify_ms": t_ver,
        "t_draft_ms": t_draft,
        "tokens_per_round": E,
        "measured_speedup": measured,
        "error": stats.relative_error(speedup, measured) if measured else None,
        "ledger_speedup": summary.get("predicted_speedup"),
        "ledger_error": summary.get("prediction_error"),
    }


def prediction_text(pred: Mapping[str, Any]) -> str:
    """One line for the summary, the Division page and the reports."""
    if not pred.get("available"):
        return f"prediction from components measured apart: not available ({pred['why']})"
    err = pred.get("error")
    return (f"prediction from components measured apart: {pred['speedup']:.3f}× (T_decode {pred['t_decode_ms']:.2f} ms and "
            f"T_verify {pred['t_verify_ms']:.2f} ms from the verify curve, T_draft {draft_time_text(pred['t_draft_ms'], unit=' ms')} timed on its own, "
            f"E {pred['tokens_per_round']:.2f} from the run)"
            + (f"; error {err * 100:+.1f}% against the measured {pred['measured_speedup']:.3f}×" if err is not None else ""))


# -- the prediction a run makes by default: components timed apart per case ---------------------------------------

def measured_round_tuples(case: dict, k: int, judged: bool = False) -> list[tuple]:
    """The rounds a case's measured speed comes from, in order, as (tokens, ms, accepted, counted): end-to-end
    rounds where the case has them, else all (``judged``: only the full ones the prediction is judged against,
    ``rounds.judged_rounds``); ``counted``: a full round (k drafts) that acceptance counts."""
    rounds = judged_rounds(case, k) if judged else measured_rounds(case["spec"]["rounds"])
    return [(len(r["emitted"]), r["ms"], r["accepted"], full_round(r, k) and counts_for_acceptance(r))
            for r in rounds]


def _pooled(cases: list[dict], key: str) -> tuple[float | None, int]:
    xs = [x for c in cases for x in ((c.get("components") or {}).get(key) or []) if x is not None]
    return (math.fsum(xs) / len(xs) if xs else None), len(xs)


def histogram_weighted(cases: list[dict], key: str, hist, k: int) -> list[list[float]] | None:
    """Per case, its ``key`` samples (``draft_ms`` or ``bookkeeping_ms``, one per timed round) reweighted so that their
    plain mean is the mean at each earlier accepted count weighted by how often the run accepted that many (as the
    rollback is): x · w_a ÷ p_a, with p_a the share of samples timed after a and w_a the run's share of rounds that
    accepted a. Samples with no recorded count (older sessions) are kept as they are; None when no case has any."""
    per_case = []
    for c in cases:
        comp = c.get("components") or {}
        xs = comp.get(key)
        per_case.append((list(xs) if xs else [], list(comp.get("prior_accepted") or [])))
    if not any(xs for xs, _ in per_case):
        return None
    rounds = {int(a): n for a, n in (hist or {}).items() if n}
    total = sum(rounds.values())
    counted = [a for xs, prior in per_case if len(prior) == len(xs) for a in prior]
    if not total or not counted:
        return [[x for x in xs if x is not None] for xs, _ in per_case]
    share = {a: counted.count(a) / len(counted) for a in set(counted)}
    if any(a not in share for a in rounds):  # a count the run had was never timed: no reweighting can stand for it
        return [[x for x in xs if x is not None] for xs, _ in per_case]
    w = {a: rounds.get(a, 0) / total for a in share}
    return [[x * w[a] / share[a] for x, a in zip(xs, prior) if x is not None] if len(prior) == len(xs)
             else [x for x in xs if x is not None] for xs, prior in per_case]


def _mean_of(per_case: list[list[float]] | None) -> tuple[float | None, int]:
    xs = [x for xs in per_case or [] for x in xs]
    return (math.fsum(xs) / len(xs) if xs else None), len(xs)


def expected_rollback_ms(cases: list[dict], hist, k: int) -> tuple[float | None, list[int]]:
    """Rollback per round, timed apart, by the one rule (``round_model.expected_rollback_ms``): the mean rollback time
    at each accepted count weighted by how often the run accepted that many; (None, the counts) when a count the run
    had was never timed."""
    by_a: dict[int, list[float]] = {}
    for c in cases:
        for a, xs in ((c.get("components") or {}).get("rollback_ms") or {}).items():
            by_a.setdefault(int(a), []).extend(x for x in xs if x is not None)
    if not by_a:
        return None, []
    return round_model.expected_rollback_ms(by_a, hist, k)


class ComponentTerms(TypedDict):
    """The round's terms timed apart over some cases, at a histogram of accepted counts (``component_terms``)."""
    t_verify_ms: float | None
    t_draft_ms: float | None
    t_bookkeeping_ms: float | None
    t_rollback_ms: float | None
    rollback_untimed_counts: list[int]
    drafts: list[list[float]] | None
    books: list[list[float]] | None
    samples: ComponentSamples


def component_terms(cases: list[dict], hist, k: int) -> ComponentTerms:
    """T_verify, and T_draft, T_bookkeeping and T_rollback weighted by the accepted counts in ``hist``, from these cases'
    components timed apart: the session's cases at the run's histogram (the headline), or one case at its own (the
    case's prediction) — one rule for both."""
    t_verify, n_v = _pooled(cases, "verify_ms")
    # the draft's catch-up and the bookkeeping by the earlier round's accepted count, weighted by the histogram
    drafts, books = histogram_weighted(cases, "draft_ms", hist, k), histogram_weighted(cases, "bookkeeping_ms", hist, k)
    t_draft, n_d = _mean_of(drafts)
    t_book, n_b = _mean_of(books)
    t_rb, missing = expected_rollback_ms(cases, hist, k)
    return {"t_verify_ms": t_verify, "t_draft_ms": t_draft, "t_bookkeeping_ms": t_book, "t_rollback_ms": t_rb,
            "rollback_untimed_counts": missing, "drafts": drafts, "books": books,
            "samples": {"verify": n_v, "draft": n_d, "bookkeeping": n_b}}


def case_model(case: Mapping[str, Any], hist, k: int, tokens_per_round: float | None,
               t_decode_ms: float | None) -> round_model.RoundModel | None:
    """A case's own judged round model: its components timed apart, weighted by its own accepted counts, its E and its
    T_decode. None where the case timed no components or has no rounds or no plain decoding."""
    if not t_decode_ms or tokens_per_round is None or not case.get("components"):
        return None
    t = component_terms([dict(case)], hist, k)
    if t["t_verify_ms"] is None or t["t_draft_ms"] is None:
        return None
    return round_model.RoundModel(tokens_per_round, t_decode_ms, t["t_verify_ms"], t["t_draft_ms"], t["t_rollback_ms"],
                                  t["t_bookkeeping_ms"])


def genuine_prediction(session, cases: list[dict], acc: dict, hist, t_decode: float | None, spec_tok_s: float | None,
                       measured: float | None) -> GenuinePrediction:
    """The prediction of DESIGN §1 from components timed apart: T_decode from plain decoding, T_verify(k+1),
    T_draft(k) and the rollback (by the run's accepted counts) from each case's separate forwards, drafts and rollbacks,
    only E from the run. The judged figure is the round model (``round_model.RoundModel``: E · T_decode over verify +
    draft + rollback + bookkeeping, the draft and bookkeeping weighted by the run's accepted counts; a term a session did
    not time is said); the seed's bare division
    E · T_decode / (T_verify + T_draft) stays beside it (``division_speedup``). Its error's interval resamples E, the
    measured speed and the component timings together by unit, and its verdict can fail. Falls back to the verify curve (``run --roofline``) for sessions that timed no components; says
    why when neither exists."""
    from specscope.profiler.analysis.uncertainty import error_interval, prediction_units

    k = session.k
    E = acc.get("tokens_per_round")
    out: GenuinePrediction = {"available": False, "source": None}
    terms = component_terms(cases, hist, k)
    drafts, books = terms["drafts"], terms["books"]
    t_verify, t_draft = terms["t_verify_ms"], terms["t_draft_ms"]
    if t_verify is not None and t_draft is not None:
        out.update({"source": "components", "t_verify_ms": t_verify, "t_draft_ms": t_draft,
                    "t_bookkeeping_ms": terms["t_bookkeeping_ms"], "samples": terms["samples"],
                    "cases_timed": sum(1 for c in cases if c.get("components"))})
    else:
        curve = component_prediction(session.data.get("roofline"), {"k": k, "tokens_per_round": E}, _drafter(session))
        if not curve.get("available"):
            why = ("this session timed no components apart (recorded by an older specscope, or none measured yet): "
                   "it holds only the ledger")
            return {**out, "why": why if not session.data.get("roofline") else f"{why}; {curve['why']}"}
        out.update({"source": "verify curve", "t_verify_ms": curve["t_verify_ms"], "t_draft_ms": curve["t_draft_ms"]})
    if not t_decode or E is None:
        return {**out, "why": "the run has no plain decoding or no speculative rounds yet"}
    if out["t_verify_ms"] + out["t_draft_ms"] <= 0:
        # the draft is a paired difference (a round minus the verify before it): a verify spike on a busy machine can
        # drive its mean below minus the verify; no round can be priced from that, and none is printed
        return {**out, "why": (f"the components timed apart cannot price a round: T_verify {out['t_verify_ms']:.2f} ms "
                               f"and T_draft {out['t_draft_ms']:.2f} ms (a round minus the verify before it) sum to "
                               "zero or less, so the timings were disturbed (a busy machine); time more rounds "
                               "(--component-reps) on a quieter machine")}
    t_rb, rb_untimed = (terms["t_rollback_ms"], terms["rollback_untimed_counts"]) if out["source"] == "components" else (None, [])
    # the judged figure: the whole round as far as it was timed apart (round_model); the seed's bare division beside it
    model = round_model.RoundModel(E, t_decode, out["t_verify_ms"], out["t_draft_ms"], t_rb, out.get("t_bookkeeping_ms"))
    judged_speedup = model.speedup
    if judged_speedup is None:
        return {**out, "why": (f"the components timed apart cannot price a round: they sum to {model.round_ms:.2f} ms "
                               "(a busy machine); time more rounds (--component-reps) on a quieter machine")}
    with_rb = judged_speedup if t_rb is not None else None
    error = stats.relative_error(judged_speedup, measured)
    unit, units = prediction_units([{"rounds": measured_round_tuples(c, k, judged=True),
                                     "components": _round_rest(c.get("components"), d, b)}
                                    for c, d, b in zip(cases, _or_none(drafts, cases), _or_none(books, cases))],
                                   k) if out["source"] == "components" else (None, [])
    # as resampled (never stretched to hold the point estimate); the rollback term, timed apart, as a constant
    iv = error_interval(units, extra_ms=t_rb or 0.0) if units else None
    # --until decided: looked at after every case, each look's interval at the sequential level (analysis.sequential)
    from specscope.profiler.analysis import sequential

    cap = int(session.config.get("n_cases") or len(cases)) if session.config.get("until") == "decided" else None
    # the units a verdict counts toward MIN_UNITS: cases, or the round blocks (component blocks are the other source)
    n_units = sum(1 for u in units if not u.get("components_only"))
    verdict = sequential.looked_verdict(error, iv, unit or "", n_units, len(units) - 1, len(cases),
                                        session.config.get("max_tokens"), cap)
    # ... and the error with the bias of stopping at the first decided look taken out (None for other runs)
    corrected = (sequential.corrected_error(error, sequential.unit_errors(units, t_rb or 0.0), verdict.get("state"),
                                            cap) if cap is not None and error is not None and unit == "cases" else None)
    out["error_corrected"] = corrected
    out["error_correction"] = sequential.CORRECTION if corrected is not None else None
    out.update({
        "available": True, "model": model, "speedup": judged_speedup, "division_speedup": model.division,
        "division_error": stats.relative_error(model.division, measured), "untimed": model.untimed,
        "tokens_per_round": E, "t_decode_ms": t_decode, "t_rollback_ms": t_rb, "speedup_with_rollback": with_rb,
        "rollback_share": t_rb / (out["t_verify_ms"] + out["t_draft_ms"]) if t_rb is not None else None,
        "error": error, "error_ci": iv, "unit": unit, "units": n_units, "verdict": verdict,
        "error_with_rollback": stats.relative_error(with_rb, measured) if with_rb is not None else None,
        "draft_samples": drafts,  # per case, the draft samples T_draft is the mean of (its interval reads them)
        "rollback_untimed_counts": rb_untimed,  # accepted counts the run had whose rollback was never timed: no figure
    })
    return out


def _or_none(per_case: list[list[float]] | None, cases: list) -> list[list[float] | None]:
    return list(per_case) if per_case is not None else [None] * len(cases)


def _round_rest(comp: dict | None, drafts: list[float] | None, books: list[float] | None) -> RoundRest | None:
    """A case's components as the error's units read them: the verify samples, and per timed round what it adds to the
    verify (its draft and its bookkeeping, each weighted by the run's accepted counts); None for a case with none
    (an empty one too: the units read None and {} alike)."""
    if not comp:
        return None
    d = list(drafts if drafts is not None else comp.get("draft_ms") or [])
    if books and len(books) == len(d):
        d = [x + y for x, y in zip(d, books)]
    return {"verify_ms": comp.get("verify_ms") or [], "draft_ms": d}


def _drafter(session) -> str | None:
    d = session.config.get("drafter")
    return d.get("name") if isinstance(d, dict) else d
