"""Energy per token that says when it cannot be trusted.

A sensor window (``run.sensors``) brackets one measured pass and keeps, per energy domain (``package``, ``gpu``), the
counter's rise over the window and its reading at the window's end. On recent macOS the per-domain counters update in
batches (about every 2 s on an M5 Max; on an M1 Max only at power-management events) while the GPU's stays live. A
window shorter than the update period then reads a counter that did not move (0 J), or one batch that holds seconds
outside it: a mean power from such a window is wrong without saying so.

So each counter's **cadence** is read off the run's own windows first (``cadence``):

- **live**: it rose in every window — per-pass figures hold (a counter that updates faster than the shortest window
  reads as live; its steps then add noise within a batch per window end, which the passes' spread carries into the
  intervals);
- **batched**: it rose in some windows and not in others — it updates in steps, about every P = Σ window seconds ÷
  the windows it rose in; no per-pass figure is taken from it. Widened to the whole run (the first window's start
  to the last one's end, both modes and the work between passes) where that span is at least ``WIDEN_PERIODS`` update
  periods (its ends are each off by at most one batch: ≤ 1/``WIDEN_PERIODS`` of it per end), else "unavailable";
- **stale**: it never rose — unavailable;
- **unknown**: the windows carry no counters (sessions from before this check) — unavailable: those sessions also
  held both passes of a paired speculative phase in one window while counting one pass's tokens.

Per mode the figures come from the first live domain, the package's, else the GPU's (then labelled GPU only):
joules per generated token and, for speculation, per accepted draft token, each with a 95% interval by the same
units as the rates (``unit_intervals``: cases when there are enough, else passes), and the energy ratio (speculative
J per token ÷ plain J per token) with its interval, paired by case as the speedup is. A speculative phase of a paired
run counts its end-to-end (measured) pass, the one whose speed is reported, not the instrumented pass beside it.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Literal, Mapping

from specscope.profiler.analysis import stats
from specscope.profiler.analysis.formatting import fmt
from specscope.profiler.analysis.uncertainty import CASES_AS_UNIT
from specscope.profiler.analysis.unit_intervals import ratio_interval, speedup_interval
from specscope.profiler.session.measured import Cadence, EnergyMode, EnergySummary, EnergyWidened

DOMAINS = ("package", "gpu")
WIDEN_PERIODS = 20   # a widened span of ≥ 20 update periods: each end off by ≤ 5% of it at most
MOVED_J = 1e-9       # a rise above this is a move (a stale counter's rise is exactly 0)
PASS_UNIT = 1        # with fewer cases than CASES_AS_UNIT, each pass is a unit


def _rise(w: Mapping[str, Any], domain: str) -> float | None:
    rise = (w.get("energy_j") or {}).get(domain)
    return None if rise is None else float(rise)


def cadence(windows: list[Mapping[str, Any]], domain: str) -> Cadence:
    """How ``domain``'s counter moved over ``windows`` (every window of the run, both modes, both passes)."""
    read = [w for w in windows if _rise(w, domain) is not None]
    moved = [w for w in read if (_rise(w, domain) or 0.0) > MOVED_J]
    shortest = min((float(w["seconds"]) for w in read), default=None)
    kind: Literal["live", "batched", "stale", "unknown"]
    if not read:
        kind = "unknown"
    elif len(moved) == len(read):
        kind = "live"
    elif not moved:
        kind = "stale"
    else:
        kind = "batched"
    period = math.fsum(float(w["seconds"]) for w in read) / len(moved) if kind == "batched" else None
    return {"domain": domain, "kind": kind, "windows": len(read), "moved": len(moved), "period_s": period,
            "shortest_window_s": shortest}


def widen(windows: list[Mapping[str, Any]], c: Cadence) -> tuple[EnergyWidened | None, str | None]:
    """A batched counter over the run's whole span, or why not."""
    domain = c["domain"]
    ends = [(float(w["t"]) - float(w["seconds"]), float(w["t"]), w) for w in windows
            if w.get("t") is not None and (w.get("counter_j") or {}).get(domain) is not None and _rise(w, domain) is not None]
    if len(ends) < 2 or not c["period_s"]:
        return None, f"the {domain} counter's readings do not bracket the run"
    first, last = min(ends, key=lambda e: e[0]), max(ends, key=lambda e: e[1])
    span = last[1] - first[0]
    periods = span / c["period_s"]
    if periods < WIDEN_PERIODS:
        return None, (f"the {domain} counter updates about every {c['period_s']:.1f} s (it moved in {c['moved']} of "
                      f"{c['windows']} windows); the run spans {span:.1f} s, about {periods:.0f} updates, fewer than the "
                      f"{WIDEN_PERIODS} that read it to within {100 / WIDEN_PERIODS:.0f}% a side")
    start = float(first[2]["counter_j"][domain]) - float(_rise(first[2], domain) or 0.0)
    joules = float(last[2]["counter_j"][domain]) - start
    return {"domain": domain, "span_s": span, "joules": joules, "mean_power_w": joules / span, "periods": periods}, None


