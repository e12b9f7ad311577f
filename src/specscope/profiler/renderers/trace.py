"""Chrome trace-event JSON (``.trace.json``) for Perfetto's UI or chrome://tracing.

Layout: one process per case, laid out one after another on a single time
axis (plain run, then the speculative run, then the breakdown passes); a context sweep's
cases follow, one process per context and case ("context 4k · case …"). Threads:

  1 plain        prefill, then one slice per decode step
  2 speculative  prefill, then one slice per round, with draft / verify /
                 rollback (and the unaccounted rest) nested inside it; a tree
                 run's rounds ("tree round") carry the tree's nodes, depth,
                 nodes per depth and accepted path length
  3 breakdown    one instrumented decode pass and one instrumented verify pass,
                 each split into its per-block sums (in block
                 order; the real blocks interleave layer by layer), plus
                 the inter-block overhead where the whole graph is longer

Times are the measured wall times in microseconds; gaps between phases are not
measured and are drawn as a small fixed spacing.
"""

from __future__ import annotations

import json

from specscope.profiler.analysis.intervals import noise_label
from specscope.profiler.analysis.summary import BLOCK_LABELS
from . import redact
from .records import TraceEvent, TraceMeta, TraceSpan

GAP_US = 1000.0  # spacing between phases that were not timed back to back

PLAIN, SPEC, BREAKDOWN = 1, 2, 3
THREADS = {PLAIN: "plain decoding", SPEC: "speculative decoding", BREAKDOWN: "breakdown (barrier-timed blocks)"}


def _us(ms) -> float:
    return round(max(float(ms or 0.0), 0.0) * 1000.0, 3)


def _x(name, cat, ts, dur, pid, tid, args=None) -> TraceSpan:
    ev: TraceSpan = {"name": name, "cat": cat, "ph": "X", "ts": round(ts, 3), "dur": round(max(dur, 0.0), 3), "pid": pid, "tid": tid}
    if args:
        ev["args"] = args
    return ev


