"""Does this machine have a font for the Chinese prompts? (macOS always does; bare Linux often not.)"""

from __future__ import annotations

import sys

CJK_HINT = ("no CJK font: Chinese prompts show as boxes; install one "
            "(Debian/Ubuntu: apt install fonts-noto-cjk; Fedora: dnf install google-noto-sans-cjk-fonts)")


def missing_cjk_font_message(platform: str = sys.platform) -> str | None:
    """A one-line hint when no installed font can draw Simplified Chinese, else None."""
    from PySide6.QtGui import QFontDatabase

    if platform == "darwin":
        return None
    if QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese):
        return None
    return CJK_HINT
