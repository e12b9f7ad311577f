"""The one verdict rule for a prediction held against a measurement: an equivalence judgement.

A prediction **agrees** when the whole 95% interval of its error lies within ±``AGREE``; it is **off** when the whole
interval lies beyond ±``AGREE`` (on one side); anything else — an interval that crosses a boundary, no interval, or
too few independent units for the interval to be trusted — is **too little data to judge**, with how much more data
would decide it. A point estimate alone never decides, and no interval is stretched to hold the point: an interval
that does not hold its own point estimate is reported as it is.

``run`` (the prediction from components timed apart), ``tune`` (its confirmations), ``sweep``, ``bench`` and the app
all judge through :func:`decide`, so "agrees" means one thing everywhere.
"""

from __future__ import annotations

import math

from specscope.profiler.analysis.records import Verdict

AGREE = 0.05  # the one tolerance: a prediction agrees when its error is known to lie within ±5%
AGREES, OFF, UNDECIDED = "agrees", "off", "too_little_data"
STATES = (AGREES, OFF, UNDECIDED)


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


PRACTICAL_GROWTH = 100.0  # more than this many times the data is no run anyone makes: said so, no count suggested


def data_needed(error: float, half_width: float) -> float | None:
    """How many times the data (units, or tokens per unit) a decided verdict needs, if the error stays where it is and
    the half-width shrinks as 1/√data; None when the error sits on the boundary (no amount of data decides it)."""
    room = abs(abs(error) - AGREE)  # the half-width at which the interval clears the boundary on its side
    if room <= 1e-12:
        return None
    return max((half_width / room) ** 2, 1.0)


def decide(error: float | None, interval: list[float] | tuple[float, float] | None, units: int | None = None,
           min_units: int = 0, unit: str = "units", level: float = 0.95, look: str = "case") -> Verdict:
    """The verdict: ``{"state", "text", "interval", "half_width", "data_needed"}``; ``state`` None when there is no error.

    ``units``/``min_units``: an interval from fewer independent units than it needs to be trusted decides nothing."""
    if error is None or not math.isfinite(error):
        return {"state": None, "text": "no prediction to judge", "interval": None, "half_width": None,
                "data_needed": None}
    if not interval or not all(math.isfinite(x) for x in interval):
        return {"state": UNDECIDED, "text": f"too little data to judge (error {_pct(error)}, no interval)",
                "interval": None, "half_width": None, "data_needed": None}
    lo, hi = float(interval[0]), float(interval[1])
    name = f"{level * 100:.3g}% interval" + (f" (looked at after every {look})" if level > 0.95 else "")
    half = (hi - lo) / 2.0
    few = units is not None and units < min_units
    if not few and -AGREE <= lo and hi <= AGREE:
        return {"interval": [lo, hi], "half_width": half, "data_needed": None, "state": AGREES,
                "text": f"agrees (error {_pct(error)}, {name} {_pct(lo)}…{_pct(hi)}, within ±{AGREE * 100:.0f}%)"}
    if not few and (lo > AGREE or hi < -AGREE):
        return {"interval": [lo, hi], "half_width": half, "data_needed": None, "state": OFF,
                "text": f"off by {_pct(error)} ({name} {_pct(lo)}…{_pct(hi)}, wholly beyond ±{AGREE * 100:.0f}%)"}
    grow = data_needed(error, half)
    if few:
        grow = max(grow or 1.0, min_units / max(units or 1, 1))
        why = f"only {units} {unit}, an interval needs {min_units}"
    else:
        why = f"{name} {_pct(lo)}…{_pct(hi)} crosses ±{AGREE * 100:.0f}%"
    more = ("; the error sits on the boundary: no amount of data decides it" if grow is None
            else (f"; the error sits near the ±{AGREE * 100:.0f}% edge: at this estimate about {grow:.0f}× the data "
                  "would decide it, more than any practical run") if grow > PRACTICAL_GROWTH
            else f"; about {grow:.1f}× the data would decide it" if grow > 1.0 else "")
    return {"interval": [lo, hi], "half_width": half, "data_needed": grow, "state": UNDECIDED,
            "text": f"too little data to judge (error {_pct(error)}, {why}){more}"}
