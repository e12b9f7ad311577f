"""``--tree-budget`` from the command line: parsed into the run's config, refused with the reason (and a non-zero
exit) where a tree cannot run, and a run end to end with the demo's DFlash drafter (greedy output equal to plain,
every round's tree shape in the session)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.cli.main import build_parser, main
from specscope.profiler.cli.run_args import config_from_args
from specscope.profiler.run.config import RunConfig

ROOT = Path(__file__).resolve().parents[3]


def test_the_flag_reaches_the_config_and_defaults_to_a_chain():
    a = build_parser().parse_args(["run", "--demo", "--drafter", "dflash", "--tree-budget", "8"])
    assert config_from_args(a).tree_budget == 8
    assert config_from_args(build_parser().parse_args(["run", "--demo"])).tree_budget == 0 == RunConfig.tree_budget


@pytest.mark.parametrize("settings, message", [
    ({"tree_budget": -1}, "must be >= 0"),
    ({"tree_budget": 4, "drafter": "ngram"}, "the ngram drafter drafts one chain"),
    ({"tree_budget": 4, "drafter": "oracle"}, "the oracle drafter drafts one chain"),
    ({"tree_budget": 4, "drafter": "dflash", "ranks": 2}, "several ranks"),
])
def test_run_config_refuses_what_a_tree_cannot_do(settings, message):
    with pytest.raises(SpecscopeError, match=message):
        RunConfig(demo=True, **settings).validate()


@pytest.mark.parametrize("drafter", ["mtp", "draft", "dflash"])
def test_run_config_takes_trees_from_the_drafters_with_distributions(drafter):
    """The MTP head and a draft model draft trees from their chain's top-b a step (as DFlash from its block's)."""
    RunConfig(demo=True, drafter=drafter, tree_budget=4, draft_model="x" if drafter == "draft" else None).validate()


def test_the_cli_refuses_with_the_reason_and_a_non_zero_exit(capsys):
    assert main(["run", "--demo", "--drafter", "ngram", "--tree-budget", "4"]) != 0
    assert "per-position distributions" in capsys.readouterr().err


def test_the_engine_refuses_a_drafter_without_distributions():
    """Refused once the name is known, before anything is measured (``auto`` on the demo is its MTP head, which
    drafts trees)."""
    from specscope.engine_adapter.engine import Engine
    from specscope.engine_adapter.params import EngineParams

    with pytest.raises(SpecscopeError, match="the ngram drafter drafts one chain"):
        Engine.open(EngineParams(demo=True, drafter="ngram", tree_budget=4))


@pytest.mark.slow  # a run end to end as a process (~1 min); decoding with trees is tested by default in
# tests/engine_adapter/decode/test_tree_decoding.py
def test_run_demo_with_dflash_trees(tmp_path):
    out = tmp_path / "s.json"
    r = subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", "run", "--demo", "--drafter", "dflash",
                        "--tree-budget", "8", "--cases", "1", "--max-tokens", "24", "--warmup", "0", "--repeats", "1",
                        "--no-breakdown", "--component-reps", "1", "-o", str(out), "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["match_rate"] == 1.0
    d = json.loads(out.read_text())
    assert d["config"]["tree_budget"] == 8
    rounds = [x for c in d["cases"] for x in c["spec"]["rounds"]]
    assert rounds and all(1 <= x["tree"]["nodes"] <= 8 and len(x["tree"]["path"]) == x["accepted"] for x in rounds)
