"""Did the machine slow down during the run? The clock probe's series, judged against its own noise.

The protocol reads the clock probe (a fixed compute-bound kernel, ``engine_adapter.measure.clock_probe``)
before and after every repeat of every case. A reading is the median of a few timed reps; the spread
of those reps, relative to the reading, is the probe's **own noise** (the median of it over the run).
The run **drifted** when the late readings (the last third) differ from the early ones (the first third)
by more than that noise, either way: slower late (heat, a load that began) or faster late (a load that ended, a
cold start); both mean the two ends of the run ran on different machines. Readings taken while cooling down are kept in the series but not
judged (the wait exists because they are slow).
"""

from __future__ import annotations

from typing import Any, Mapping

from specscope.profiler.analysis.records import ProbeDrift
from specscope.profiler.session.records import ProbeReading
from specscope.profiler.analysis.stats import median

MIN_READINGS = 6  # fewer (a 1–2 case run): one slow reading would decide the verdict; too few to judge


def judged(series: list[ProbeReading]) -> list[ProbeReading]:
    return [p for p in series or [] if p.get("when", "before") in ("before", "after")]


def reading_noise(p: ProbeReading) -> float | None:
    reps = [x for x in p.get("reps_ms") or [] if isinstance(x, (int, float))]
    if len(reps) < 2 or not p.get("ms"):
        return None
    return (max(reps) - min(reps)) / p["ms"]


def probe_drift(series: list[ProbeReading]) -> ProbeDrift | None:
    """The drift verdict of a probe series, or None when the session has no probe readings."""
    if not series:
        return None
    rs = judged(series)
    ms = [p["ms"] for p in rs]
    best = min(p["ms"] for p in series)
    out: ProbeDrift = {"readings": len(rs), "best_ms": best, "first_ms": ms[0] if ms else None, "last_ms": ms[-1] if ms else None,
           "early_ms": None, "late_ms": None, "slowdown": None, "noise": median(reading_noise(p) for p in rs),
           "drift": None, "cooldown_readings": len(series) - len(rs)}
    if len(rs) < MIN_READINGS:
        return out
    k = max(2, len(rs) // 3)
    early, late = median(ms[:k]), median(ms[-k:])
    assert early is not None and late is not None  # at least MIN_READINGS readings: both thirds have some
    slowdown = late / early - 1.0
    out.update({"early_ms": early, "late_ms": late, "slowdown": slowdown})
    noise = out["noise"] or 0.0
    out["drift"] = abs(slowdown) > noise  # either way: a probe 36% quicker late than early is no quiet machine
    return out


def drift_warning(d: Mapping[str, Any] | None) -> str | None:
    """The warning line when the probe's speed changed by more than its own noise; None otherwise."""
    if not d or not d.get("drift"):
        return None
    noise = f"more than its own noise: its reps spread over {(d['noise'] or 0) * 100:.1f}%, highest − lowest"
    if d["slowdown"] < 0:
        return (f"drift warning: the clock probe ran {-d['slowdown'] * 100:.1f}% quicker at the end of the run than at "
                f"its start ({noise}): the device ran slower early in the run (a load that ended, or a cold start); "
                "ABBA order spreads the change over both modes, but rerun on a quiet machine")
    return (f"drift warning: the clock probe slowed by {d['slowdown'] * 100:+.1f}% from the start of the run to its end "
            f"({noise}): the device ran slower late in the run (heat, or another load); "
            "ABBA order spreads the slow-down over both modes, but rerun with --cooldown, or on a quiet machine")


def _first_last(d: Mapping[str, Any]) -> str:
    """What the readings show when there are too few to judge: the first and the last, and the change."""
    a, b = d.get("first_ms"), d.get("last_ms")
    if not a or not b or d.get("readings", 0) < 2:
        return ""
    return f" (first {a:.2f} ms, last {b:.2f} ms: {(b / a - 1) * 100:+.1f}%)"


def drift_phrase(d: Mapping[str, Any] | None) -> str:
    """One line on the probe for summaries: the warning, or what was checked."""
    if not d:
        return "clock probe: not recorded (session from an older specscope)"
    w = drift_warning(d)
    if w:
        return w
    if d.get("drift") is None:
        return f"clock probe: {d['readings']} readings, too few to judge drift" + _first_last(d)
    return (f"clock probe: no drift ({d['slowdown'] * 100:+.1f}% from start to end, within its own noise: its reps "
            f"spread over {(d['noise'] or 0) * 100:.1f}%, highest − lowest; {d['readings']} readings)")
