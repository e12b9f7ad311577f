"""The roofline of a verify forward: how far each block is from what this machine allows. Pure Python.

For every block and number of positions n:

    floor = max(bytes / bandwidth, FLOPs / peak)        (bytes = weight bytes + KV / state / logits bytes)
    efficiency = floor / measured                      (measured: the barrier-timed block time)

with bandwidth and peak the *measured* probes of this machine. Three verify lines side by side:

- **measured**: the whole-graph forward over n positions;
- **every position re-reads**: n × T_decode (what a verify costs when nothing is shared between rows);
- **each weight read once** (the *ideal*): the decode's own time, each block grown by how much its
  floor grows from 1 to n positions — a batched-verify kernel that reads every weight (and every
  routed expert of the union the n tokens chose) once, at the efficiency the decode already reaches,
  and never slower than the verify measured now:
  ``ideal_cat(n) = min(ms_cat(n), ms_cat(1) · floor_cat(n) / floor_cat(1))``,
  ``ideal(n) = min(measured(n), T_decode + Σ_cat (ideal_cat(n) − ms_cat(1)))``. Where the machine is compute-bound (a
  CPU) the floor itself grows about n-fold (``floor_multiple``), and so does the ideal: nothing is hidden.

The gap ``measured − ideal`` splits by block (``ms_cat(n) − ideal_cat(n)``, plus the growth of the
inter-block overhead), which names the block that holds most of it. The speedup at the floor puts
the ideal verify into the round model (``round_model.RoundModel.what_if``) at the measured acceptance, draft, rollback
and bookkeeping: the speedup a batched-verify kernel could buy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specscope.profiler.analysis.round_model import RoundModel
from specscope.profiler.analysis.intervals import draft_time_text, time_text
from specscope.profiler.analysis.records import BlockExperts, Roofline, RooflineBlock, RooflineRow

NAMES = {
    "linear_attention": "linear attention",
    "full_attention": "full attention",
    "moe": "MoE",
    "dense_mlp": "the dense MLP",
    "output_head": "the output head",
    "other": "norms and embeddings",
    "unclassified": "unclassified blocks",
    "inter_block": "inter-block overhead",
}


def floor_ms(nbytes: float, flops: float, bandwidth_gbs: float, peak_tflops: float) -> tuple[float, str]:
    """(floor in ms, "bandwidth" or "compute"): the larger of moving the bytes and doing the FLOPs."""
    t_mem = nbytes / (bandwidth_gbs * 1e9) * 1000.0 if bandwidth_gbs > 0 else 0.0
    t_cmp = flops / (peak_tflops * 1e12) * 1000.0 if peak_tflops > 0 else 0.0
    return (t_mem, "bandwidth") if t_mem >= t_cmp else (t_cmp, "compute")


def _ratio(a, b):
    return a / b if a is not None and b else None


def build_roofline(curve: Mapping[str, Any], costs: Mapping[int, Mapping[str, Mapping[str, Any]]], machine: Mapping[str, Any],
                   k: int = 2, division: dict | None = None) -> Roofline:
    """The roofline as a JSON-able record (``specscope roofline --json``; ``session["roofline"]``).

    ``curve``: ``verify_curve.measure_curve``'s dict; ``costs``: n -> ``ModelCost.forward(n, ...)``;
    ``machine``: ``machine_probe.probe_machine``'s dict; ``k``: the headline verify is k+1 positions;
    ``division`` (optional): {"tokens_per_round", "t_draft_ms", "acceptance", "drafter", ...} measured
    at k, for the division at the floor."""
    bw, peak = float(machine["bandwidth_gbs"]), float(machine["peak_tflops"])
    pts = {p["positions"]: p for p in curve["points"]}
    if 1 not in pts:
        raise ValueError("the curve needs n = 1 (the decode step)")
    t_dec = pts[1]["whole_ms"]
    base: dict[str, tuple[float | None, float]] = {}  # cat -> (ms at n=1, floor at n=1)
    rows = [_curve_row(n, pts[n], costs.get(n, {}), t_dec, base, bw, peak) for n in sorted(pts)]
    measured_cats = bool(all(e["ms"] is not None for e in rows[0]["by_block"].values()) and rows[0]["by_block"])
    _set_ideals(rows, base, t_dec, measured_cats)

    n_head = min(k + 1, max(pts))
    head = next(r for r in rows if r["positions"] == n_head)
    shares = _gap_shares(head, rows[0]) if measured_cats else {}
    out: Roofline = {
        "bandwidth_gbs": bw,
        "peak_tflops": peak,
        "chip": machine.get("chip", "unknown"),
        "nominal_bandwidth_gbs": machine.get("nominal_bandwidth_gbs"),
        "nominal_tflops": machine.get("nominal_tflops"),
        "gpu_cores": machine.get("gpu_cores"),
        "nominal_bin": machine.get("nominal_bin"),
        "device": machine.get("device"),
        "compute_dtype": (machine.get("compute_probe") or {}).get("dtype"),
        "context": curve.get("context"),
        "t_decode_ms": t_dec,
        "k": n_head - 1,
        "curve": rows,
        "verify_multiple": head["multiple_of_decode"],
        "ideal_verify_multiple": head["ideal_multiple"],
        "gap_ms": head["whole_ms"] - head["ideal_ms"] if head["ideal_ms"] is not None else None,
        "gap_shares": shares,
        "speedup_now": None,
        "speedup_at_floor": None,
        "division": None,
        "headline": "",  # set below, from the rest (the placeholders keep the keys' order)
        "notes": [],
    }
    if division and division.get("tokens_per_round"):
        _set_division(out, division, head, t_dec)
    out["headline"] = headline(out)
    out["notes"] = _notes(out)
    return out


def _curve_row(n: int, p: Mapping[str, Any], cost: Mapping[str, Mapping[str, Any]], t_dec: float,
               base: dict[str, tuple[float | None, float]], bw: float, peak: float) -> RooflineRow:
    """The curve at n positions: each block's time beside its floor, the whole forward's. ``base`` (block -> its time
    and floor at n = 1) is filled in at n = 1, which comes first; the ideals are set later (``_set_ideals``)."""
    cats: dict[str, RooflineBlock] = {}
    floor_sum = 0.0
    for cat, c in cost.items():
        fl, bound = floor_ms(c["weight_bytes"] + c["other_bytes"], c["flops"], bw, peak)
        floor_sum += fl
        ms = (p.get("blocks") or {}).get(cat)
        if n == 1:
            base[cat] = (ms, fl)
        b_ms, b_fl = base.get(cat, (None, 0.0))
        ideal = b_ms * fl / b_fl if b_ms is not None and b_fl > 0 else b_ms
        cats[cat] = {
            "ms": ms,
            "ms_barrier_free": (p.get("skip_estimates") or {}).get(cat),
            "weight_bytes": c["weight_bytes"],
            "other_bytes": c["other_bytes"],
            "flops": c["flops"],
            "floor_ms": fl,
            "bound": bound,
            "efficiency": _ratio(fl, ms),
            "distinct_experts": c.get("distinct_experts"),
            **_expert_figures(c),
            "ideal_ms": min(ideal, ms) if ideal is not None and ms is not None else ideal,
        }
    return {
        "positions": n,
        "whole_ms": p["whole_ms"],
        "whole_ms_min": p.get("whole_ms_min"),
        "whole_ms_max": p.get("whole_ms_max"),
        "multiple_of_decode": p["whole_ms"] / t_dec,
        "n_times_decode_ms": n * t_dec,
        "floor_ms": floor_sum,
        "efficiency": _ratio(floor_sum, p["whole_ms"]),
        "inter_block_ms": p.get("inter_block_ms"),
        "by_block": cats,
        # set by _set_ideals for every row, once the decode's floor is known (the placeholders keep the keys' order)
        "ideal_ms": None,
        "ideal_multiple": None,
        "floor_multiple": None,
    }


def _set_ideals(rows: list[RooflineRow], base: dict[str, tuple[float | None, float]], t_dec: float,
                measured_cats: bool) -> None:
    """Each row's ideal: the decode grown block by block as each block's floor grows (the whole decode as the whole
    floor grows where blocks were not timed), never above what was measured."""
    floor1 = rows[0]["floor_ms"]
    for r in rows:
        if measured_cats:
            # a block timed cheaper at n than at 1 is noise, not negative growth: it adds nothing to the ideal
            r["ideal_ms"] = min(r["whole_ms"], t_dec + sum(max(0.0, e["ideal_ms"] - ms1)
                                                          for c, e in r["by_block"].items()
                                                          if e["ideal_ms"] is not None
                                                          and (ms1 := base.get(c, (None, 0.0))[0]) is not None))
        else:  # no per-block times: the whole decode grown as the whole floor grows
            r["ideal_ms"] = min(r["whole_ms"], t_dec * r["floor_ms"] / floor1) if floor1 else None
        r["ideal_multiple"] = _ratio(r["ideal_ms"], t_dec)
        r["floor_multiple"] = _ratio(r["floor_ms"], floor1)


def _set_division(out: Roofline, division: dict, head: RooflineRow, t_dec: float) -> None:
    """The division at the headline k, now and with the verify at its floor (``division`` has tokens per round)."""
    if division.get("t_draft_ms") is None:
        # acceptance without a draft time: no speedup is printed (taking T_draft as 0 would print a bound as a figure)
        out["division"] = {**division, "t_decode_ms": t_dec, "t_verify_ms": head["whole_ms"],
                           "t_verify_ideal_ms": head["ideal_ms"], "speedup_now": None, "speedup_at_floor": None}
        return
    # the whole round (round_model): rollback and bookkeeping where the short run timed them, named where not
    now = RoundModel(float(division["tokens_per_round"]), t_dec, head["whole_ms"], float(division["t_draft_ms"]),
                     division.get("t_rollback_ms"), division.get("t_bookkeeping_ms"))
    at_floor = now.what_if(t_verify_ms=head["ideal_ms"]) if head["ideal_ms"] else None
    out["speedup_now"] = now.speedup
    out["speedup_at_floor"] = at_floor.speedup if at_floor else None
    out["division"] = {**division, "t_decode_ms": t_dec, "t_verify_ms": head["whole_ms"],
                       "t_verify_ideal_ms": head["ideal_ms"],
                       "break_even_verify_ms": now.break_even_verify_ms if now.break_even_verify_ms > 0 else None,
                       "formula": now.formula, "division_now": now.division,
                       "speedup_now": out["speedup_now"], "speedup_at_floor": out["speedup_at_floor"]}


def _expert_figures(cost: Mapping[str, Any]) -> BlockExperts:
    """The MoE block's expert figures, those its cost has (in this order)."""
    out: BlockExperts = {}
    if "distinct_experts_per_layer" in cost:
        out["distinct_experts_per_layer"] = cost["distinct_experts_per_layer"]
    if "routed_slots" in cost:
        out["routed_slots"] = cost["routed_slots"]
    if "experts" in cost:
        out["experts"] = cost["experts"]
    if "distinct_source" in cost:
        out["distinct_source"] = cost["distinct_source"]
    return out


