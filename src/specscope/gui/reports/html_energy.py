"""The report's "Energy" section: joules per generated and per accepted token for each mode with their intervals, the
energy ratio beside the speedup, and each counter's cadence (``analysis.energy``); or why energy is not available."""

from __future__ import annotations

from specscope.profiler.analysis.energy import cadence_text, joules_text
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table
from specscope.profiler.session.measured import EnergyMode, EnergySummary

HEAD = ["Mode", "J per generated token", "J per accepted draft", "Mean power", "GPU clock", "GPU temp.", "Passes"]


def _row(name: str, m: EnergyMode) -> list[str]:
    def num(x, spec, unit):
        return "—" if x is None else f"{x:{spec}} {unit}"
    return [esc(c) for c in (name, joules_text(m["joules_per_token"], m["joules_per_token_ci95"]),
                             joules_text(m["joules_per_accepted"], m["joules_per_accepted_ci95"]) if m["accepted"] is not None
                             else "— (no drafts)", num(m["power_w"], ".1f", "W"), num(m["gpu_freq_mhz"], ".0f", "MHz"),
                             num(m["gpu_temp_c"], ".0f", "°C"), str(m["windows"]))]


def energy_section(e: EnergySummary, speedup: float | None) -> str:
    head = "<h2>Energy</h2>"
    cad = "".join(f"<li>{esc(t)}</li>" for t in cadence_text(e))
    cad_html = f"<p>Counters, as this run's windows read them:</p><ul>{cad}</ul>" if cad else ""
    if not e["available"]:
        wide = ""
        if e["widened"]:
            w = e["widened"]
            wide = (f"<p>Widened to the whole run instead (both modes and the work between passes, not per mode): "
                    f"{w['mean_power_w']:.1f} W ({esc(w['domain'])}) over {w['span_s']:.0f} s.</p>")
        reason = e['reason'] or 'not available'
        return head + f"<p><b>{esc(reason[:1].upper() + reason[1:])}.</b> No energy figure is printed.</p>" + wide + cad_html
    rows = [_row(n, m) for n, m in (("plain", e["plain"]), ("speculative", e["spec"])) if m]
    ratio = ""
    if e["ratio"] is not None:
        iv = e["ratio_ci95"]
        ivs = f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else " (no interval)"
        sp = f", beside a measured speedup of {speedup:.2f}×" if speedup else ""
        verdict = ("speculation spends less energy per token" if iv and iv[1] < 1 else
                   "speculation spends more energy per token" if iv and iv[0] > 1 else
                   "the two modes' energy per token is not told apart")
        ratio = f"<p>Energy ratio (speculative ÷ plain J per token): <b>{e['ratio']:.2f}×</b>{ivs}{esc(sp)}: {esc(verdict)}.</p>"
    note = f"<p class=\"muted\">{esc(e['note'])}.</p>" if e["note"] else ""
    return (head + f"<p>From the {esc(e['domain'] or '?')} energy counter, each measured pass in its own window "
            f"(95% intervals by {esc(e['unit'] or '?')}; a paired run's speculative figure is its end-to-end pass's). "
            "J per accepted draft divides the speculative passes' energy by the draft tokens the target accepted.</p>"
            + _table(HEAD, rows, numeric_from=1, numeric_to=len(HEAD)) + ratio + note + cad_html)
