"""The headless CLI end to end: real worker process, real demo model, real files."""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.profiler.cli.main import main
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import session_case_stats

ROOT = Path(__file__).resolve().parents[3]


def small_model() -> str:
    """The small demo model (a flat qwen3, no MTP head): a quick run with ``--drafter ngram``."""
    from specscope.engine_adapter.model.demo_model import demo_model_path

    return str(demo_model_path("draft"))


def specscope(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def demo_session(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "s.json"
    # the real command in its own process (exit code, stdout); warm-up off and one breakdown repetition keep it short
    r = specscope("run", "--demo", "--cases", "2", "--max-tokens", "16", "--warmup", "0", "--breakdown-reps", "1",
                  "--component-reps", "1", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout)


def test_run_demo_writes_complete_session(demo_session):
    out, summary = demo_session
    s = Session.load(out)
    assert s.status == "complete" and len(s.cases) == 2
    assert {c["content_class"] for c in s.cases} == {"zh", "en"}  # spread across content classes
    d = json.loads(out.read_text())
    assert d["summary"] == summary
    for c in d["cases"]:
        assert c["prompt_tokens"] and len(c["plain"]["tokens"]) == 16 and len(c["spec"]["tokens"]) == 16
        assert c["breakdown"]["decode"]["positions"] == 1
    env = d["environment"]
    assert env["mlx"] and env["mlx_lm"] and env["device"] and env["os"]
    assert summary["t_decode_ms"] > 0 and summary["t_verify_ms"] > 0 and summary["predicted_speedup"] > 0
    assert summary["match_rate"] == 1.0  # greedy, CPU: speculative output equals plain
    # the prediction (components timed apart) and its verdict: 2 cases × 16 tokens are too little to judge
    assert summary["prediction_source"] == "components" and summary["ledger_speedup"] > 0
    assert summary["prediction_verdict"]["state"] == "too_little_data"
    from specscope.profiler.analysis.summary_text import format_summary

    text = format_summary(s)
    assert "Too little data to judge the prediction" in text and "within noise" not in text.split("\n\n")[1]


def test_breakdown_reports_both_rulers(demo_session):
    out, summary = demo_session
    bd = summary["breakdown"]
    assert set(bd["block_order"]) == {"linear_attention", "full_attention", "moe", "output_head", "other"}
    for side in ("decode", "verify"):
        b = bd[side]
        assert b["block_sum_ms"] == pytest.approx(sum(b["blocks"].values()))
        assert b["inter_block_ms"] == pytest.approx(b["whole_ms"] - b["block_sum_ms"])
        assert b["instrumented_ms"] > 0 and b["barrier_distortion"] is not None
        assert set(b["skip_estimates"]) == {"linear_attention", "full_attention", "moe", "output_head"}
    assert bd["verify"]["positions"] == summary["k"] + 1
    cats = bd["block_order"] + ["whole"]
    assert all(bd["ratios"][c] is not None and bd["ratios"][c] > 0 for c in cats)
    # an overhead ratio is only given when both overheads are positive
    dec, ver = bd["decode"]["inter_block_ms"], bd["verify"]["inter_block_ms"]
    assert (bd["ratios"]["inter_block"] is None) == (dec <= 0 or ver <= 0)


def test_run_refuses_existing_output(demo_session):
    out, _ = demo_session
    before = out.read_bytes()
    assert main(["run", "--demo", "-o", str(out)]) == 2
    assert out.read_bytes() == before


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--model", "/no/such/model"], "does not exist"),
        (["run", "--demo", "-k", "0"], "between 1 and 16"),
        (["run", "--demo", "-k", "17"], "between 1 and 16"),
        (["run", "--demo", "--max-tokens", "0"], "at least 2"),
        (["run"], "no model"),
        (["inspect", "/no/such/model"], "does not exist"),
        (["predict", "--t-decode-ms", "10", "--t-verify-ms", "0", "--p", "0.5"], "must be positive"),
    ],
)
def test_bad_input_clear_message(args, message, capsys):
    # in-process: the exit code and stderr of `specscope` are main()'s (tests/reliability runs the real process)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error: ") and message in err and "Traceback" not in err


