"""Security and privacy: no network at run time, no remote code, no pickles, no home folder in shared reports.

Already covered: ``tests/engine_adapter/model/test_checkpoint_errors.py`` (``model_file`` custom code refused,
pickle-only weights refused, non-safetensors refused), ``tests/profiler/renderers/test_renderers.py`` (HTML escapes
and redacts every field), ``tests/gui/test_app.py`` (``<script>`` shown as text).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from importlib.resources import files

from specscope.profiler.renderers import redact, render_to_file
from specscope.profiler.session.session import Session

from .helpers import FIXTURE, specscope

PKG = Path(str(files("specscope")))  # the installed package: what users run

pytestmark = pytest.mark.timeout(180)

def test_no_network_at_run_time(demo_draft_dir, no_network):
    # a model named by path, loaded and run with every socket refused (the small flat demo: what is checked is the
    # network, not the model, and the random hybrid demo took 17 s of the suite here for 4 tokens)
    env, net = no_network
    r = specscope("run", "--model", demo_draft_dir, "--drafter", "ngram", "--cases", "1", "--max-tokens", "4",
                  "--warmup", "0", "--no-breakdown", "--component-reps", "1", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    active = [p for p in net.iterdir() if p.name.startswith("active-")]
    assert len(active) >= 2, "the blocker must be active in the CLI and in the worker"
    assert not (net / "attempts").exists(), (net / "attempts").read_text()


def test_custom_code_in_a_checkpoint_never_runs(tmp_path, demo_draft_dir):
    """``auto_map`` entries (config and tokenizer) pointing at .py files in the folder: the code is never imported."""
    d = tmp_path / "custom-code"
    shutil.copytree(demo_draft_dir, d)
    marker = tmp_path / "code-ran"
    for name, extra in (("config.json", {"auto_map": {"AutoConfig": "evil.EvilConfig",
                                                       "AutoModelForCausalLM": "evil.EvilModel"}}),
                        ("tokenizer_config.json", {"auto_map": {"AutoTokenizer": ["evil.EvilTokenizer", None]}})):
        cfg = json.loads((d / name).read_text())
        cfg.update(extra)
        (d / name).write_text(json.dumps(cfg))
    (d / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    out = tmp_path / "s.json"
    r = specscope("run", "--model", d, "--drafter", "ngram", "--cases", "1", "--max-tokens", "4", "--warmup", "0",
                  "--no-breakdown", "--component-reps", "1", "-o", out)
    assert not marker.exists(), "code from the checkpoint folder was executed"
    assert "Traceback" not in r.stderr
    # auto_map is ignored: the folder loads as the plain safetensors model it also is, and runs
    assert r.returncode == 0, r.stderr[-3000:]
    assert Session.load(out).status == "complete"


def _calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def _unsafe_calls(py: Path) -> list[str]:
    """Remote code, pickles and pickle-backed loaders in one source file."""
    bad = []
    tree = ast.parse(py.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            if any(n and n.split(".")[0] in ("pickle", "cPickle", "dill", "joblib", "torch") for n in names):
                bad.append(f"{py.name}:{node.lineno} imports {names}")
    for call in _calls(tree):
        for kw in call.keywords:
            if kw.arg in ("trust_remote_code", "allow_pickle") and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                bad.append(f"{py.name}:{call.lineno} {kw.arg}={ast.unparse(kw.value)}")
        fn = ast.unparse(call.func)
        if fn.endswith(("torch.load", "pickle.load", "pickle.loads", "np.load", "numpy.load")):
            bad.append(f"{py.name}:{call.lineno} {fn}()")
    return bad


@pytest.mark.parametrize("package", ["engine_adapter", "profiler", "gui"])
def test_no_remote_code_no_pickle_in_sources(package):
    """Mechanical: no trust_remote_code=True, no pickle / torch.load / np.load(allow_pickle=True) anywhere — and the
    scan did scan: the package's sources, every one parsed."""
    sources = list((PKG / package).rglob("*.py"))
    assert len(sources) >= 10, f"only {len(sources)} sources found under {PKG / package}"
    bad = [b for py in sources for b in _unsafe_calls(py)]
    assert not bad


def test_the_source_scan_finds_what_it_looks_for(tmp_path):
    planted = {"import pickle\n": "imports", "from torch import load\n": "imports",
               "f(trust_remote_code=True)\n": "trust_remote_code=True", "np.load(x, allow_pickle=flag)\n": "allow_pickle=flag",
               "pickle.loads(b)\n": "pickle.loads()"}
    for i, (src, expect) in enumerate(planted.items()):
        py = tmp_path / f"m{i}.py"
        py.write_text(src, encoding="utf-8")
        found = _unsafe_calls(py)
        assert found and expect in found[0], (src, found)
    ok = tmp_path / "ok.py"
    ok.write_text("load(path, trust_remote_code=False)\n# trust_remote_code=True in a comment\n", encoding="utf-8")
    assert _unsafe_calls(ok) == []


def test_loader_passes_trust_remote_code_false():
    """Every call in the loader that names trust_remote_code passes the constant False, and there is one (a comment
    or a string holding the words would not do)."""
    tree = ast.parse((PKG / "engine_adapter" / "model" / "loader.py").read_text(encoding="utf-8"))
    kws = [kw for call in _calls(tree) for kw in call.keywords if kw.arg == "trust_remote_code"]
    assert kws and all(isinstance(kw.value, ast.Constant) and kw.value.value is False for kw in kws)


# -- privacy -------------------------------------------------------------------------------------------------

def _session_with_home_paths() -> tuple[Session, str, str]:
    home = os.path.expanduser("~")
    user = Path(home).name or "root"
    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    d["config"]["model_path"] = f"{home}/models/secret-model"
    d["config"]["draft_model_path"] = "/home/alice/models/draft"
    d["config"]["suite"] = "/Users/bob/suites/mine.json"
    d["model"]["path"] = f"{home}/models/secret-model"
    d["cases"][0]["prompt"] = f"read {home}/notes.txt and /home/alice/diary.md"
    d["cases"][0]["id"] = "/Users/bob/case"
    d["errors"] = [f"worker failed at {home}/x"]
    return Session.from_dict(d), home, user


@pytest.mark.parametrize("ext", [".html", ".csv", ".trace.json"])
def test_shared_reports_show_paths_relative_to_home(tmp_path, ext):
    s, home, user = _session_with_home_paths()
    out = tmp_path / f"r{ext}"
    render_to_file(s, out)
    text = re.sub(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+", "", out.read_text(encoding="utf-8"))  # embedded charts
    assert home + "/" not in text and "/home/alice" not in text and "/Users/bob" not in text
    assert "alice" not in text and "bob" not in text
    if ext in (".csv", ".html"):
        assert "~/notes.txt" in text and "~/diary.md" in text


def test_json_export_is_the_raw_session(tmp_path):
    """Documented decision: .json is the session file itself (it must load back unchanged), paths included."""
    s, home, _ = _session_with_home_paths()
    out = tmp_path / "r.json"
    render_to_file(s, out)
    assert Session.load(out) == s
    assert f"{home}/models/secret-model" in out.read_text(encoding="utf-8")


def test_redact_patterns():
    home = os.path.expanduser("~")
    assert redact(f"{home}/x") == "~/x"
    assert redact("/home/carol/m and /Users/dave/m and C:\\Users\\erin\\m") == "~/m and ~/m and ~\\m"
    assert redact("/root/.cache/specscope") == "~/.cache/specscope"
    assert redact("/opt/models/m /homework /rooted") == "/opt/models/m /homework /rooted"
    assert redact("") == "" and redact(None) is None
