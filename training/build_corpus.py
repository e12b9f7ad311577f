"""Build the demo's training corpus from offline sources (Debian packages + Python's stdlib).

Usage (not run in CI):
    apt-get download fortunes-zh debian-reference-zh-cn debian-faq-zh-cn maint-guide-zh-cn \
        debian-edu-doc-zh-cn libreoffice-help-zh-cn debian-reference-en debian-faq manpages   # into DEBS
    npm pack chinese-poetry@2.0.1                                                            # into DEBS too
    python training/build_corpus.py --debs DEBS --stdlib /path/to/python3.11 -o CORPUS_DIR

The Chinese class is prose: Debian's translated manuals and FAQ, LibreOffice's Chinese help, fortunes-zh's
sayings, and a small classical share (chinese-poetry: the Analects and Youmengying). Of the HTML sources only
lines that are mostly CJK and sentence-length are kept (menus, option lists, commands and untranslated English
are dropped); manpages-zh (option lists) and gimp-help-zh-cn (mostly untranslated English) are not used.

Writes CORPUS_DIR/{code,en,zh}.txt: documents separated by a line holding only <|doc|>.
Every step is deterministic (sorted file lists, no sampling), so the same package versions
(training/corpus.json) and the same Python stdlib give byte-identical files; their sha256
are recorded in training/corpus.json. Any document holding one of the suite's prompts'
8-token sequences is dropped (the check runs again in tests against a hashed n-gram list).
"""

from __future__ import annotations

import argparse
import gzip
import re
import json
import subprocess
import tarfile
import tempfile
from html.parser import HTMLParser
from pathlib import Path

DOC_SEP = "<|doc|>"
ZH_DEBS = ["fortunes-zh", "debian-reference-zh-cn", "debian-faq-zh-cn", "maint-guide-zh-cn", "debian-edu-doc-zh-cn", "libreoffice-help-zh-cn"]
ZH_NPM = "chinese-poetry-2.0.1.tgz"
# The classical share (chinese-poetry) and fortunes-zh are capped so modern prose stays the majority.
SOURCE_CAPS = {"fortunes-zh": 1_000_000, "chinese-poetry": 200_000}
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def cjk_share(text: str) -> float:
    s = "".join(text.split())
    return len(_CJK.findall(s)) / max(1, len(s))


# Menu paths and menu instructions (LibreOffice's "选择「格式 - 单元格」。"), its pages' debug lines: not prose.
_MENU = re.compile(r"「[^」]*( - |→|>)[^」]*」|^(选择|选取|打开|单击|点击)「|^(Title is|This page is|Help content)")


def zh_prose(text: str, min_chars: int = 12) -> str:
    """The lines of `text` that are Chinese prose: at least half CJK (by non-space characters), 12+ long, not a menu
    path or menu instruction."""
    keep = [ln.strip() for ln in text.splitlines()
            if len(ln.strip()) >= min_chars and cjk_share(ln) >= 0.5 and not _MENU.search(ln.strip())]
    return "\n".join(keep)
EN_DEBS = ["debian-reference-en", "debian-faq", "manpages"]
# Byte caps per class keep the three classes about balanced (code would swamp the rest).
CAPS = {"code": 4_000_000, "en": 4_000_000, "zh": 4_000_000}
# Stdlib folders left out: tests (huge, repetitive data), vendored/generated tables.
SKIP_DIRS = {"test", "tests", "idlelib", "lib2to3", "site-packages", "encodings", "pydoc_data", "__pycache__", "turtledemo", "ensurepip"}


