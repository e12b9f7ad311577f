"""The README and the documentation site (docs/, mkdocs.yml) hold what they promise.

- the site builds with ``mkdocs build --strict``: mkdocs.yml's ``validation`` makes a broken link, a missing anchor or
  a page left out of the nav a warning, and --strict makes a warning an error;
- every relative link in README.md resolves: the file exists, and an ``#anchor`` is a heading of that file;
- the README's commands table and its "When things go wrong" table are the documentation's own (one text, two places);
- every command block marked runnable — a fenced block right after a ``<!-- runnable -->`` line, in the README or
  in docs/ — runs, line by line, with the installed ``specscope``, from an empty home, and exits 0. Mark only commands
  that answer in a few seconds; a long run is an example, not a test.

The files are read from the checkout this test file sits in (``.ci/run`` installs the package, not the checkout).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKER = "<!-- runnable -->"


def _prose(text: str) -> str:
    """The text with fenced blocks and code spans blanked (a `[x](y)` inside code is not a link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _headings(text: str) -> list[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # a "# comment" in a code block is no heading
    return [m.group(1) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)]


def _plain(heading: str) -> str:
    return re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)


def mkdocs_slug(heading: str) -> str:
    """The anchor MkDocs gives a heading (Python-Markdown's toc slugify)."""
    value = unicodedata.normalize("NFKD", _plain(heading)).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading of a Markdown file it shows."""
    return re.sub(r"[^\w\- ]", "", _plain(heading).strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    slug = mkdocs_slug if DOCS in path.parents else github_slug
    return {slug(h) for h in _headings(path.read_text(encoding="utf-8"))}


def readme_links() -> list[str]:
    text = _prose(README.read_text(encoding="utf-8"))
    links = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text) + re.findall(r"<img [^>]*src=\"([^\"]+)\"", text)
    return [u for u in links if not re.match(r"[a-z][a-z0-9+.-]*:", u)]  # http:, https:, mailto: are not files


def runnable_blocks() -> list[tuple[str, list[str]]]:
    """(where, commands) for every fenced block right after the runnable marker."""
    found = []
    for path in [README, *sorted(DOCS.rglob("*.md"))]:
        lines = path.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            if line.strip() != MARKER:
                continue
            assert i + 1 < len(lines) and lines[i + 1].startswith("```"), f"{path.name}:{i + 1}: {MARKER} not before a fenced block"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            cmds = [c for c in lines[i + 2:end] if c.strip() and not c.lstrip().startswith("#")]
            found.append((f"{path.relative_to(ROOT)}:{i + 2}", cmds))
    return found


def test_the_readme_is_short():
    n = len(README.read_text(encoding="utf-8").split("\n"))
    assert n <= 300, f"README.md has {n} lines; the rest belongs in docs/"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed (pip install '.[docs]'; the test extra has it)")
def test_the_documentation_builds_strictly(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "WARNING" not in r.stderr, r.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "architecture" / "index.html").is_file()


def test_every_relative_link_in_the_readme_resolves():
    links = readme_links()
    assert len(links) > 20, links  # the reader found the README's links (screenshots, docs pages)
    bad = []
    for link in links:
        target, _, anchor = link.partition("#")
        path = (README.parent / target).resolve() if target else README
        if not path.exists():
            bad.append(f"{link}: no such file")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            bad.append(f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not bad, "\n".join(bad)


def test_the_link_checker_sees_a_broken_anchor():
    """The check above could fail: a made-up anchor is not among a page's headings."""
    assert "the-method" in anchors(DOCS / "method.md")
    assert "no-such-heading" not in anchors(DOCS / "method.md")
    assert github_slug("Pre-flight: the machine before the run") == mkdocs_slug("Pre-flight: the machine before the run")


@pytest.mark.parametrize("name,page", [("commands", "commands.md"), ("troubleshooting", "troubleshooting.md")])
def test_the_readmes_tables_are_the_documentations(name, page):
    def block(text: str) -> str:
        m = re.search(f"<!-- shared:{name}:begin -->\n(.*?)\n<!-- shared:{name}:end -->", text, re.S)
        assert m, f"no shared:{name} block"
        return m.group(1)

    # links from the root, not docs/; GitHub needs a pipe in a table's code span escaped, MkDocs shows the backslash
    readme = block(README.read_text(encoding="utf-8")).replace("](docs/", "](").replace("\\|", "|")
    assert readme == block((DOCS / page).read_text(encoding="utf-8")), f"README's {name} table differs from docs/{page}"


BLOCKS = runnable_blocks()


def test_there_are_runnable_blocks():
    assert len(BLOCKS) >= 2 and any(w.startswith("README.md") for w, _ in BLOCKS), BLOCKS


@pytest.mark.parametrize("where,commands", BLOCKS, ids=[w for w, _ in BLOCKS])
def test_a_runnable_block_runs(where, commands, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    bindir = str(Path(sys.executable).parent)  # the installed `specscope` of the interpreter running the tests
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_DATA_HOME": str(home / ".local/share"), "XDG_CONFIG_HOME": str(home / ".config"),
           "HF_HOME": str(home / ".cache/huggingface"), "SPECSCOPE_HOME": str(home / ".cache/specscope"),
           "HF_HUB_OFFLINE": "1", "QT_QPA_PLATFORM": "offscreen", "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    assert shutil.which("specscope", path=env["PATH"]), f"no specscope command beside {sys.executable}"
    for cmd in commands:
        r = subprocess.run(["bash", "-c", cmd], cwd=home, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{where}: `{cmd}` exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr, f"{where}: `{cmd}`\n{r.stderr[-2000:]}"