def measured_windows(windows: Iterable[Mapping[str, Any]], mode: str) -> list[Mapping[str, Any]]:
    """A mode's windows that count: a paired speculative phase's end-to-end pass only (the speed reported)."""
    return [w for w in windows if w.get("mode") == mode and w.get("pass") in (None, "measured")]


def _by_case(windows: list[Mapping[str, Any]], domain: str, per: str) -> Mapping[str, list[tuple[float, float]]]:
    """Per case, (joules, tokens or accepted) per pass, in run order."""
    cases: dict[str, list[tuple[float, float]]] = {}
    for w in windows:
        cases.setdefault(str(w.get("case")), []).append((_rise(w, domain) or 0.0, float(w.get(per) or 0)))
    return cases


def _series(windows: list[Mapping[str, Any]], domain: str, per: str) -> list[list[tuple[float, float]]]:
    return list(_by_case(windows, domain, per).values())


def _mode(windows: list[Mapping[str, Any]], domain: str, spec: bool) -> EnergyMode:
    joules = math.fsum(_rise(w, domain) or 0.0 for w in windows)
    tokens = sum(int(w.get("tokens") or 0) for w in windows)
    seconds = math.fsum(float(w["seconds"]) for w in windows)
    accepted = sum(int(w.get("accepted") or 0) for w in windows) if spec else None
    block = None if len({w.get("case") for w in windows}) >= CASES_AS_UNIT else PASS_UNIT
    return {
        "windows": len(windows), "tokens": tokens, "accepted": accepted, "joules": joules,
        "joules_per_token": joules / tokens if tokens else None,
        "joules_per_token_ci95": ratio_interval(_series(windows, domain, "tokens"), block=block),
        "joules_per_accepted": joules / accepted if accepted else None,
        "joules_per_accepted_ci95": ratio_interval(_series(windows, domain, "accepted"), block=block)
        if accepted else None,
        "power_w": joules / seconds if seconds > 0 else None,
        "gpu_freq_mhz": stats.mean(w.get("gpu_freq_mhz") for w in windows),
        "gpu_temp_c": stats.mean(w.get("gpu_temp_c") for w in windows),
    }


def unavailable(reason: str, cadences: list[Cadence] | None = None, source: str | None = None) -> EnergySummary:
    return {"available": False, "reason": reason, "domain": None, "note": None, "source": source,
            "cadence": cadences or [], "unit": None, "plain": None, "spec": None, "ratio": None, "ratio_ci95": None,
            "widened": None, "widened_reason": None}


def energy_figures(windows: list[Mapping[str, Any]], not_available: str | None = None) -> EnergySummary:
    """The energy figures of a run's sensor windows (the summarized cases' only); ``not_available``: why the machine
    had no sensors (the session's environment says), used when there are no windows."""
    if not windows:
        return unavailable(not_available or "not available: no sensor windows were recorded")
    source = next((str(w["source"]) for w in windows if w.get("source")), None)
    cadences = [cadence(windows, d) for d in DOMAINS]
    by_domain = {c["domain"]: c for c in cadences}
    if all(c["kind"] == "unknown" for c in cadences):
        return unavailable("unavailable: this session's sensor windows predate specscope's counter check (their energy "
                           "could come from a stale or batched counter, and a paired speculative window held both "
                           "passes); run again to measure energy", cadences, source)
    pkg = by_domain["package"]
    widened, widened_reason = widen(windows, pkg) if pkg["kind"] == "batched" else (None, None)
    domain = next((c["domain"] for c in cadences if c["kind"] == "live"), None)
    if domain is None:
        out = unavailable("unavailable: " + "; ".join(_why(c) for c in cadences), cadences, source)
        out["widened"], out["widened_reason"] = widened, widened_reason
        return out
    plain = measured_windows(windows, "plain")
    spec = measured_windows(windows, "spec")
    p_mode, s_mode = (_mode(plain, domain, False) if plain else None), (_mode(spec, domain, True) if spec else None)
    ratio = (s_mode["joules_per_token"] / p_mode["joules_per_token"]
             if p_mode and s_mode and s_mode["joules_per_token"] and p_mode["joules_per_token"] else None)
    many = len({w.get("case") for w in plain + spec}) >= CASES_AS_UNIT
    paired = _paired_series(plain, spec, domain)
    return {"available": True, "reason": None, "domain": domain,
            "note": None if domain == "package" else f"GPU only: {_why(pkg)}",
            "source": source, "cadence": cadences, "unit": "cases" if many else "passes",
            "plain": p_mode, "spec": s_mode, "ratio": ratio,
            "ratio_ci95": speedup_interval(paired[0], paired[1], block=None if many else PASS_UNIT) if ratio else None,
            "widened": widened, "widened_reason": widened_reason}


