"""The context sweep: the protocol at each context, same cases, same k, same drafter, one engine.

Order: the contexts are visited ``passes`` times, each pass the reverse of the one before (0, 1k, 4k, 16k, then
16k, 4k, 1k, 0), so a slow drift of the machine hits the small and the large contexts alike instead of
masquerading as a context effect; each visit's repeats continue the count, so a case's modes also alternate AB,
BA across visits. Each context is prefilled once, at its first visit (timed on its own: a ``context`` event), and
its caches stored; every case, both modes, the breakdown and the components start from a copy, and a revisit
reuses the stored caches (``engine_adapter.cache.context``).

Events: ``sweep_visit`` (context, visit, pass) before a visit's cases, ``sweep_visit_done`` after; between them the
usual case events, which ``Session`` folds into the point's own session (``session["sweep"]["points"]``). Per point
the figures (``point_figures``) are read off that session's summary, so every number is recomputed from the raw
measurements, as for a run.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.records import SweepPointFigures
from specscope.profiler.analysis.round_model import RoundModel
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.session.records import ContextFacts
from specscope.profiler.session.session import Session



def sweep_order(contexts: list[int], passes: int) -> list[int]:
    """0,1k,4k,16k with 2 passes: 0,1k,4k,16k,16k,4k,1k,0 (mirrored, so drift cancels to first order)."""
    base = sorted(contexts)
    out = []
    for p in range(passes):
        out += base if p % 2 == 0 else base[::-1]
    return out


# -- figures per point --------------------------------------------------------------------------------------------
def _share(part: Mapping[str, Any] | None, cat: str) -> float | None:
    blocks = (part or {}).get("blocks") or {}
    total = sum(v for v in blocks.values() if isinstance(v, (int, float)))
    v = blocks.get(cat)
    return v / total if isinstance(v, (int, float)) and total > 0 else None


def kv_bytes_per_step(model: Mapping[str, Any] | None, context: int) -> float | None:
    """Bytes the full-attention layers read per decode step for the context's positions: the model's KV bytes per
    token (``inspect_model.describe``: 2 x kv_heads x head_dim x dtype bytes per full-attention layer; a Gated
    DeltaNet state does not grow) x the context."""
    per = (model or {}).get("kv_cache_bytes_per_token")
    return None if not per else float(per) * context


def point_figures(sub: Session, context: int, facts: ContextFacts | None = None,
                  model: Mapping[str, Any] | None = None) -> SweepPointFigures:
    """One sweep point's figures from its own session (``sub``: a ``Session``) and its context facts."""
    sm = summarize(sub)
    bd = sm.get("breakdown")
    dec, ver = (bd["decode"], bd["verify"]) if bd else (None, None)  # an aggregate breakdown has both phases
    t_decode = sm.get("t_decode_ms")
    t_verify = sm.get("t_verify_ms")
    ratio = t_verify / t_decode if t_verify and t_decode else None
    return {
        "context": context,
        "cases": sm.get("cases_measured"),
        "plain_tok_s": sm.get("plain_tok_s"),
        "plain_tok_s_ci95": sm.get("plain_tok_s_ci95"),
        "spec_tok_s": sm.get("spec_tok_s"),
        "spec_tok_s_ci95": sm.get("spec_tok_s_ci95"),
        "t_decode_ms": t_decode,
        "t_verify_ms": t_verify,
        "t_draft_ms": sm.get("t_draft_ms"),
        "t_draft_ms_ci95": sm.get("t_draft_ms_ci95"),
        # the rest of the judged round, as the point's prediction priced it (None: untimed, named by the point's summary)
        "t_rollback_ms": sm.get("t_rollback_ms") if sm.get("division_inputs") == "components" else None,
        "t_bookkeeping_ms": sm.get("t_bookkeeping_ms") if sm.get("division_inputs") == "components" else None,
        "prediction_formula": sm.get("prediction_formula"),
        "verify_multiple": ratio,
        "full_attention_share_decode": _share(dec, "full_attention"),
        "full_attention_share_verify": _share(ver, "full_attention"),
        "blocks_decode": dec["blocks"] if dec else None,
        "blocks_verify": ver["blocks"] if ver else None,
        "kv_bytes_per_step": kv_bytes_per_step(model, context),
        "cache_bytes": (facts.get("kv_bytes") if facts else None) if context else 0,  # the stored context's caches, Gated DeltaNet state included
        "p": sm.get("p"),
        "p_ci95": sm.get("p_ci95"),
        "tokens_per_round": sm.get("tokens_per_round"),
        "tokens_per_round_ci95": sm.get("tokens_per_round_ci95"),
        "predicted_speedup": sm.get("predicted_speedup"),
        "measured_speedup": sm.get("measured_speedup"),
        "measured_speedup_ci95": sm.get("measured_speedup_ci95"),
        "break_even_verify_ms": sm.get("break_even_verify_ms"),
        "break_even_multiple": sm.get("break_even_multiple"),
        "break_even_out_of_reach": sm.get("break_even_out_of_reach"),
        "prefill_ms": facts.get("prefill_ms") if facts else None,
        "prefill_tok_s": facts.get("prefill_tok_s") if facts else None,
        "draft_prefill_ms": facts.get("draft_prefill_ms") if facts else None,
        "low_sample": sm.get("low_sample"),
    }