def _meta(name, pid, tid, args) -> TraceMeta:
    return {"name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _label(bd: dict, cat: str) -> str:
    return (bd.get("labels") or {}).get(cat) or BLOCK_LABELS.get(cat, cat)


def _pass(events, bd, side, title, t, pid) -> float:
    """One instrumented forward pass split into its blocks; returns its end time."""
    d = bd.get(side) or {}
    blocks = d.get("blocks") or {}
    inter = d.get("inter_block_ms")
    label = noise_label(inter, (d.get("spread") or {}).get("inter_block_ms"))
    if label:
        inter = None  # an overhead within noise, or a ruler bias, is no span to draw, and no time to print
    total = sum(_us(v) for v in blocks.values()) + (_us(inter) if inter and inter > 0 else 0.0)
    args = {
        "positions": d.get("positions"),
        "whole_graph_ms": d.get("whole_ms"),
        "sum_of_blocks_ms": d.get("block_sum_ms"),
        "instrumented_ms": d.get("instrumented_ms"),
        "inter_block_ms": inter if inter is not None else label,
        "barrier_distortion": d.get("barrier_distortion"),
    }
    events.append(_x(title, "breakdown", t, total, pid, BREAKDOWN, args))
    cur = t
    for cat, ms in blocks.items():
        dur = _us(ms)
        a = {"ms": ms}
        est = (d.get("skip_estimates") or {}).get(cat)
        if est is not None:
            a["without_barriers_estimate_ms"] = est
        events.append(_x(_label(bd, cat), "block", cur, dur, pid, BREAKDOWN, a))
        cur += dur
    if inter and inter > 0:
        events.append(_x(BLOCK_LABELS["inter_block"], "block", cur, _us(inter), pid, BREAKDOWN, {"ms": inter}))
        cur += _us(inter)
    return t + total


def _all_cases(session) -> list[tuple[str, dict]]:
    """The run's cases, then a context sweep's, point by point (smallest context first), each named by its context."""
    out = [("", c) for c in session.cases]
    for pt in sorted((session.data.get("sweep") or {}).get("points") or [], key=lambda p: p.get("context", 0)):
        n = pt.get("context", 0)
        size = f"{n // 1024}k" if n and n % 1024 == 0 else str(n)
        out += [(f"context {size} · ", c) for c in (pt.get("session") or {}).get("cases") or []]
    return out


def events(session) -> list[TraceEvent]:
    evs: list[TraceEvent] = []
    t = 0.0
    for idx, (where, c) in enumerate(_all_cases(session)):
        pid = idx + 1
        evs.append(_meta("process_name", pid, 0, {"name": f"{where}case {c['id']} ({c.get('content_class', '')})"}))
        evs.append(_meta("process_sort_index", pid, 0, {"sort_index": pid}))
        for tid, name in THREADS.items():
            evs.append(_meta("thread_name", pid, tid, {"name": name}))
            evs.append(_meta("thread_sort_index", pid, tid, {"sort_index": tid}))

        plain, spec = c["plain"], c["spec"]
        # plain run
        if plain.get("prefill_ms") is not None:
            d = _us(plain["prefill_ms"])
            evs.append(_x("prefill", "plain", t, d, pid, PLAIN, {"ms": plain["prefill_ms"], "prompt_tokens": len(c.get("prompt_tokens") or [])}))
            t += d
        for i, ms in enumerate(plain.get("step_ms", [])):
            d = _us(ms)
            evs.append(_x("decode step", "plain", t, d, pid, PLAIN, {"step": i + 1, "ms": ms}))
            t += d
        t += GAP_US
        # speculative run
        if spec.get("prefill_ms") is not None:
            d = _us(spec["prefill_ms"])
            evs.append(_x("prefill", "spec", t, d, pid, SPEC, {"ms": spec["prefill_ms"]}))
            t += d
        for i, r in enumerate(spec.get("rounds", [])):
            dd, dv, dr = _us(r["draft_ms"]), _us(r["verify_ms"]), _us(r.get("rollback_ms") or 0.0)
            total = max(_us(r["ms"]), dd + dv + dr)
            tree = r.get("tree")
            shape = {} if not tree else {"tree_nodes": tree["nodes"], "tree_depth": tree["depth"],
                                         "nodes_per_depth": list(tree["widths"]), "accepted_path": r["accepted"]}
            evs.append(_x("tree round" if tree else "round", "spec", t, total, pid, SPEC, {
                "round": i + 1, "drafted": len(r["drafted"]), "accepted": r["accepted"],
                "emitted": len(r["emitted"]), "ms": r["ms"], **shape}))
            cur = t
            evs.append(_x("draft", "spec", cur, dd, pid, SPEC, {"ms": r["draft_ms"], "tokens": len(r["drafted"]),
                                                               **({"what": "drafter forward and building the tree"}
                                                                  if tree else {})}))
            cur += dd
            evs.append(_x("verify", "spec", cur, dv, pid, SPEC, {"ms": r["verify_ms"], "positions": len(r["drafted"]) + 1,
                                                                **({"tree_nodes": tree["nodes"]} if tree else {})}))
            cur += dv
            if dr > 0:
                evs.append(_x("rollback", "spec", cur, dr, pid, SPEC, {"ms": r.get("rollback_ms")}))
                cur += dr
            rest = t + total - cur
            if rest > 0:
                evs.append(_x("other (sampling, bookkeeping)", "spec", cur, rest, pid, SPEC, {"ms": rest / 1000.0}))
            t += total
        t += GAP_US
        # breakdown passes
        bd = c.get("breakdown")
        if bd:
            for side in ("decode", "verify"):
                if bd.get(side):
                    pos = bd[side].get("positions")
                    t = _pass(evs, bd, side, f"{side} pass, {pos} position{'s' if pos != 1 else ''} (instrumented)", t, pid) + GAP_US
        t += GAP_US
    return evs


def render(session) -> str:
    model = session.data.get("model") or {}
    doc = {
        "traceEvents": events(session),
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": "specscope",
            "model": model.get("name", ""),
            "k": session.k,
            "regime": session.regime,
            "tree_budget": int(session.config.get("tree_budget") or 0),  # 0: chains
            "drafter": (session.config.get("drafter") or {}).get("name", ""),
            "layout": "cases one after another; plain, speculative and breakdown phases sequential within a case",
        },
    }
    return redact(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))  # no home folder in a shared trace
