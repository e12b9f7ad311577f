"""Text helpers shared by the app's widgets, views and actions: no widgets here, so anything may import it."""

from __future__ import annotations

import os
import re

LABEL_MAX_CHARS = 2000  # a label shows at most this much of a (hostile or runaway) text
ZWSP = "\u200b"


def breakable(text: str, every: int = 80) -> str:
    """Insert a zero-width space into every run of more than ``every`` non-space characters.

    Qt lays out one unbreakable 200,000-character "word" for seconds to minutes (and a label sizes itself
    to its longest word: a window 17,000 px wide), so very long runs get invisible break points. Normal
    text (words, CJK, code lines with spaces) is unchanged.
    """
    if not text or len(text) <= every:
        return text
    return re.sub(r"\S{%d}(?=\S)" % every, lambda m: m.group(0) + ZWSP, text)


def home_relative(path) -> str:
    """A path as the user reads it: ``~/…`` under the home folder, unchanged elsewhere."""
    text = os.fspath(path)
    home = os.path.expanduser("~").rstrip("/\\")
    if not home or home == "~" or len(home) <= 1:
        return text
    if not os.path.isabs(os.path.expanduser(text)):
        return text  # relative to the working folder: already short, and no home path in it
    full = os.path.normpath(os.path.expanduser(text))
    if full == home:
        return "~"
    if full.startswith(home + os.sep):
        return "~" + os.sep + full[len(home) + 1:]
    return text


def clip(text: str, limit: int = LABEL_MAX_CHARS) -> str:
    if text and len(text) > limit:
        return text[:limit] + f"… (+{len(text) - limit:,} more characters)"
    return text


ERROR_PREFIX = "specscope: error: "


def error_text(stderr: str, code: int, what: str) -> str:
    """A ``specscope`` command's own "specscope: error: …" line, else the tail of what it printed."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith(ERROR_PREFIX):
            return ln[len(ERROR_PREFIX):]
    tail = "\n".join(lines[-8:])
    return f"{what} failed (exit code {code})" + (f":\n{tail}" if tail else "")
