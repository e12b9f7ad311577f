"""Count the functions in the package (``src/specscope``: the engine, the core, the app and the top-level modules)
annotated as returning a dict of any form (issue 35, item 3; the whole package since issue 52).

``dict``, ``dict[...]``, ``Dict``, ``Dict[...]``, and any of them in a union (``dict | None``), in the annotation or
as its string. A typed record (a dataclass, a TypedDict) is not counted: that is the point of the count.

    python tools/count_dict_returns.py [--list] [ROOT]

prints the count (and with ``--list`` each function as path:line name, and the reason it still returns a dict).
A function left returning a dict says why in a comment on its signature, ``# dict: <reason>`` (JSON passed through
whole, keys that are data, ...); the count says how many have no reason.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "src/specscope"  # every module under it, the app's and the top-level ones included


def _is_dict(node: ast.expr | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            return _is_dict(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(node, ast.Name):
        return node.id in ("dict", "Dict")
    if isinstance(node, ast.Attribute):
        return node.attr in ("Dict",)
    if isinstance(node, ast.Subscript):
        if _is_dict(node.value):
            return True
        if isinstance(node.value, (ast.Name, ast.Attribute)) and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Optional":
            return _is_dict(node.slice)
        return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_dict(node.left) or _is_dict(node.right)
    return False


REASON = "# dict: "


def _reason(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The ``# dict: <reason>`` comment on the function's signature (its def line to the line before its body)."""
    last = node.body[0].lineno - 1 if node.body else node.lineno
    for line in lines[node.lineno - 1:max(last, node.lineno)]:
        if REASON in line:
            return line.split(REASON, 1)[1].strip() or None
    return None


def dict_returning(root: Path) -> list[tuple[str, int, str, str | None]]:
    """(path relative to ``root``, line, name, reason or None) of every such function under ``root/src/specscope``."""
    out = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_dict(node.returns):
                out.append((path.relative_to(root).as_posix(), node.lineno, node.name, _reason(lines, node)))
    return sorted(out)


def main(argv: list[str]) -> int:
    show = "--list" in argv
    args = [a for a in argv if a != "--list"]
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    found = dict_returning(root)
    if show:
        for path, line, name, reason in found:
            print(f"{path}:{line} {name}" + (f"  ({reason})" if reason else ""))
    unsaid = sum(1 for *_, reason in found if not reason)
    print(f"{len(found)} functions in {PACKAGE} are annotated as returning a dict ({unsaid} without a reason)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
