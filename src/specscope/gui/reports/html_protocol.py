"""The report's protocol section: how the run guarded against drift (ABBA order, repeats with their spread,
discarded cases, cooldown, the clock probe and its verdict, the machine's sensors and thermal limits)."""

from __future__ import annotations

from specscope.profiler.session.records import Summary
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.drift import drift_phrase, drift_warning
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.intervals import spread_text
from specscope.profiler.analysis.formatting import fmt as f
from specscope.profiler.renderers.html_common import esc, kv_table


def drift_note(s: dict) -> str:
    """A warning note when the clock probe's speed changed by more than its own noise; "" otherwise."""
    w = drift_warning(s.get("probe"))
    return f'<p class="note error"><b>Drift warning.</b> {esc(w[0].upper() + w[1:])}.</p>' if w else ""


def _rate(x, iv, spec=".1f", unit=" tok/s") -> str:
    text = rate(x, unit) if unit == " tok/s" else f(x, spec, unit)
    return esc(text + (f" (repeats {spread_text(iv, spec)})" if iv else ""))


def _start_end(d: dict) -> str:
    """Early → late medians (thirds of the readings) when drift is judged; else the first → last reading,
    said as such: a short run's readings are shown, not hidden behind "too few to judge"."""
    tail = f"best {f(d.get('best_ms'))} ms; own noise: reps spread over {(d.get('noise') or 0) * 100:.1f}%, highest − lowest"
    if d.get("early_ms") is not None and d.get("late_ms") is not None:
        return (f"{f(d['early_ms'])} ms → {f(d['late_ms'])} ms (medians of the first and last third of the readings; "
                f"{tail})")
    if d.get("first_ms") is not None and d.get("last_ms") is not None:
        return (f"{f(d['first_ms'])} ms → {f(d['last_ms'])} ms (first and last of {d.get('readings', '?')} readings, "
                f"too few to judge drift; {tail})")
    return f"no readings ({tail})"


def _probe_rows(session, s) -> list:
    d = s.get("probe")
    kernel = (session.config.get("clock_probe") or {})
    if not d:
        return [("Clock probe", esc(drift_phrase(d)))]
    series = session.data.get("probe") or []
    readings = ", ".join(f"{p['ms']:.2f}" for p in series[:80]) + (" …" if len(series) > 80 else "")
    return [
        ("Clock probe", esc(f"{kernel.get('kernel', 'a fixed compute kernel')} on {kernel.get('device', 'the model device')}, "
                            f"median of {kernel.get('reps', '?')} reps, before and after every repeat")),
        ("Probe verdict", esc(drift_phrase(d))),
        ("Probe start → end", esc(_start_end(d))),
        ("Probe readings (ms)", f"<small>{esc(readings)}</small>"),
    ]


def _sensor_rows(session: Session, s: Summary) -> list:
    env = session.data.get("environment") or {}
    sensors = env.get("sensors") or {}
    rows = []
    if sensors:
        e = s["energy"]
        rows.append(("GPU sensors", esc((sensors.get("reason") or "not available") if not sensors.get("available") else
                                        f"{e['source'] or sensors.get('source')}: energy "
                                        + (f"from the {e['domain']} counter" if e["available"] else "not available")
                                        + " (see Energy)")))
    if sensors:
        therm = session.data.get("thermal") or []
        limited = [t for t in therm if any(v < 100 for k, v in (t.get("limits") or {}).items() if k.endswith("Limit"))]
        text = (sensors.get("thermal") if not therm else
                f"{len(therm)} readings of pmset -g therm; " + (
                    f"limited at case {limited[0].get('case')} ({limited[0].get('when')}): "
                    + ", ".join(f"{k} = {v}" for k, v in limited[0]["limits"].items()) if limited else "no limit in force"))
        rows.append(("Thermal limits", esc(text)))
    return rows


def protocol_section(session: Session, s: Summary) -> str:
    cfg = session.config
    reps = cfg.get("repeats", 1) or 1
    discarded = [c["id"] for c in session.cases if c.get("discarded")]
    cool = session.data.get("cooldowns") or []
    rows = [
        ("Order", esc(f"{reps} repeat(s) per case; plain (A) and speculative (B) in ABBA order across repeats "
                      "(AB, BA, AB, …), so a slow drift hits both alike" if reps > 1 else
                      "1 repeat per case: plain, then speculative (pass --repeats N for ABBA order and spreads)")),
        ("Plain decoding", _rate(s.get("plain_tok_s"), s.get("plain_tok_s_spread"))),
        ("Speculative", _rate(s.get("spec_tok_s"), s.get("spec_tok_s_spread"))),
        ("Measured speedup", _rate(s.get("measured_speedup"), s.get("measured_speedup_spread"), ".3f", "×")),
        ("Discarded cases", esc(f"{', '.join(discarded)}: measured and kept in the session, left out of every figure above"
                                if discarded else "none")),
        ("Cooldown", esc(f"before each case, until the probe was within 2% of its best (timeout {cfg.get('cooldown_timeout_s', 0):.0f} s): "
                         f"{sum(c.get('waited_s') or 0 for c in cool):.0f} s waited, "
                         f"{sum(1 for c in cool if not c.get('reached'))} timed out" if cfg.get("cooldown") else "off")),
        *_probe_rows(session, s),
        *_sensor_rows(session, s),
    ]
    return ("<h2>Protocol: order, repeats, drift</h2>"
            "<p>Rates pooled over every repeat (all tokens ÷ all time), with the spread (lowest–highest repeat) in "
            "brackets. The clock probe is a fixed "
            "compute-bound kernel on the model's device; its speed tracks the clock the device actually runs at.</p>"
            + kv_table(rows))