def _gap_shares(head: Mapping[str, Any], first: Mapping[str, Any]) -> dict[str, float]:  # dict: block name -> its share of the gap
    gaps = {c: e["ms"] - e["ideal_ms"] for c, e in head["by_block"].items()
            if e["ms"] is not None and e["ideal_ms"] is not None}
    if head.get("inter_block_ms") is not None and first.get("inter_block_ms") is not None:
        gaps["inter_block"] = head["inter_block_ms"] - first["inter_block_ms"]
    total = sum(gaps.values())
    return {c: g / total for c, g in gaps.items()} if total > 0 else {}


def headline(roof: Mapping[str, Any]) -> str:
    n = roof["k"] + 1
    ideal, now = roof.get("ideal_verify_multiple"), roof["verify_multiple"]
    if ideal is None:
        return f"A {n}-position verify costs {now:.1f} plain steps here."
    s = f"An ideal {n}-position verify would cost {ideal:.1f} plain steps here; it costs {now:.1f}"
    shares = {c: v for c, v in (roof.get("gap_shares") or {}).items() if v > 0}
    if now <= ideal:
        return s + ": no gap to close."
    if not shares:  # e.g. --block-reps 0: the whole graph was timed, no block was
        return s + f": a gap of {now - ideal:.1f} plain steps, not split by block (no per-block rulers measured)."
    top = max(shares, key=lambda c: shares[c])
    return s + f"; {NAMES.get(top, top)} holds {shares[top]:.0%} of the gap."


