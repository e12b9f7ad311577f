"""Build the long-context documents shipped in ``src/specscope/assets/context/`` (deterministic, offline).

One document per content class, real text that no training corpus of the project uses:

- code:    CPython 3.11.7 ``Lib/test/`` modules (the demo's corpus takes ``Lib/**/*.py`` *without* ``test/``), PSF-2.0
- english: the Debian Edu Bookworm manual, ``debian-edu-doc-en`` 2.12.23~deb12u1 (HTML), GPL-2+
- chinese: the same manual in Simplified Chinese (its translated paragraphs; then the Bullseye manual's that differ),
  ``debian-edu-doc-zh-cn`` 2.12.23~deb12u1 (HTML), GPL-2+

Paragraphs are kept in order; a paragraph is dropped when it repeats an earlier one or when it would make a
64-token passage occur twice (checked with both demo tokenizers), so the documents never repeat themselves.

    cd /tmp/ctx && apt-get download debian-edu-doc-en=2.12.23~deb12u1 debian-edu-doc-zh-cn=2.12.23~deb12u1
    for d in *.deb; do dpkg-deb -x $d x; done
    python tools/build_context_docs.py --debs-root /tmp/ctx/x --cpython-lib /path/to/python3.11/lib/python3.11
"""

from __future__ import annotations

import argparse
import re
from html.parser import HTMLParser
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "specscope" / "assets" / "context"
CODE_FILES = ("test_fractions.py", "test_statistics.py", "test_textwrap.py", "test_heapq.py", "test_bisect.py",
              "test_calendar.py", "test_difflib.py", "test_shlex.py", "test_string.py", "test_ipaddress.py")
MAX_CHARS = {"code": 70_000, "english": 90_000, "chinese": 60_000}
WINDOW = 64
CJK = re.compile(r"[\u4e00-\u9fff]")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.out, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "head"):
            self.skip += 1
        if tag in ("p", "div", "li", "h1", "h2", "h3", "h4", "pre", "tr", "br", "dt", "dd"):
            self.out.append("\n\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style", "head"):
            self.skip = max(0, self.skip - 1)

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data)


def html_paragraphs(path: Path) -> list[str]:
    p = _Text()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    text = "".join(p.out)
    paras = [re.sub(r"[ \t]+", " ", " ".join(x.split("\n"))).strip() for x in re.split(r"\n\s*\n", text)]
    return [x for x in paras if len(x) >= 40]


def code_paragraphs(lib: Path) -> list[str]:
    out = []
    for name in CODE_FILES:
        text = (lib / "test" / name).read_text(encoding="utf-8")
        out += [b.strip("\n") for b in re.split(r"\n\s*\n", text) if len(b.strip()) >= 20]
    return out


def tokenizers():
    from transformers import AutoTokenizer

    from specscope.engine_adapter.model.demo_model import default_demo_path

    trained = Path(__file__).resolve().parents[1] / "src" / "specscope" / "assets" / "demo_trained" / "tiny-trained-demo"
    import os

    os.environ["SPECSCOPE_DEMO"] = "random"  # the random demo's own tokenizer beside the trained one's
    return [AutoTokenizer.from_pretrained(str(trained)), AutoTokenizer.from_pretrained(str(default_demo_path("hybrid")))]


def select(paras: list[str], max_chars: int, toks, sep: str) -> str:
    seen_text, seen = set(), [set() for _ in toks]
    kept, size = [], 0
    for p in paras:
        if p in seen_text or size + len(p) > max_chars:
            continue
        # the windows this paragraph adds, with the end of the text before it (a passage may straddle the join)
        tail = sep.join(kept[-2:])
        ok, new = True, []
        for tk, s in zip(toks, seen):
            before = tk.encode(tail, add_special_tokens=False) if tail else []
            ids = tk.encode((tail + sep if tail else "") + p, add_special_tokens=False)
            start = max(0, len(before) - WINDOW)
            ws = {tuple(ids[i:i + WINDOW]) for i in range(start, len(ids) - WINDOW + 1)}
            ws -= {tuple(before[i:i + WINDOW]) for i in range(max(0, len(before) - WINDOW), len(before) - WINDOW + 1)}
            if ws & s:
                ok = False
                break
            new.append(ws)
        if not ok:
            continue
        for s, ws in zip(seen, new):
            s |= ws
        seen_text.add(p)
        kept.append(p)
        size += len(p) + len(sep)
    return sep.join(kept) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--debs-root", required=True, help="the two .debs extracted (dpkg-deb -x) into one folder")
    ap.add_argument("--cpython-lib", required=True, help="CPython 3.11.7's lib/python3.11")
    a = ap.parse_args()
    root, toks = Path(a.debs_root), tokenizers()
    doc = root / "usr/share/doc"
    sources = {
        "code": (code_paragraphs(Path(a.cpython_lib)), "\n\n"),
        "english": (html_paragraphs(doc / "debian-edu-doc-en/debian-edu-bookworm-manual.html"), "\n\n"),
        "chinese": ([x for m in ("bookworm", "bullseye") for x in html_paragraphs(doc / f"debian-edu-doc-zh-cn/debian-edu-{m}-manual.html")
                     if len(CJK.findall(x)) >= 0.3 * len(x)], "\n\n"),  # the translated paragraphs, Bookworm's then Bullseye's
    }
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (paras, sep) in sources.items():
        text = select(paras, MAX_CHARS[name], toks, sep)
        (OUT / f"{name}.txt").write_text(text, encoding="utf-8")
        counts = [len(t.encode(text, add_special_tokens=False)) for t in toks]
        print(f"{name}: {len(text)} chars, tokens (trained, random demo): {counts}")


if __name__ == "__main__":
    main()
