"""Numbers as text, one way everywhere (CLI summary, app, reports): a dash for "not measured".

A value of exactly zero is a measurement and prints as 0, never as the dash.
"""

from __future__ import annotations

DASH = "—"


def fmt(x, spec: str = ".2f", suffix: str = "", none: str = DASH) -> str:
    """``x`` formatted with ``spec`` and ``suffix``; ``none`` when it was not measured."""
    if x is None:
        return none
    try:
        return f"{x:{spec}}{suffix}"
    except (TypeError, ValueError):
        return str(x)


def rate(x, suffix: str = "", none: str = DASH) -> str:
    """A rate (tok/s) with one decimal, or three significant digits below 1: a large model on a slow machine
    decodes at 0.032 tok/s, which one decimal would print as 0.0, a rate that reads as "nothing"."""
    if x is None:
        return none
    try:
        return f"{x:.1f}{suffix}" if x == 0 or abs(x) >= 1 else f"{x:.3g}{suffix}"
    except (TypeError, ValueError):
        return str(x)


def scaled(x, factor: float):
    """``x * factor``, keeping None as None (0 stays 0: ``x and x * f`` would turn it into a dash)."""
    return None if x is None else x * factor


def pct(x, nd: int = 1, signed: bool = False) -> str:
    if x is None:
        return DASH
    if abs(x * 100) < 0.5 * 10**-nd:
        x = 0.0
    return f"{x * 100:{'+' if signed else ''}.{nd}f}%"


def ci(pair, nd: int = 1) -> str:
    if not pair or pair[0] is None:
        return DASH
    return f"{pair[0] * 100:.{nd}f}–{pair[1] * 100:.{nd}f}%"


def mib(n) -> str:
    if not n:
        return DASH
    return f"{n / 2**20:,.0f} MiB" if n < 2**30 * 4 else f"{n / 2**30:,.1f} GiB"


def count(n) -> str:
    if n is None:
        return DASH
    if n >= 1e9:
        return f"{n / 1e9:.2f} B"
    if n >= 1e6:
        return f"{n / 1e6:.1f} M"
    return f"{n:,}"
