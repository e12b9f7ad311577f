"""Plain-words verdicts and the three audit questions, shared by the CLI, GUI and reports."""

from __future__ import annotations


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.0f}%"


def acceptance_phrase(s: dict) -> str:
    """An acceptance number never travels without its regime and sample size."""
    if s.get("p") is None:
        return "acceptance: no rounds measured"
    lo, hi = s["p_ci95"]
    text = f"acceptance {s['p'] * 100:.1f}% (95% CI {lo * 100:.1f}–{hi * 100:.1f}%, {s['regime']}, {s['drafted']} drafted tokens)"
    if s.get("low_sample"):
        text += " — fewer than 128 drafted tokens: treat as noise"
    if s.get("what_if"):
        text += " — oracle what-if, not a real drafter"
    return text


def verdict(s: dict) -> str:
    m = s.get("measured_speedup")
    if m is None:
        return "No verdict yet: plain and speculative runs are still being measured."
    k = s["k"]
    head = f"Speculation {'wins' if m >= 1 else 'loses'} {_pct(m - 1)}"
    parts = []
    if s.get("verify_multiple") is not None:
        parts.append(f"verifying {k + 1} positions costs {s['verify_multiple']:.2f} plain steps")
    if s.get("break_even_multiple") is not None:
        parts.append(f"break-even needs ≤ {s['break_even_multiple']:.2f}")
    text = head + (": " + "; ".join(parts) if parts else "") + "."
    if k == 1 and s.get("verify_multiple") is not None and s["verify_multiple"] >= 2:
        text += " Verify costs two plain steps or more, so no drafter can win at k=1: only a cheaper verify can."
    if s.get("what_if"):
        text += " (oracle what-if drafter)"
    return text


def audit_answers(s: dict) -> list[tuple[str, str]]:
    """The three questions to ask of any speculative-decoding benchmark, answered for this run."""
    k = s["k"]
    q1 = (
        f"One verify of {k + 1} positions costs {s['verify_multiple']:.2f} plain decode steps "
        f"(T_verify {s['t_verify_ms']:.2f} ms vs T_decode {s['t_decode_ms']:.2f} ms)."
        if s.get("verify_multiple") is not None
        else "Not measured yet."
    )
    cats = ", ".join(sorted(s.get("acceptance_by_category", {})))
    q2 = f"{acceptance_phrase(s)}; content categories: {cats or 'none'}."
    q3 = (
        f"End to end: {s['spec_tok_s']:.1f} vs {s['plain_tok_s']:.1f} tok/s on the same prompts and token budget "
        f"(measured {s['measured_speedup']:.3f}×; the division predicted {s['predicted_speedup']:.3f}×)."
        if s.get("measured_speedup") is not None and s.get("predicted_speedup") is not None
        else "Not measured yet."
    )
    return [
        ("How many plain steps does one verify round cost?", q1),
        ("What regime, length and content was acceptance measured on?", q2),
        ("Is the speed measured end to end or inferred?", q3),
    ]
