"""Verify by block, engine against engine: where one engine's verify forward is cheaper, per block and position count.

A session's verify by block (``verify_table``) comes from the engine that decoded it: for another engine, its opened
pass (``engine_adapter.engines.opened``: its own target forwards timed by block while its loop decoded); for
specscope's own engine, the case breakdowns (one decode step and one verify forward at the prompt's end, barrier-timed
over reps). Both rulers are the same instrumentation (every block between barriers, its exclusive time); every
forward's (or rep's) figures are pooled over the cases.

``block_difference`` puts two tables side by side at each position count both have, block by block: the median ms
per forward, the ratio B ÷ A and its 95% bootstrap interval (each side's samples resampled, a fixed seed). A block
differs *beyond noise* when that interval excludes 1 and the ratio is at least ``MIN_EFFECT`` away from it (a
smaller difference on a shared machine is as likely the machine as the engine). The line names the block whose
verify differs most in ms among those, with its figures; where none does, it says so, with the largest difference
seen. No MLX.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from specscope.profiler.analysis import resample
from specscope.profiler.analysis.by_block_records import BlockDifference, BlockRow, VerifyTable, WidthRow
from specscope.profiler.analysis.summary_core import BLOCK_LABELS

MIN_EFFECT = 0.15   # a ratio within 15% of 1 is never named, whatever its interval
BOOT = 2000
SEED = 20260


def _pool(rows: dict[int, WidthRow], n: int, blocks: Mapping[str, Sequence[float]], forwards: int) -> None:
    row = rows.setdefault(n, {"positions": n, "forwards": 0, "blocks": {}})
    row["forwards"] += forwards
    for c, xs in blocks.items():
        row["blocks"].setdefault(c, []).extend(float(x) for x in xs)


def verify_table(session) -> VerifyTable | None:
    """The session's verify (and plain-step) forwards by block, pooled over its cases; None without any."""
    eng = (session.config.get("engine") or {}).get("name") or "specscope"
    bds = [c.get("breakdown") for c in session.cases if c.get("breakdown")]
    opened = [bd["engine"] for bd in bds if (bd.get("engine") or {}).get("instrumented")]
    rows: dict[int, WidthRow] = {}
    labels: dict[str, str] = {}
    if opened:
        for op in opened:
            labels.update(op.get("labels") or {})
            for ph in [*(op.get("steps") or []), *(op.get("verify") or [])]:
                _pool(rows, int(ph["positions"]), (ph.get("samples") or {}).get("blocks") or {}, int(ph["forwards"]))
        source = "opened"
    else:
        for bd in bds:
            labels.update(bd.get("labels") or {})
            for ph in (bd.get("decode"), bd.get("verify")):
                if ph and (ph.get("samples") or {}).get("blocks"):
                    _pool(rows, int(ph["positions"]), ph["samples"]["blocks"], int(ph.get("reps") or 0))
        source = "breakdown"
    if not rows:
        return None
    return {"engine": eng, "source": source, "rows": [rows[n] for n in sorted(rows)], "labels": labels}


def _median(xs: Sequence[float]) -> float:
    return float(np.median(np.asarray(xs, dtype=np.float64)))


def _ratio_ci(a: Sequence[float], b: Sequence[float], rng: np.random.Generator) -> list[float] | None:
    """95% bootstrap interval of median(b) ÷ median(a), each side resampled on its own."""
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(xa) < 2 or len(xb) < 2:
        return None
    ma = resample.statistic(xa, np.median, rng, BOOT)  # the one resampling rule (analysis.resample)
    mb = resample.statistic(xb, np.median, rng, BOOT)
    ok = ma > 0
    if ok.sum() < BOOT // 2:
        return None
    r = mb[ok] / ma[ok]
    return [float(np.quantile(r, 0.025)), float(np.quantile(r, 0.975))]


