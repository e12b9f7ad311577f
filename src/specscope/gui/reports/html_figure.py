"""One chart as a report figure: its caption, the PNG inline (screen) or as a named resource (print), or a line
saying why the chart is missing."""

from __future__ import annotations

import base64

from specscope.profiler.renderers.html_common import esc


CHART_CAPTIONS = {
    # (the report writes the division's caption from its summary: a prediction's whole round, or the ledger)
    "division": "Speedup over the per-position acceptance α (geometric model) at the measured times; the markers are "
    "the measured run and its cases.",
    "breakdown": "Where time goes: per-block time of one decode step and one verify pass (barrier-timed).",
    "throughput": "Throughput over generation time: plain vs speculative decoding (rolling window).",
    "acceptance": "Cumulative acceptance with its 95% interval (the round as the unit); the line marks the low-sample limit.",
    "tokens_per_round": "Tokens emitted per speculative round.",
    "verify_cost": "Verify cost over n positions in plain decode steps: measured (median, min–max), every position re-reading (n × decode), each weight read once at the decode step's efficiency, and the roofline floor.",
    "tune": "Predicted speedup over k per drafter (the whole round) with its bootstrap band (2.5–97.5 percentiles; coverage not tested), the confirmation runs' measured points, and the recommended k.",
    "probe": "The clock probe: each reading's speed as a share of the fastest, with its own noise band; a slide late in the run is drift.",
}


def chart_figure(name, charts, target, width=640, caption: str | None = None) -> str:
    data = charts.get(name)
    cap = esc(CHART_CAPTIONS.get(name, "") if caption is None else caption)
    if not data:
        why = getattr(charts, "left_out", {}).get(name, "not drawn")
        return f'<figure><p class="unavailable muted">chart unavailable ({esc(name)}: {esc(why)})</p><figcaption>{cap}</figcaption></figure>'
    if target == "print":
        src = f"chart-{name}.png"
        return f'<p align="center"><img src="{src}" width="{width}"></p><p class="muted" align="center"><small>{cap}</small></p>'
    b64 = base64.b64encode(data).decode("ascii")
    return f'<figure><img alt="{esc(name)} chart" src="data:image/png;base64,{b64}"><figcaption>{cap}</figcaption></figure>'