def _notes(roof: Mapping[str, Any]) -> list[str]:
    notes = []
    row1 = roof["curve"][0]
    bounds = {e["bound"] for e in row1["by_block"].values()}
    eff = row1.get("efficiency")
    if eff is not None:
        notes.append(f"the decode step runs at {eff:.0%} of this machine's floor "
                     f"({' and '.join(sorted(bounds))}-bound blocks, measured bandwidth and compute)")
    head = next(r for r in roof["curve"] if r["positions"] == roof["k"] + 1)
    if head.get("floor_multiple") and head["floor_multiple"] > 0.8 * head["positions"]:
        notes.append(f"the floor of a {head['positions']}-position verify is {head['floor_multiple']:.1f}× the decode's: "
                     "FLOPs, not bytes, bound this machine, so even an ideal verify grows about linearly with n")
    clamped = [c for c, e in head["by_block"].items() if e["ms"] is not None and e["ideal_ms"] is not None
               and e["ideal_ms"] >= e["ms"] and c in roof["curve"][0]["by_block"]]
    if clamped:
        notes.append(f"{', '.join(clamped)}: the verify already grows no faster than its floor from the decode's "
                     "efficiency (the ideal is the measured time there)")
    over = sorted({c for r in roof["curve"] for c, e in r["by_block"].items() if (e["efficiency"] or 0) > 1})
    if over:
        notes.append(f"efficiency above 1 for {', '.join(over)}: its kernels beat the probes (the floor is then no floor)")
    if roof.get("nominal_bandwidth_gbs") is None:
        notes.append("no nominal figures: chip not recognised (the table covers Apple M1–M5)")
    return notes


