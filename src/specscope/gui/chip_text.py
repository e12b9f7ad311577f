"""The public wide-verify figures for a session's chip (``engine_adapter.chip_facts``) beside what the session's verify
curve measured at the same widths: the Verify cost page's line and the report's. No Qt here (a report renders without
it), so the curve is read here the way ``charts.cost_data.verify_curve_data`` draws it: each width's whole-graph time
over the n = 1 time; a time that is missing, not finite or negative is no figure."""

from __future__ import annotations

import math
from typing import Any, Mapping, TypedDict, cast

from specscope.engine_adapter.chip_facts import (MEASURED, QMV_WIDE_SOURCE, beside_this_machine, chip_name,
                                                 inferred_from, wide_verify_facts)
from specscope.profiler.session.measured import whole_roofline


class ChipComparison(TypedDict):
    """A head line, one line per public figure (with this session's at the same width), and the whole statement with
    what each figure timed."""
    applies: bool       # False: CPU backend, an unknown chip, or no chip recorded: the head says which, no figure
    head: str
    lines: list[str]
    full: str


def _ms(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 else None


def chip_comparison(environment: Mapping[str, Any] | None, roof: Mapping[str, Any] | None) -> ChipComparison:
    """What a wide verify is expected to cost on the session's chip from the public measurements (cited), each beside
    what this session's verify curve measured at the same width (a width it did not measure says so). The chip and the
    device are the roofline's (the machine it measured) else the session environment's; on a CPU device, or a chip the
    table does not know, the head says the facts do not apply and there is no figure."""
    env, r = environment or {}, roof or {}
    names = [r.get("chip"), env.get("device_name"), env.get("chip")]
    chip = next((n for n in names if chip_name(n)), None) or next((n for n in names if n and n != "unknown"), None)
    device = r.get("device") or env.get("device")
    if chip is None and device is None:
        text = "Public wide-verify figures by chip: no chip recorded in this session."
        return {"applies": False, "head": text, "lines": [], "full": text}
    facts = wide_verify_facts(chip, device)
    if not facts["applies"]:
        head = f"Public wide-verify figures by chip: {facts['text']}."
        return {"applies": False, "head": head, "lines": [], "full": head}
    whole = whole_roofline(cast(Any, roof))
    width = whole["k"] + 1 if whole and isinstance(whole.get("k"), int) else None
    name = f"Apple {facts['chip']}" if facts["chip"] else f"an Apple {facts['family']} chip"
    whence = inferred_from(facts["measurements"], facts["generation"] or 0)
    basis = ("measured on this chip" if facts["basis"] == MEASURED else
             f"not measured on this chip, inferred from the generation ({whence})")
    head = (f"{name} (GPU generation {facts['generation']}): qmv_wide "
            f"{'applies' if facts['qmv_wide'] else 'does not apply to affine-quantized weights'} ({QMV_WIDE_SOURCE}). "
            f"Public wide-verify figures, {basis}, beside this session's curve (decode steps):")
    # decode steps by verify width: each point's whole-graph time over the n = 1 time (none without a usable n = 1)
    points = {p.get("positions"): _ms(p.get("whole_ms")) for p in (r.get("curve") or [])}
    one = points.get(1)
    steps = {int(n): ms / one for n, ms in points.items() if one and ms is not None and isinstance(n, int)}
    lines = beside_this_machine(facts, steps, width, short=True) or ["no public figure for this generation"]
    return {"applies": True, "head": head, "lines": lines, "full": facts["text"]}
