"""CSV: one row per case with the per-case measurements.

Columns are stable and named in plain words; empty cells mean "not measured".
Acceptance columns are per case (each case's own rounds); the regime and k are
repeated on every row so a row read on its own still says what it measured.
Paths under the home folder are shown relative to ``~`` (see ``redact``).
An estimated time whose spread over reps reaches zero (the inter-block overhead) is written
"below noise", never as a negative number. Cases left out of the summary (``--discard-first``)
are marked ``discarded``.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Mapping

from specscope.profiler.analysis.intervals import noise_label
from specscope.profiler.analysis.stats import median
from specscope.profiler.analysis.rounds import full_round
from specscope.profiler.analysis.summary import session_case_stats
from specscope.profiler.analysis.tree_figures import tree_budget
from . import redact
from specscope.profiler.analysis.energy import energy_figures, measured_windows

from .records import CaseEnergy, CsvSideTables


def _num(x, nd=4):
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{nd}f}"


def _text(s: str) -> str:
    """Prompt text in a spreadsheet: a leading = + - @ would be read as a formula."""
    s = (s or "").replace("\r", " ").replace("\n", " ")
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t") else s


def _time(x, interval, nd=3):
    """An estimated time: "below noise" when its spread reaches zero, else the number."""
    if x is None:
        return ""
    return noise_label(x, interval, f".{nd}f") or _num(x, nd)


def _lo_hi(iv, nd=3):
    return (_num(iv[0], nd), _num(iv[1], nd)) if iv else ("", "")


TREE_COLUMNS = ["tree_budget", "tree_rounds", "tree_nodes_per_round", "tree_depth_per_round", "tree_accepted_per_round",
                "tree_nodes_per_accepted", "tree_nodes_per_token", "tree_depth_histogram"]


def columns(k: int, tree: bool = False) -> list[str]:
    """The per-case columns; a tree run's (``--tree-budget``) add ``TREE_COLUMNS`` before the prompt (a chain run's
    columns are as they always were)."""
    cols = _columns(k)
    return cols[:-1] + TREE_COLUMNS + cols[-1:] if tree else cols


def _tree_cells(row: dict, c, k: int, budget: int) -> None:
    """A case's tree figures over the rounds its acceptance counts (``analysis.tree_figures``), into its row."""
    from collections import Counter

    from specscope.profiler.analysis.rounds import counts_for_acceptance
    from specscope.profiler.analysis.tree_figures import tally, tree_figures

    counted = [r for r in c["spec"]["rounds"] if full_round(r, k) and counts_for_acceptance(r)]
    t = tree_figures(budget, tally(counted), Counter(r["accepted"] for r in counted), k)
    if t is None:
        return
    hist = t["depth_histogram"]
    last = max((j for j, n in enumerate(hist) if n), default=0)
    row.update({"tree_budget": str(budget), "tree_rounds": str(t["rounds"]), "tree_nodes_per_round": _num(t["nodes_per_round"]),
            "tree_depth_per_round": _num(t["depth_per_round"]), "tree_accepted_per_round": _num(t["accepted_per_round"]),
            "tree_nodes_per_accepted": _num(t["nodes_per_accepted"]), "tree_nodes_per_token": _num(t["nodes_per_token"]),
            "tree_depth_histogram": " ".join(f"{j}:{hist[j]}" for j in range(last + 1))})


def _columns(k: int) -> list[str]:
    return (
        ["id", "content_class", "complete", "discarded", "repeats", "regime", "k", "prompt_tokens", "plain_tokens", "spec_tokens",
         "plain_prefill_ms", "spec_prefill_ms", "plain_tok_s", "spec_tok_s",
         "plain_tok_s_min", "plain_tok_s_max", "spec_tok_s_min", "spec_tok_s_max",
         "t_decode_ms", "t_verify_ms", "t_draft_ms", "t_rollback_ms",
         "rounds", "drafted", "accepted", "p", "p_ci95_low", "p_ci95_high"]
        + [f"a_{i}" for i in range(1, k + 1)]
        + ["tokens_per_round", "predicted_speedup", "division_speedup", "ledger_speedup", "components_t_verify_ms",
           "components_t_draft_ms", "components_t_rollback_ms", "components_t_bookkeeping_ms",
           "measured_speedup", "prediction_error",
           "match_rate", "outputs_equal", "first_divergence",
           "decode_whole_ms", "verify_whole_ms", "verify_over_decode",
           "decode_block_sum_ms", "verify_block_sum_ms", "decode_inter_block_ms", "verify_inter_block_ms",
           "plain_joules_per_token", "spec_joules_per_token", "spec_joules_per_accepted", "energy_counter", "prompt"]
    )