class _Text(HTMLParser):
    SKIP = {"script", "style", "head", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        if tag == "pre":
            self.pre += 1
        if tag in ("p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "pre", "dt", "dd", "table"):
            self.out.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.out.append("\n")

    def handle_data(self, data):
        if self.skip:
            return
        self.out.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_text(raw: str) -> str:
    p = _Text()
    p.feed(raw)
    return tidy("".join(p.out))


def tidy(text: str) -> str:
    lines = [ln.rstrip() for ln in text.splitlines()]
    out, blank = [], 0
    for ln in lines:
        if not ln.strip():
            blank += 1
            if blank <= 1:
                out.append("")
            continue
        blank = 0
        out.append(ln.strip() if not ln.startswith(" " * 4) else ln)
    return "\n".join(out).strip()


_KEEP_MACROS = {"SH", "SS", "B", "I", "BR", "IR", "RB", "BI", "IB", "RI", "IP", "TH"}


def roff_text(raw: str) -> str:
    out = []
    for ln in raw.splitlines():
        if ln.startswith(('.\\"', "'\\\"", '.\\}')):
            continue
        if ln.startswith((".", "'")):
            parts = ln[1:].split(None, 1)
            if not parts or parts[0] not in _KEEP_MACROS or parts[0] == "TH":
                if parts and parts[0] in ("PP", "LP", "P", "TP", "sp", "br"):
                    out.append("")
                continue
            ln = parts[1] if len(parts) > 1 else ""
            ln = ln.replace('"', "")
        ln = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", ln)
        ln = re.sub(r"\\\((..)", lambda m: {"em": "—", "en": "–", "bu": "•", "lq": "“", "rq": "”", "co": "©"}.get(m.group(1), ""), ln)
        ln = re.sub(r"\\\*\(?..?", "", ln)
        ln = ln.replace("\\-", "-").replace("\\e", "\\").replace("\\ ", " ").replace("\\&", "").replace("\\,", "").replace("\\/", "").replace("\\|", "").replace("\\^", "")
        out.append(ln)
    return tidy("\n".join(out))


def extract(debs: Path, name: str, work: Path) -> Path:
    (deb,) = sorted(debs.glob(f"{name}_*.deb"))
    dest = work / name
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    return dest


def zh_docs(debs: Path, work: Path):
    root = extract(debs, "fortunes-zh", work)
    for f in sorted((root / "usr/share/games/fortunes").glob("*.u8")):
        text = re.sub(r"\x1b\[[0-9;]*m", "", f.read_text(encoding="utf-8", errors="replace"))
        for doc in text.split("\n%\n"):
            if doc.strip() and cjk_share(doc) >= 0.5:
                yield "fortunes-zh", doc.strip()
    html_sources = (
        ("debian-reference-zh-cn", "*.zh-cn.html"),
        ("debian-faq-zh-cn", "*.zh-cn.html"),
        ("maint-guide-zh-cn", "*.zh-cn.html"),
        ("debian-edu-doc-zh-cn", "debian-edu-bookworm-manual.html"),
        ("libreoffice-help-zh-cn", "*.html"),
    )
    for name, pattern in html_sources:
        root = extract(debs, name, work)
        for f in sorted(root.rglob(pattern)):
            t = zh_prose(html_text(f.read_text(encoding="utf-8", errors="replace")))
            if len(t) >= 40:
                yield name, t
    yield from poetry_docs(debs / ZH_NPM)


def poetry_docs(tgz: Path):
    """npm's chinese-poetry (MIT): the Analects (lunyu) by chapter and Youmengying's sayings, simplified script."""
    with tarfile.open(tgz) as tar:
        lunyu = json.load(tar.extractfile("package/dist/lunyu/lunyu.json"))
        ymy = json.load(tar.extractfile("package/dist/youmengying/youmengying.json"))
    for ch in lunyu:
        yield "chinese-poetry", ch["chapter"] + "\n" + "\n".join(ch["paragraphs"])
    for i in range(0, len(ymy), 10):
        yield "chinese-poetry", "\n".join(e["content"] for e in ymy[i : i + 10])


def en_docs(debs: Path, work: Path):
    root = extract(debs, "debian-reference-en", work)
    for f in sorted(root.rglob("*.en.html")):
        yield "debian-reference-en", html_text(f.read_text(encoding="utf-8"))
    root = extract(debs, "debian-faq", work)
    for f in sorted(root.rglob("*.en.html")):
        yield "debian-faq", html_text(f.read_text(encoding="utf-8"))
    root = extract(debs, "manpages", work)
    for f in sorted((root / "usr/share/man").rglob("*.gz")):
        t = roff_text(gzip.decompress(f.read_bytes()).decode("utf-8", errors="replace"))
        if len(t) > 200:
            yield "manpages", t


def code_docs(stdlib: Path):
    for f in sorted(stdlib.rglob("*.py")):
        rel = f.relative_to(stdlib)
        if set(rel.parts[:-1]) & SKIP_DIRS:
            continue
        t = f.read_text(encoding="utf-8", errors="replace").strip()
        if 200 < len(t) < 200_000:
            yield "python-stdlib", t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--debs", required=True, type=Path)
    ap.add_argument("--stdlib", required=True, type=Path)
    ap.add_argument("-o", "--out", required=True, type=Path)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for cls, docs in (("zh", zh_docs(a.debs, work)), ("en", en_docs(a.debs, work)), ("code", code_docs(a.stdlib))):
            chosen, total, per_source = [], 0, {}
            # Round-robin over sources so every source is represented under the cap.
            by_src: dict[str, list[str]] = {}
            for src, d in docs:
                by_src.setdefault(src, []).append(d)
            queues = [list(v) for v in by_src.values()]
            names = list(by_src)
            i = 0
            while total < CAPS[cls] and any(queues):
                q, name = queues[i % len(queues)], names[i % len(queues)]
                if q:
                    d = q.pop(0)
                    if per_source.get(name, 0) >= SOURCE_CAPS.get(name, CAPS[cls]):
                        q.clear()
                    else:
                        chosen.append(d)
                        total += len(d.encode())
                        per_source[name] = per_source.get(name, 0) + len(d.encode())
                i += 1
            (a.out / f"{cls}.txt").write_text(f"\n{DOC_SEP}\n".join(chosen) + "\n", encoding="utf-8")
            print(cls, len(chosen), "docs", total, "bytes", per_source)


if __name__ == "__main__":
    main()
