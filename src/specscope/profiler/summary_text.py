"""The plain-text summary table ``specscope run`` prints at the end."""

from __future__ import annotations

from .formatting import fmt, scaled
from .session import Session
from .summary import CATEGORY_LABELS
from .verdict import (SAMPLED_NOTE, acceptance_phrase, divergence_note, engine_fault_line, instrumentation_cost_text,
                      verdict)




def format_summary(session: Session) -> str:
    s = session.summary()
    cfg = session.config
    env = session.data.get("environment", {})
    model = session.data.get("model", {})
    lines = [
        f"specscope — {model.get('name', '?')}{' @ ' + model['revision'][:7] if model.get('revision') else ''} on {env.get('device_name', '?')} ({env.get('chip', '')}), mlx {env.get('mlx', '?')}",
        f"drafter {cfg.get('drafter', {}).get('name', '?')}, k={s['k']}, {s['regime']}, {s['cases_measured']} cases × {cfg.get('max_tokens')} tokens, status {session.status}",
    ]
    if (model.get("demo")):
        lines.append("synthetic demo model: timings are real; text and acceptance are not meaningful")
    comp = cfg.get("compatibility") or {}
    if comp.get("class") and comp["class"] != "supported":
        lines.append(f"compatibility: {comp['class']} — " + "; ".join(comp.get("reasons") or []))
    bar = ["!" * 80] if engine_fault_line(s) else []  # an engine fault leads the verdict, fenced
    lines += [
        "",
        *bar,
        verdict(s),
        *bar,
        "",
        f"  plain             {fmt(s['plain_tok_s'], '.1f')} tok/s    T_decode  {fmt(s['t_decode_ms'])} ms",
        f"  speculative       {fmt(s['spec_tok_s'], '.1f')} tok/s    T_verify  {fmt(s['t_verify_ms'])} ms   T_draft {fmt(s['t_draft_ms'])} ms   rollback {fmt(s['t_rollback_ms'], '.3f')} ms",
        *([f"  instrumentation   end-to-end rounds {fmt(s['spec_tok_s'], '.1f')} tok/s vs instrumented rounds "
           f"{fmt(s['spec_instrumented_tok_s'], '.1f')} tok/s: timing draft, verify and rollback apart costs "
           f"{instrumentation_cost_text(s)} (the measured speed is end to end)"]
          if s.get("instrumentation_cost") is not None else []),
        f"  {acceptance_phrase(s)}",
        f"  tokens per round  {fmt(s['tokens_per_round'], '.3f')}   per position a_i: "
        + ", ".join(f"{a:.2f}" for a in s["per_position"]),
        f"  speedup           predicted {fmt(s['predicted_speedup'], '.3f', '×')}   measured {fmt(s['measured_speedup'], '.3f', '×')}   "
        f"error {fmt(scaled(s['prediction_error'], 100), '+.1f', '%')}",
        f"  break-even        T_verify ≤ {fmt(s['break_even_verify_ms'])} ms (≤ {fmt(s['break_even_multiple'])} × T_decode)",
    ]
    if s["regime"] == "greedy":
        lines.append(f"  greedy match      {fmt(None if s['match_rate'] is None else s['match_rate'] * 100, '.1f', '%')} of tokens equal to plain")
        note = divergence_note(s)
        if note:
            lines.append(f"  divergence        {note}")
    else:  # sampled outputs differ from plain by design: no match rate, say what is checked instead
        lines.append(f"  output check      {SAMPLED_NOTE}")
    if s["acceptance_by_category"]:
        lines.append("  by content        " + "   ".join(
            f"{cat}: {a['p'] * 100:.1f}% (n={a['drafted']})" if a["p"] is not None else f"{cat}: —"
            for cat, a in s["acceptance_by_category"].items()))
    bd = s.get("breakdown")
    if bd:
        dec, ver = bd["decode"], bd["verify"]
        lines += ["", f"  where time goes (median over cases; ms)      decode (1 pos)   verify ({ver['positions']} pos)   ratio"
                      "    without barriers (skip one category): decode / verify"]
        for c in bd["categories"]:
            label = bd["labels"].get(c) or CATEGORY_LABELS.get(c, c)
            r = bd["ratios"].get(c)
            skip = f"{fmt(dec['skip_estimates'].get(c)):>8} / {fmt(ver['skip_estimates'].get(c))}" if c in dec["skip_estimates"] else ""
            lines.append(f"    {label:<40} {dec['blocks'][c]:>9.2f}   {ver['blocks'][c]:>12.2f}   {fmt(r, '.2f', '×'):>6}    {skip}")
        lines.append(f"    {'sum of blocks (barriers)':<40} {dec['block_sum_ms']:>9.2f}   {ver['block_sum_ms']:>12.2f}")
        lines.append(f"    {'whole graph (no barriers)':<40} {dec['whole_ms']:>9.2f}   {ver['whole_ms']:>12.2f}   {fmt(bd['ratios'].get('whole'), '.2f', '×'):>6}")
        lines.append(f"    {'inter-block overhead (whole − blocks)':<40} {dec['inter_block_ms']:>9.2f}   {ver['inter_block_ms']:>12.2f}")
        lines.append(f"    {'barrier distortion (instrumented/whole)':<40} {dec['barrier_distortion'] * 100:>8.1f}%   {ver['barrier_distortion'] * 100:>11.1f}%")
        if s.get("block_sum_predicted_speedup") is not None:
            lines.append(f"    a block-sum T_decode would predict {s['block_sum_predicted_speedup']:.3f}× (wrong ruler) vs {s['predicted_speedup']:.3f}× from whole-graph times")
    return "\n".join(lines)