def rows(session) -> list[dict]:
    k = session.k
    budget = tree_budget(session)
    regime = session.regime
    out = []
    windows = session.data.get("sensors") or []
    trusted = energy_figures(windows)["domain"]   # the counter the run's figures come from (None: none can be trusted)
    for c in session.cases:
        st = session_case_stats(session, c)
        acc = st["acceptance"]
        full = [r for r in c["spec"]["rounds"] if full_round(r, k)]
        m: Mapping[str, Any] = st["match"] or {}
        bd = c.get("breakdown") or {}
        dec, ver = bd.get("decode") or {}, bd.get("verify") or {}
        energy = _case_energy(windows, c["id"], trusted)
        ratio = ver["whole_ms"] / dec["whole_ms"] if dec.get("whole_ms") and ver.get("whole_ms") is not None else None
        lo, hi = acc["p_ci95"] if acc["rounds"] else (None, None)
        plain_lo, plain_hi = _lo_hi(st.get("plain_tok_s_spread"))
        spec_lo, spec_hi = _lo_hi(st.get("spec_tok_s_spread"))
        row = {
            "id": c["id"],
            "content_class": c.get("content_class", ""),
            "complete": _num(bool(c.get("complete"))),
            "discarded": _num(bool(c.get("discarded"))),
            "repeats": st.get("repeats") or "",
            "regime": regime,
            "k": k,
            "prompt_tokens": len(c.get("prompt_tokens") or []),
            "plain_tokens": len(c["plain"]["tokens"]),
            "spec_tokens": len(c["spec"]["tokens"]),
            "plain_prefill_ms": _num(c["plain"].get("prefill_ms"), 3),
            "spec_prefill_ms": _num(c["spec"].get("prefill_ms"), 3),
            "plain_tok_s": _num(st["plain_tok_s"], 3),
            "spec_tok_s": _num(st["spec_tok_s"], 3),
            "plain_tok_s_min": plain_lo, "plain_tok_s_max": plain_hi,
            "spec_tok_s_min": spec_lo, "spec_tok_s_max": spec_hi,
            "t_decode_ms": _num(st["t_decode_ms"], 3),
            "t_verify_ms": _num(st["t_verify_ms"], 3),
            "t_draft_ms": _num(st["t_draft_ms"], 3),
            "t_rollback_ms": _num(median(r.get("rollback_ms", 0.0) for r in full), 3),
            "rounds": acc["rounds"],
            "drafted": acc["drafted"],
            "accepted": acc["accepted"],
            "p": _num(acc["p"]),
            "p_ci95_low": _num(lo),
            "p_ci95_high": _num(hi),
            "tokens_per_round": _num(acc["tokens_per_round"]),
            "predicted_speedup": _num(st["predicted_speedup"]),
            "ledger_speedup": _num(st.get("ledger_speedup")),
            "components_t_verify_ms": _num(st.get("components_t_verify_ms"), 3),
            "components_t_draft_ms": _num(st.get("components_t_draft_ms"), 3),
            # the case's judged round prices these too; its division (the seed's, without them) beside it
            "division_speedup": _num(st.get("division_speedup")),
            "components_t_rollback_ms": _num(st.get("components_t_rollback_ms"), 3),
            "components_t_bookkeeping_ms": _num(st.get("components_t_bookkeeping_ms"), 3),
            "measured_speedup": _num(st["measured_speedup"]),
            "prediction_error": _num(st["prediction_error"]),
            "match_rate": _num(m.get("match_rate")),
            "outputs_equal": _num(m.get("equal")) if m else "",
            "first_divergence": "" if m.get("first_divergence") is None else m["first_divergence"],
            "decode_whole_ms": _num(dec.get("whole_ms"), 3),
            "verify_whole_ms": _num(ver.get("whole_ms"), 3),
            "verify_over_decode": _num(ratio),
            "decode_block_sum_ms": _num(dec.get("block_sum_ms"), 3),
            "verify_block_sum_ms": _num(ver.get("block_sum_ms"), 3),
            "decode_inter_block_ms": _time(dec.get("inter_block_ms"), (dec.get("spread") or {}).get("inter_block_ms")),
            "verify_inter_block_ms": _time(ver.get("inter_block_ms"), (ver.get("spread") or {}).get("inter_block_ms")),
            "plain_joules_per_token": _num(energy.get("plain"), 4),
            "spec_joules_per_token": _num(energy.get("spec"), 4),
            "spec_joules_per_accepted": _num(energy.get("spec_per_accepted"), 4),
            "energy_counter": energy["counter"],
            "prompt": _text(c.get("prompt", "")),
        }
        if budget:
            _tree_cells(row, c, k, budget)
        for i in range(k):
            row[f"a_{i + 1}"] = _num(acc["per_position"][i]) if acc["rounds"] and i < len(acc["per_position"]) else ""
        out.append(row)
    return out