def sweep_figures(session: Session) -> list[SweepPointFigures]:
    """Every complete point of a session's sweep, smallest context first (each point's own session is read as the
    sweep's, of the same class; ``session_file`` writes these figures beside the session)."""
    sw = session.data.get("sweep") or {}
    out: list[SweepPointFigures] = []
    for pt in sorted(sw.get("points", []), key=lambda p: p["context"]):
        if not pt.get("complete"):  # a point is shown once all its visits are in
            continue
        sub = type(session)(pt["session"])
        if not any(c.get("complete") for c in sub.cases):
            continue
        out.append({**point_figures(sub, pt["context"], pt.get("prefill"), session.data.get("model")),
                    "visits": pt.get("visits", 0), "complete": pt.get("complete", False)})
    return out


def _f(x, fmt: str, none: str = "—") -> str:
    return none if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _size(n: int) -> str:
    return f"{n // 1024}k" if n and n % 1024 == 0 else str(n)


def format_sweep(rows: list[SweepPointFigures], session=None) -> str:
    """The sweep as a table (tok/s, T_verify/T_decode, full attention's share, acceptance, E, predicted vs
    measured, break-even, the context's own prefill), and what changed from the smallest to the largest context."""
    head = ("context", "plain tok/s", "spec tok/s", "T_dec ms", "T_ver/T_dec", "T_draft ms", "full-attn dec/ver",
            "p [95%]", "E", "pred ×", "meas × [95%]", "break-even", "prefill")
    lines = []
    for r in rows:
        ci: Sequence[float | None] = r.get("p_ci95") or [None, None]
        mci: Sequence[float | None] = r.get("measured_speedup_ci95") or [None, None]
        fa = f"{_f(r['full_attention_share_decode'] and 100 * r['full_attention_share_decode'], '.0f')}%/" \
             f"{_f(r['full_attention_share_verify'] and 100 * r['full_attention_share_verify'], '.0f')}%"
        pre = "—" if not r["context"] else f"{_f((ms := r.get('prefill_ms')) and ms / 1000, '.1f')} s"
        lines.append((_size(r["context"]), _f(r["plain_tok_s"], ".2f"), _f(r["spec_tok_s"], ".2f"), _f(r["t_decode_ms"], ".1f"),
                      _f(r["verify_multiple"], ".2f"), draft_time_text(r["t_draft_ms"], spec=".1f"), fa,
                      f"{_f(r['p'], '.2f')} [{_f(ci[0], '.2f')}–{_f(ci[1], '.2f')}]", _f(r["tokens_per_round"], ".2f"),
                      _f(r["predicted_speedup"], ".2f"), f"{_f(r['measured_speedup'], '.2f')} [{_f(mci[0], '.2f')}–{_f(mci[1], '.2f')}]",
                      "out of reach" if r.get("break_even_out_of_reach") else f"{_f(r['break_even_multiple'], '.2f')}×T_dec", pre))
    widths = [max(len(h), *(len(x[i]) for x in lines)) if lines else len(h) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    out += ["  ".join(x.rjust(w) for x, w in zip(line, widths)) for line in lines]
    verdict = dominant_effect(rows)
    if verdict:
        out += ["", verdict]
    return "\n".join(out)


def dominant_effect(rows: list[SweepPointFigures]) -> str:
    """Which effect moves the predicted speedup most from the smallest to the largest context: the verify cost
    (T_verify / T_decode), the acceptance (E), or the rest of the round (draft, rollback and bookkeeping over T_decode).
    From the round model: speedup = E / (T_verify/T_decode + rest/T_decode), so each term's change is read as a
    log-ratio (the rest as timed, negative parts included: the round model's rule)."""
    ok = [m for m in (_model(r) for r in rows) if m is not None]
    if len(ok) < 2:
        return ""
    (ra, a), (rb, b) = ok[0], ok[-1]

    def rest(m: RoundModel) -> float:
        return m.rest_ms / m.t_decode_ms

    def cost(m: RoundModel) -> float:
        return (m.verify_multiple or 0.0) + rest(m)

    mid = (b.verify_multiple or 0.0) + rest(a)  # b's verify with a's rest
    if cost(a) <= 0 or cost(b) <= 0 or mid <= 0:
        return ""
    terms = {
        "acceptance (E)": math.log(b.tokens_per_round / a.tokens_per_round),
        "verify cost (T_verify/T_decode)": -math.log(mid / cost(a)),
        "draft, rollback and bookkeeping (/T_decode)": -math.log(cost(b) / mid),
    }
    top = max(terms, key=lambda t: abs(terms[t]))
    parts = ", ".join(f"{t} {math.exp(v) - 1:+.0%}" for t, v in terms.items())
    td = b.t_decode_ms / a.t_decode_ms - 1
    return (f"from {_size(ra['context'])} to {_size(rb['context'])} of context: plain decode {td:+.0%} slower per token; "
            f"effect on the predicted speedup — {parts}; dominant: {top}.")


def _model(r: SweepPointFigures) -> tuple[SweepPointFigures, RoundModel] | None:
    """A sweep point's round model (``RoundModel.from_summary`` on its figures), with the point."""
    m = RoundModel.from_summary(r)
    return (r, m) if m is not None and m.t_decode_ms > 0 and m.tokens_per_round > 0 else None


def point_break_even_text(r: Mapping[str, Any], unit: str = "× T_dec.") -> str:
    """A sweep point's break-even T_verify as a multiple of T_decode; "out of reach" where the whole round's other terms
    alone reach E·T_decode (``break_even_out_of_reach``; for a point's figures without the flag, a priced round with no
    break-even); "—" where nothing was priced."""
    reach = r.get("break_even_out_of_reach")
    if reach is None:
        reach = r.get("break_even_multiple") is None and all(
            r.get(x) is not None for x in ("tokens_per_round", "t_decode_ms", "t_verify_ms", "t_draft_ms"))
    if reach:
        return "out of reach"
    return f"≤ {r['break_even_multiple']:.2f}{unit}" if r.get("break_even_multiple") is not None else "—"


def draft_is_noise(r: Mapping[str, Any]) -> bool:
    """T_draft below zero: an in-round draft time is a round less the verify timed before it, so noise (or a verify
    timed apart that ran slower than inside the round) can make it negative. Shown as it is, marked as noise."""
    v = r.get("t_draft_ms")
    return isinstance(v, (int, float)) and v < 0


def sweep_status(session) -> str:
    """"context sweep: 4 contexts × 3 cases" (a sweep's top level has no cases of its own; its points do)."""
    sw = session.data.get("sweep") or {}
    pts = sw.get("points") or []
    contexts = sw.get("contexts") or [p["context"] for p in pts]
    done = sum(1 for p in pts if p.get("complete"))
    cases = (session.config or {}).get("n_cases") or (session.config or {}).get("cases") or "?"
    text = f"context sweep: {len(contexts)} context{'' if len(contexts) == 1 else 's'} × {cases} cases"
    return text if done >= len(contexts) else f"{text} ({done}/{len(contexts)} contexts in)"


def sweep_verdict(rows: list[SweepPointFigures], where: str = "on the Context page") -> str:
    """The headline of a sweep: there is no single verdict, there is one per context. Says where speculation wins or
    loses (measured), from the smallest to the largest context."""
    if not rows:
        return f"Context sweep: no context complete yet; the verdict is per context, {where}."
    meas = [(r["context"], m) for r in rows if (m := r.get("measured_speedup")) is not None]
    head = f"Context sweep ({', '.join(_size(r['context']) for r in rows)}): the verdict is per context, {where}."
    if not meas:
        return head
    wins = [c for c, m in meas if m >= 1]
    if not wins:
        how = "speculation loses at every context"
    elif len(wins) == len(meas):
        how = "speculation wins at every context"
    else:
        how = "speculation wins at " + ", ".join(_size(c) for c in wins) + " and loses elsewhere"
    (c0, m0), (c1, m1) = meas[0], meas[-1]
    tail = f"measured {m0:.2f}× at {_size(c0)}" + (f", {m1:.2f}× at {_size(c1)}" if c1 != c0 else "")
    return f"{head} {how[0].upper() + how[1:]}: {tail}."