def _gb(x):
    return f"{x / 1e6:.1f}"


def format_roofline(roof: Mapping[str, Any]) -> str:
    nom = (f"nominal {roof['nominal_bandwidth_gbs']:g} GB/s" if roof.get("nominal_bandwidth_gbs") else "nominal —")
    lines = [
        f"machine     {roof['chip']} ({roof.get('device') or '?'}): {roof['bandwidth_gbs']:.1f} GB/s measured ({nom}), "
        f"{roof['peak_tflops'] * 1000:.1f} GFLOP/s measured"
        + (f" ({roof['compute_dtype']})" if roof.get("compute_dtype") else "")
        + (f", nominal {roof['nominal_tflops']:g} TFLOP/s" if roof.get("nominal_tflops") else ""),
        f"context     {roof.get('context')} tokens; T_decode {roof['t_decode_ms']:.1f} ms (whole graph, n = 1)",
        "",
        " n   measured ms (min–max)      × decode   n × decode   ideal ×   floor ms  floor ×  efficiency",
    ]
    for r in roof["curve"]:
        lo, hi = r.get("whole_ms_min"), r.get("whole_ms_max")
        spread = f"({lo:.1f}–{hi:.1f})" if lo is not None else ""
        ideal = f"{r['ideal_multiple']:.2f}" if r.get("ideal_multiple") is not None else "—"
        lines.append(f"{r['positions']:>2}   {r['whole_ms']:8.1f} {spread:<16} {r['multiple_of_decode']:8.2f}"
                     f"   {r['positions']:10.2f}"
                     f"   {ideal:>7}   {r['floor_ms']:8.2f} {r['floor_multiple']:8.2f} {r['efficiency']:10.1%}")
    head = next(r for r in roof["curve"] if r["positions"] == roof["k"] + 1)
    lines += ["", f"per block at n = {head['positions']} (bytes in MB: weights + KV/state/logits):",
              " block               ms     free ms   weights MB   other MB     GFLOP   floor ms  bound       efficiency  experts"]
    for cat, e in head["by_block"].items():
        ms = f"{e['ms']:.1f}" if e["ms"] is not None else "—"
        free = time_text(e.get("ms_barrier_free"), spec=".1f")  # "below noise", never a negative time
        eff = f"{e['efficiency']:.1%}" if e["efficiency"] is not None else "—"
        ex = (f"{e['distinct_experts']:.1f} of {e.get('routed_slots')} slots / {e.get('experts')}"
              if e.get("distinct_experts") is not None else "")
        lines.append(f" {cat:<17} {ms:>6} {free:>11} {_gb(e['weight_bytes']):>12} {_gb(e['other_bytes']):>10} "
                     f"{e['flops'] / 1e9:9.3f} {e['floor_ms']:10.2f}  {e['bound']:<10} {eff:>10}  {ex}")
    lines += ["", roof["headline"]]
    att = roof.get("attention_at_context")
    if att:
        cp = roof.get("context_prefill")
        lines.append(
            f"attention at this context: full attention's KV reads are {att['kv_share_of_step']:.1%} of a decode step's "
            f"bytes ({att['bytes_per_context_token'] / 1024:.1f} KiB per token of context; a step reads "
            f"{att['step_bytes_no_context'] / 2**20:.1f} MiB with none); they pass 10% at about "
            f"{att['context_at_10pct']:,.0f} tokens and half at {att['context_at_50pct']:,.0f} (model bytes, not timed)"
            + (f"; the context's prefill, once: {cp['ms'] / 1000:.1f} s" if cp else ""))
    d = roof.get("division")
    if d and (d.get("t_draft_ms") is None or roof.get("speedup_now") is None):
        lines.append(f"division at k = {roof['k']} ({d.get('drafter', '?')}, E = {d['tokens_per_round']:.2f} tokens/round): "
                     "no draft time was measured, so no speedup is given")
    elif d:
        floor = (f"{roof['speedup_at_floor']:.2f}× with a verify that reads each weight once"
                 if roof.get("speedup_at_floor") is not None else "no floor (no nominal figures for this chip)")
        lines.append(f"round model at k = {roof['k']} ({d.get('drafter', '?')}, E = {d['tokens_per_round']:.2f} tokens/round, "
                     f"T_draft {draft_time_text(d['t_draft_ms'], unit=' ms', spec='.1f')}; "
                     f"{d.get('formula') or 'E·T_decode / (T_verify + T_draft)'}): {roof['speedup_now']:.2f}× now, {floor}")
    lines += [f"note: {n}" for n in roof.get("notes", [])]
    return "\n".join(lines)