def _case_energy(windows, case_id: str, domain: str | None) -> CaseEnergy:
    """The case's J per token from the run's trusted counter (a live one: ``analysis.energy``), else nothing."""
    if domain is None:
        return {"plain": None, "spec": None, "spec_per_accepted": None, "counter": "not available"}
    ws = [w for w in windows if w.get("case") == case_id]

    def per(mode: str, what: str) -> float | None:
        mine = measured_windows(ws, mode)
        n = sum(w.get(what) or 0 for w in mine)
        return sum((w.get("energy_j") or {}).get(domain) or 0.0 for w in mine) / n if n else None
    return {"plain": per("plain", "tokens"), "spec": per("spec", "tokens"), "spec_per_accepted": per("spec", "accepted"),
            "counter": domain}


def render(session) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns(session.k, bool(tree_budget(session))), lineterminator="\n")
    w.writeheader()
    for row in rows(session):
        w.writerow(row)
    return redact(buf.getvalue())  # a prompt or id quoting a path under the home folder shows it relative to ~


VERIFY_COST_COLUMNS = ["positions", "whole_ms", "whole_ms_min", "whole_ms_max", "multiple_of_decode", "ideal_multiple",
                       "block", "block_ms", "weight_bytes", "other_bytes", "flops", "floor_ms", "bound", "efficiency",
                       "distinct_experts"]
TUNE_COLUMNS = ["drafter", "k", "predicted_speedup", "predicted_ci95_low", "predicted_ci95_high", "measured_speedup",
                "prediction_error", "recommended", "acceptance_source", "tokens_per_round", "tokens_per_round_k_max_rounds",
                "measured_tokens_per_round"]


TRACE_COLUMNS = ["case", "content_class", "drafter", "position", "agree", "k_max", "estimate"]
CONTEXT_COLUMNS = ["context", "visits", "cases", "plain_tok_s", "plain_tok_s_ci95_low", "plain_tok_s_ci95_high",
                   "spec_tok_s", "spec_tok_s_ci95_low", "spec_tok_s_ci95_high", "t_decode_ms", "t_verify_ms",
                   "verify_over_decode", "t_draft_ms", "t_draft_ms_ci95_low", "t_draft_ms_ci95_high", "t_draft_note",
                   "full_attention_share_decode", "full_attention_share_verify", "kv_bytes_per_step", "context_cache_bytes",
                   "p", "p_ci95_low", "p_ci95_high", "tokens_per_round", "tokens_per_round_ci95_low",
                   "tokens_per_round_ci95_high", "predicted_speedup", "measured_speedup", "measured_speedup_ci95_low",
                   "measured_speedup_ci95_high", "break_even_verify_ms", "break_even_multiple", "prefill_ms", "prefill_tok_s",
                   "draft_prefill_ms", "low_sample"]


def _context_rows(session) -> list[dict]:
    """One row per context of a sweep (``sweep_figures``: recomputed from each point's own session)."""
    if not (session.data.get("sweep") or {}).get("points"):
        return []
    from specscope.profiler.analysis.sweep import draft_is_noise, sweep_figures

    out = []
    for point in sweep_figures(session):
        r: Mapping[str, Any] = point  # its keys are built below (``<figure>_ci95``)
        row = {k: _num(r.get(k)) for k in ("plain_tok_s", "spec_tok_s", "t_decode_ms", "t_verify_ms", "t_draft_ms",
                                            "full_attention_share_decode", "full_attention_share_verify", "p",
                                            "tokens_per_round", "predicted_speedup", "measured_speedup",
                                            "break_even_verify_ms", "break_even_multiple", "prefill_ms", "prefill_tok_s",
                                            "draft_prefill_ms")}
        for key in ("plain_tok_s", "spec_tok_s", "t_draft_ms", "p", "tokens_per_round", "measured_speedup"):
            lo, hi = r.get(f"{key}_ci95") or (None, None)
            row[f"{key}_ci95_low"], row[f"{key}_ci95_high"] = _num(lo), _num(hi)
        row.update({"context": r["context"], "visits": r.get("visits"), "cases": r.get("cases"),
                    "verify_over_decode": _num(r.get("verify_multiple")),
                    # an in-round draft time is a round less the verify before it: below zero it is noise, kept as measured
                    "t_draft_note": "below zero: noise" if draft_is_noise(r) else "",
                    "kv_bytes_per_step": _num(r.get("kv_bytes_per_step"), 0), "context_cache_bytes": r.get("cache_bytes"),
                    "low_sample": _num(bool(r.get("low_sample")))})
        if row["context"] == 0:
            row["prefill_ms"] = row["prefill_tok_s"] = ""  # no context, nothing prefilled
        out.append(row)
    return out