def test_bad_suite(tmp_path, capsys):
    bad = tmp_path / "s.json"
    bad.write_bytes(b'{"cases": [{"prompt": "\xff\xfe"}]}')
    assert main(["run", "--demo", "--suite", str(bad)]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    bad.write_text('{"cases": [{"prompt": "  "}]}')
    assert main(["run", "--demo", "--suite", str(bad)]) == 2
    assert "empty prompt" in capsys.readouterr().err


def test_predict_calculator_json(capsys):
    assert main(["predict", "--t-decode-ms", "10", "--t-verify-ms", "18", "--t-draft-ms", "2", "--p", "0.6", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["predicted_speedup"] == pytest.approx(0.8) and d["break_even_multiple"] == pytest.approx(1.4)
    assert main(["predict", "--t-decode-ms", "10", "--t-verify-ms", "25", "--t-draft-ms", "3", "--accept", "0.8,0.6,0.4",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["k"] == 3 and d["tokens_per_round"] == pytest.approx(2.8) and d["predicted_speedup"] == pytest.approx(1.0)


def test_inspect_json_on_demo(capsys):
    assert main(["inspect", "--demo", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["model_type"] == "qwen3_5_moe" and d["linear_attention_layers"] == 3 * d["full_attention_layers"] > 0


# -- demo-model ------------------------------------------------------------------------------------------------

def test_demo_model_command_writes_a_folder_that_loads(tmp_path, capsys):
    from specscope.engine_adapter.decode.decoding import plain_generate
    from specscope.engine_adapter.model.loader import load_model

    out = tmp_path / "draft-model"
    assert main(["demo-model", str(out), "--draft"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote draft demo model to {out}"
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (out / f).is_file(), f
    lm = load_model(out)  # mlx-lm's own loader, like a real checkpoint
    prompt = lm.encode("Hello")
    assert len([e["token"] for e in plain_generate(lm.model, prompt, 4)]) == 4
    assert main(["inspect", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["model_type"] == "qwen3" and d["name"] == "draft-model" and not d["mtp"]["available"]
    # a second write into the same (now non-empty) folder is refused, and leaves it as it was
    before = sorted(p.name for p in out.iterdir())
    assert main(["demo-model", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == before


def test_demo_model_kinds_are_exclusive(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["demo-model", str(tmp_path / "m"), "--dense", "--draft"])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


# -- repeats -----------------------------------------------------------------------------------------------------

def test_repeats_keep_every_repeat(tmp_path, capsys):
    """--repeats 2: both repeats are kept, their tok/s (the summary reports the pooled rate and their spread) and their
    steps and rounds; the tokens are the last repeat's output."""
    out = tmp_path / "s.json"
    assert main(["run", "--model", small_model(), "--drafter", "ngram", "--cases", "1", "--max-tokens", "8",
                 "--warmup", "0", "--no-breakdown", "--component-reps", "1", "--repeats", "2", "-o", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    s = Session.load(out)
    assert s.status == "complete" and s.config["repeats"] == 2
    (c,) = s.cases
    assert len(c["plain"]["repeats_tok_s"]) == 2 and len(c["spec"]["repeats_tok_s"]) == 2
    assert all(x > 0 for x in c["plain"]["repeats_tok_s"] + c["spec"]["repeats_tok_s"])
    # both repeats' steps and rounds (the second repeat ran speculative first: ABBA); one repeat's output
    assert len(c["plain"]["tokens"]) == 8 and len(c["plain"]["step_ms"]) == 2 * 7
    # each speculative phase is a paired run: a measured (end-to-end) and a ledger (instrumented) pass
    assert len(c["spec"]["tokens"]) == 8 and sum(len(r["emitted"]) for r in c["spec"]["rounds"]) == 2 * 2 * 7
    assert sum(len(r["emitted"]) for r in c["spec"]["rounds"] if r["pass"] == "measured") == 2 * 7
    assert {r.get("repeat", 0) for r in c["spec"]["rounds"]} == {0, 1}
    st = session_case_stats(s, c)
    # pooled over both repeats (tokens over time: every step, every measured round), not their median
    assert st["plain_tok_s"] == pytest.approx(1000.0 * len(c["plain"]["step_ms"]) / sum(c["plain"]["step_ms"]))
    measured = [r for r in c["spec"]["rounds"] if r["pass"] == "measured"]
    assert st["spec_tok_s"] == pytest.approx(1000.0 * sum(len(r["emitted"]) for r in measured) / sum(r["ms"] for r in measured))
    # equal tokens in each repeat: the pooled rate is the repeats' harmonic mean
    assert st["plain_tok_s"] == pytest.approx(statistics.harmonic_mean(c["plain"]["repeats_tok_s"]), rel=1e-4)
    # two complete repeats: the session rate is pooled (one case: its own), with the repeats' spread
    assert summary["plain_tok_s"] == pytest.approx(st["plain_tok_s"])
    assert summary["plain_tok_s_spread"] == pytest.approx(sorted(c["plain"]["repeats_tok_s"]))


# -- an unexpected exception in the worker -----------------------------------------------------------------------

# Loaded into the worker process (sitecustomize): the engine's speculative decoding raises an exception that
# is not a SpecscopeError, the way a bug would.
INJECT_BUG = r'''
import importlib.abc, importlib.machinery, sys

class _InjectBug(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "specscope.engine_adapter.decode.decoding":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)

            def speculative_generate(*a, **k):
                raise ZeroDivisionError("injected bug in speculative decoding")

            module.speculative_generate = speculative_generate

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _InjectBug())
'''


def test_internal_error_says_so_and_shows_the_traceback(tmp_path, monkeypatch, capsys):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INJECT_BUG)
    monkeypatch.setenv("PYTHONPATH", str(site) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "s.json"
    rc = main(["run", "--model", small_model(), "--drafter", "ngram", "--cases", "1", "--max-tokens", "4", "--warmup", "0",
               "--no-breakdown", "--component-reps", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "internal error" in err and "ZeroDivisionError: injected bug in speculative decoding" in err
    assert "Traceback (most recent call last)" in err and "speculative_generate" in err  # the worker's traceback
    s = Session.load(out)  # what was measured before the bug is kept
    assert s.status == "failed" and "ZeroDivisionError" in s.data["errors"][-1]
    assert len(s.cases[0]["plain"]["tokens"]) == 4


def test_run_trace_records_the_acceptance_trace_through_the_worker(tmp_path):
    """`run --trace`: each case gains its drafter's trace A(s) along the plain output (one entry per position but
    the last), and walking it at the run's k gives the E the measured rounds had (greedy)."""
    from specscope.profiler.analysis.trace_walk import walk

    out = tmp_path / "t.json"
    assert main(["run", "--model", small_model(), "--drafter", "ngram", "--cases", "1", "--max-tokens", "12",
                 "--warmup", "0", "--no-breakdown", "--component-reps", "1", "--trace", "-o", str(out)]) == 0
    s = Session.load(out)
    (c,) = s.cases
    tr = c["trace"]
    assert len(tr["A"]) == len(c["plain"]["tokens"]) - 1
    measured = [r["accepted"] for r in c["spec"]["rounds"] if r["pass"] == "measured" and not r.get("repeat")]
    assert [acc for _, _, acc in walk(tr["A"], s.k)] == measured
