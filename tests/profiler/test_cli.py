"""The headless CLI end to end: real worker process, real demo model, real files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.profiler.cli import main
from specscope.profiler.session import Session

ROOT = Path(__file__).resolve().parents[2]


def specscope(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def demo_session(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "s.json"
    r = specscope("run", "--demo", "--cases", "2", "--max-tokens", "16", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout)


def test_run_demo_writes_complete_session(demo_session):
    out, summary = demo_session
    s = Session.load(out)
    assert s.status == "complete" and len(s.cases) == 2
    assert {c["category"] for c in s.cases} == {"zh", "en"}  # spread across categories
    d = json.loads(out.read_text())
    assert d["summary"] == summary
    for c in d["cases"]:
        assert c["prompt_tokens"] and len(c["plain"]["tokens"]) == 16 and len(c["spec"]["tokens"]) == 16
        assert c["breakdown"]["decode"]["positions"] == 1
    env = d["environment"]
    assert env["mlx"] and env["mlx_lm"] and env["device"] and env["os"]
    assert summary["t_decode_ms"] > 0 and summary["t_verify_ms"] > 0 and summary["predicted_speedup"] > 0
    assert summary["match_rate"] == 1.0  # greedy, CPU: speculative output equals plain


def test_breakdown_reports_both_rulers(demo_session):
    out, summary = demo_session
    bd = summary["breakdown"]
    assert set(bd["categories"]) == {"linear_attention", "full_attention", "moe", "output_head", "other"}
    for side in ("decode", "verify"):
        b = bd[side]
        assert b["block_sum_ms"] == pytest.approx(sum(b["blocks"].values()))
        assert b["inter_block_ms"] == pytest.approx(b["whole_ms"] - b["block_sum_ms"])
        assert b["instrumented_ms"] > 0 and b["barrier_distortion"] is not None
        assert set(b["skip_estimates"]) == {"linear_attention", "full_attention", "moe", "output_head"}
    assert bd["verify"]["positions"] == summary["k"] + 1
    cats = bd["categories"] + ["whole"]
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
def test_bad_input_clear_message(args, message):
    r = specscope(*args, timeout=120)
    assert r.returncode != 0
    assert message in r.stderr and "Traceback" not in r.stderr


def test_bad_suite(tmp_path):
    bad = tmp_path / "s.json"
    bad.write_bytes(b'{"cases": [{"prompt": "\xff\xfe"}]}')
    r = specscope("run", "--demo", "--suite", str(bad), timeout=120)
    assert r.returncode == 2 and "not UTF-8" in r.stderr
    bad.write_text('{"cases": [{"prompt": "  "}]}')
    r = specscope("run", "--demo", "--suite", str(bad), timeout=120)
    assert r.returncode == 2 and "empty prompt" in r.stderr


def test_predict_calculator_json():
    r = specscope("predict", "--t-decode-ms", "10", "--t-verify-ms", "18", "--t-draft-ms", "2", "--p", "0.6", "--json")
    d = json.loads(r.stdout)
    assert d["predicted_speedup"] == pytest.approx(0.8) and d["break_even_multiple"] == pytest.approx(1.4)
    r = specscope("predict", "--t-decode-ms", "10", "--t-verify-ms", "25", "--t-draft-ms", "3", "--accept", "0.8,0.6,0.4", "--json")
    d = json.loads(r.stdout)
    assert d["k"] == 3 and d["tokens_per_round"] == pytest.approx(2.8) and d["predicted_speedup"] == pytest.approx(1.0)


def test_inspect_json_on_demo():
    r = specscope("inspect", "--demo", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["model_type"] == "qwen3_5_moe" and d["linear_attention_layers"] == 6