def _paired_series(plain, spec, domain: str):
    """(spec, plain) per-case series over the cases both modes have, in the same order."""
    p, s = _by_case(plain, domain, "tokens"), _by_case(spec, domain, "tokens")
    both = [c for c in p if c in s]
    return [s[c] for c in both], [p[c] for c in both]


def _why(c: Cadence) -> str:
    """Why a counter gives no per-pass figure."""
    name = "package" if c["domain"] == "package" else "GPU"
    if c["kind"] == "stale":
        return f"the {name} counter did not move in any of {c['windows']} windows"
    if c["kind"] == "batched":
        return (f"the {name} counter updates in batches, about every {c['period_s']:.1f} s (it moved in {c['moved']} of "
                f"{c['windows']} windows, the shortest {c['shortest_window_s']:.2f} s)")
    if c["kind"] == "unknown":
        return f"no {name} counter was read"
    return f"the {name} counter is live"


def energy_phrase(e: EnergySummary) -> str:
    """One line: speculative J per token and the ratio, or why energy is not available."""
    if not e["available"]:
        return f"energy {e['reason']}"
    spec, plain = e["spec"], e["plain"]
    bits = [f"energy ({e['domain']} counter)"]
    if spec and spec["joules_per_token"] is not None:
        bits.append(f"speculative {spec['joules_per_token']:.3f} J/token")
    if plain and plain["joules_per_token"] is not None:
        bits.append(f"plain {plain['joules_per_token']:.3f} J/token")
    if e["ratio"] is not None:
        iv = e["ratio_ci95"]
        bits.append(f"ratio {e['ratio']:.2f}×" + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else ""))
    return ": ".join(bits[:1]) + " " + ", ".join(bits[1:]) if len(bits) > 1 else bits[0]


def cadence_text(e: EnergySummary) -> list[str]:
    """One line per counter read: its cadence, and for a batched one its period."""
    out = []
    for c in e["cadence"]:
        if c["kind"] == "unknown":
            continue
        why = _why(c).removeprefix("the ")
        out.append(why[0].upper() + why[1:] + (f" (it moved in all {c['windows']} windows)" if c["kind"] == "live" else ""))
    if e["widened_reason"]:
        out.append(f"Not widened: {e['widened_reason']}")
    return out


def energy_text(e: EnergySummary, speedup: float | None = None) -> list[str]:
    """The summary's energy lines: per mode J per token (and per accepted token) with intervals, the energy ratio
    beside the speed ratio; or why not."""
    if not e["available"]:
        lines = [f"  energy            {e['reason']}"]
    else:
        lines = []
        for name, m in (("plain", e["plain"]), ("speculative", e["spec"])):
            if m is None:
                continue
            line = f"  energy {name:<11} {joules_text(m['joules_per_token'], m['joules_per_token_ci95'])} J/token"
            if m["joules_per_accepted"] is not None:
                line += f", {joules_text(m['joules_per_accepted'], m['joules_per_accepted_ci95'])} J/accepted draft"
            line += f"   {fmt(m['power_w'], '.1f', ' W')}  GPU {fmt(m['gpu_freq_mhz'], '.0f', ' MHz')}" \
                    f"  {fmt(m['gpu_temp_c'], '.0f', ' °C')}"
            lines.append(line)
        if e["ratio"] is not None:
            iv = e["ratio_ci95"]
            lines.append(f"  energy ratio      {e['ratio']:.2f}× the plain J/token"
                         + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "")
                         + (f" beside a {speedup:.2f}× speedup" if speedup else "")
                         + f" ({e['domain']} counter, intervals by {e['unit']})")
        if e["note"]:
            lines.append(f"  {'':<17} {e['note']}")
    if e["widened"]:
        wd = e["widened"]
        lines.append(f"  {'':<17} whole run, both modes and the work between passes: {wd['mean_power_w']:.1f} W "
                     f"({wd['domain']}) over {wd['span_s']:.0f} s ({wd['periods']:.0f} counter updates)")
    elif e["widened_reason"]:
        lines.append(f"  {'':<17} not widened: {e['widened_reason']}")
    return lines


def joules_text(x: float | None, iv: list[float] | None) -> str:
    """Joules to three places with the interval in brackets, or "—"."""
    if x is None:
        return "—"
    return f"{x:.3f}" + (f" [{iv[0]:.3f}, {iv[1]:.3f}]" if iv else "")