def block_difference(ta: VerifyTable, tb: VerifyTable, names: Sequence[str] = ("A", "B")) -> BlockDifference:
    """Two sessions' verify by block side by side (see the module's docstring)."""
    rng = resample.generator(SEED)
    a_rows = {r["positions"]: r for r in ta["rows"]}
    b_rows = {r["positions"]: r for r in tb["rows"]}
    labels = {**BLOCK_LABELS, **ta["labels"], **tb["labels"]}
    rows: list[BlockRow] = []
    for n in sorted(set(a_rows) & set(b_rows)):
        for c in [c for c in a_rows[n]["blocks"] if c in b_rows[n]["blocks"]]:
            xa, xb = a_rows[n]["blocks"][c], b_rows[n]["blocks"][c]
            if not xa or not xb:
                continue
            ma, mb = _median(xa), _median(xb)
            if ma <= 0 and mb <= 0:
                continue
            ratio = mb / ma if ma > 0 else None
            ci = _ratio_ci(xa, xb, rng)
            beyond = (ratio is not None and ci is not None and (ci[0] > 1 or ci[1] < 1)
                      and abs(ratio - 1) >= MIN_EFFECT)
            rows.append({"positions": n, "block": c, "label": labels.get(c, c), "a_ms": ma, "b_ms": mb,
                         "delta_ms": mb - ma, "ratio": ratio, "ratio_ci95": ci, "beyond_noise": bool(beyond)})
    sources = {names[0]: ta["source"], names[1]: tb["source"]}
    out: BlockDifference = {"rows": rows, "named": None, "line": "", "sources": sources, "min_effect": MIN_EFFECT}
    if ta["source"] != tb["source"]:
        out["note"] = (f"{names[0]}'s figures are its {_source_words(ta)}, {names[1]}'s its {_source_words(tb)}: the "
                       "same barrier ruler, at different points of the case")
    if not rows:
        out["line"] = (f"verify by block: no position count measured in both ({names[0]}: "
                       f"{_widths(ta)}; {names[1]}: {_widths(tb)})")
        return out
    verify_rows = [r for r in rows if r["positions"] > 1] or rows
    named = [r for r in verify_rows if r["beyond_noise"]]
    if named:
        top = max(named, key=lambda r: abs(r["delta_ms"]))
        out["named"] = top
        cheaper = names[1] if top["delta_ms"] < 0 else names[0]
        out["line"] = (f"verify differs most in {top['label']} at {top['positions']} positions: "
                       f"{top['a_ms']:.2f} ms ({names[0]}) vs {top['b_ms']:.2f} ms ({names[1]}) per verify, "
                       f"{_ratio_words(top)}; {cheaper}'s is cheaper there")
    else:
        top = max(verify_rows, key=lambda r: abs(r["delta_ms"]))
        out["line"] = (f"verify by block: no block differs beyond noise (largest: {top['label']} at "
                       f"{top['positions']} positions, {top['a_ms']:.2f} vs {top['b_ms']:.2f} ms, {_ratio_words(top)}; "
                       f"a block is named when its ratio's 95% interval excludes 1 and it is {MIN_EFFECT:.0%} or more "
                       "away from it)")
    return out


def _ratio_words(r: BlockRow) -> str:
    if r["ratio"] is None:
        return "no ratio (nothing measured on one side)"
    ci = r["ratio_ci95"]
    return f"ratio {r['ratio']:.2f}×" + (f" (95% {ci[0]:.2f}–{ci[1]:.2f})" if ci else " (too few forwards for an interval)")


def _source_words(t: VerifyTable) -> str:
    return ("own forwards while its loop decoded (opened pass)" if t["source"] == "opened"
            else "breakdown (one forward at the prompt's end)")


def _widths(t: VerifyTable) -> str:
    return ", ".join(str(r["positions"]) for r in t["rows"]) or "none"


def compare_by_block(a, b, names: Sequence[str] = ("A", "B")) -> BlockDifference | None:
    """Two sessions' verify by block (``block_difference``); None where either has no breakdown at all."""
    ta, tb = verify_table(a), verify_table(b)
    if ta is None or tb is None:
        return None
    return block_difference(ta, tb, names)


def opened_lines(session) -> list[str]:
    """The summary's lines for another engine's opened pass: its forwards by block per position count, median over
    its forwards and the cases, and what the instrumentation cost (or why it could not be done)."""
    ops: list[Mapping[str, Any]] = [c["breakdown"]["engine"] for c in session.cases
                                    if (c.get("breakdown") or {}).get("engine")]
    if not ops:
        return []
    name = ops[0].get("engine", "the engine")
    if not any(op.get("instrumented") for op in ops):
        return [f"  {name} opened   not instrumented: {ops[0].get('reason', '')}"]
    t = verify_table(session)
    assert t is not None
    ins = [op for op in ops if op.get("instrumented")]
    costs = [op["cost"] for op in ins if op.get("cost") is not None]
    same = all(op.get("same_tokens") for op in ins)
    labels = {**BLOCK_LABELS, **t["labels"]}
    heads = [f"{'verify' if r['positions'] > 1 else 'step'} ({r['positions']} pos, {r['forwards']} fwd)"
             for r in t["rows"]]
    lines = [f"  {name}'s own forwards, opened (its loop untouched, its target's blocks timed; ms per forward, median)",
             "    " + " " * 36 + "".join(f"{h:>24}" for h in heads)]
    blocks = [c for c in labels if any(c in r["blocks"] for r in t["rows"])]
    for c in blocks:
        cells = [f"{_median(r['blocks'][c]):.2f}" if r["blocks"].get(c) else "–" for r in t["rows"]]
        lines.append(f"    {labels[c]:<36}" + "".join(f"{x:>24}" for x in cells))
    passes = sum(int(op.get("passes") or 0) for op in ins)
    lines.append(f"    instrumentation cost {np.median(costs):+.1%} decode time (instrumented passes against untouched "
                 f"ones, {passes} each over {len(ins)} case{'s' if len(ins) != 1 else ''}); the speeds above are the "
                 "measured passes' only" + ("" if same else "; WARNING: an instrumented pass's tokens differed"))
    return lines