def _table(fields: list[str], rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


PREFLIGHT_COLUMNS = ["check", "status", "evidence", "fix"]


def extra_tables(session) -> CsvSideTables:
    """The verify cost curve (one row per n and block), the tuning rows, the acceptance traces (one row per
    case and position), a context sweep (one row per context) and the pre-flight (one row per check), when the
    session has them."""
    out: CsvSideTables = {}
    pf = session.data.get("preflight") or {}
    if pf.get("checks"):
        out["preflight"] = _table(PREFLIGHT_COLUMNS, [
            {"check": c.get("name"), "status": c.get("status"), "evidence": _text(redact(c.get("evidence") or "")),
             "fix": _text(redact(c.get("fix") or ""))} for c in pf["checks"]])
    roof = session.data.get("roofline") or {}
    rows = []
    for p in roof.get("curve") or []:
        point = {k: _num(p.get(k)) for k in ("whole_ms", "whole_ms_min", "whole_ms_max", "multiple_of_decode", "ideal_multiple")}
        for cat, c in (p.get("by_block") or {}).items():
            rows.append({"positions": p.get("positions"), **point, "block": cat, "block_ms": _num(c.get("ms")),
                         "weight_bytes": c.get("weight_bytes"), "other_bytes": c.get("other_bytes"), "flops": _num(c.get("flops")),
                         "floor_ms": _num(c.get("floor_ms")), "bound": c.get("bound"), "efficiency": _num(c.get("efficiency")),
                         "distinct_experts": _num(c.get("distinct_experts"))})
    if rows:
        out["verify_cost"] = _table(VERIFY_COST_COLUMNS, rows)
    tune = session.data.get("tune") or {}
    rec = tune.get("recommendation") or {}
    rows = []
    for r in tune.get("rows") or []:
        ci = r.get("predicted_ci95") or [None, None]
        rows.append({"drafter": r.get("drafter"), "k": r.get("k"), "predicted_speedup": _num(r.get("predicted_speedup")),
                     "predicted_ci95_low": _num(ci[0]), "predicted_ci95_high": _num(ci[1]),
                     "measured_speedup": _num(r.get("measured_speedup")), "prediction_error": _num(r.get("prediction_error")),
                     "recommended": "true" if (r.get("drafter"), r.get("k")) == (rec.get("drafter"), rec.get("k")) else "false",
                     # E(k): from the acceptance trace (or the K_max rounds, in older sessions), and what was measured
                     "acceptance_source": r.get("acceptance_source") or "k_max_rounds",
                     "tokens_per_round": _num(r.get("tokens_per_round")),
                     "tokens_per_round_k_max_rounds": _num(r.get("tokens_per_round_k_max_rounds")),
                     "measured_tokens_per_round": _num(r.get("measured_tokens_per_round"))})
    if rows:
        out["tune"] = _table(TUNE_COLUMNS, rows)
    rows = [{"case": c.get("id"), "content_class": c.get("content_class"), "drafter": c["trace"].get("drafter"), "position": s,
             "agree": a, "k_max": c["trace"].get("k_max"), "estimate": "true" if c["trace"].get("estimate") else "false"}
            for c in session.cases if isinstance(c.get("trace"), dict) for s, a in enumerate(c["trace"].get("A") or [])]
    if rows:  # the acceptance trace A(s), one row per case and position (r.trace.csv)
        out["trace"] = _table(TRACE_COLUMNS, rows)
    rows = _context_rows(session)
    if rows:  # a context sweep, one row per context (r.context.csv)
        out["context"] = _table(CONTEXT_COLUMNS, rows)
    return out
