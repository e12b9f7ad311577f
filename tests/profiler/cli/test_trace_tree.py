"""``specscope trace`` on a tree run's session (``run --tree-budget``): the tree's candidates are traced too, and the
command prints the tree traces walked — E at every budget with the run's marked, and at the run's budget the
acceptance by depth and the depth histogram — beside E from the session's own full tree rounds (equal: greedy).

The fixture is a real run (2026-12-06, this checkout):
``specscope run --demo --drafter dflash --tree-budget 4 -k 4 --trace --cases 3 --max-tokens 24 --warmup 0 --repeats 1
--no-breakdown --component-reps 1`` (saved compact; the demo's path in it made neutral, so a re-trace finds the
shipped demo wherever the checkout is)."""

import json
from pathlib import Path

import pytest

from specscope.profiler.analysis import tree_trace
from specscope.profiler.cli.main import main
from specscope.profiler.cli.trace import format_trace, trace_figures, tree_figures
from specscope.profiler.run.tool_configs import TraceConfig
from specscope.profiler.run.trace_run import trace_plan
from specscope.profiler.session.session import Session

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TREE = FIXTURES / "session_tree_traced.json"  # budget 4, k 4, three cases, traced with the tree
CHAIN = FIXTURES / "session_demo.json"


def test_the_tree_figures_walk_the_sessions_tree_traces():
    s = Session.load(TREE)
    plan = trace_plan(s, TraceConfig(session=str(TREE)))
    assert plan.tree_budget == 4 and plan.k == 4
    res = trace_figures(s, plan, [c["id"] for c in s.cases])
    t = res["tree"]
    traces = tree_trace.tree_traces(s.cases)
    assert t["budgets"] == list(range(1, 17)) and t["E"] == [x["tokens_per_round"] for x in tree_trace.curve(traces, 4)]
    assert t["E_at_budget"] == t["E"][3] and t["E_at_budget"] == pytest.approx(t["measured_E"], rel=1e-12)
    assert sum(t["depth_histogram"]) == t["full_rounds"] == t["measured_rounds"] > 0
    n = t["full_rounds"]  # a_i is the share of paths that ended at depth i or deeper
    assert t["acceptance_by_depth"] == [pytest.approx(sum(t["depth_histogram"][i:]) / n) for i in range(1, 5)]
    text = format_trace(res)
    assert "tree traces: budget 4" in text and "4: 2.17 (this run)" in text and "accepted depth" in text
    assert all(c["measured_E_at_k"] is None for c in res["cases"])  # no chain round measured in a tree run


def test_a_chain_session_has_no_tree_figures():
    s = Session.load(CHAIN)
    plan = trace_plan(s, TraceConfig(session=str(CHAIN)))
    assert plan.tree_budget == 0 and tree_figures(s.cases, 4, plan.k) is None
    assert tree_figures(Session.load(TREE).cases, 0, 4) is None  # budget 0: a chain


@pytest.mark.slow  # a worker opens the demo and traces one case: 5-10 s on the shared 2-core machine
def test_trace_records_the_tree_and_walks_it_as_the_run_measured(tmp_path, capsys):
    d = json.loads(TREE.read_text())
    d["cases"] = d["cases"][1:2]  # one case keeps it short
    for c in d["cases"]:
        del c["trace"]  # traced afresh by the command
    src = tmp_path / "one.json"
    src.write_text(json.dumps(d))
    out = tmp_path / "traced.json"
    assert main(["trace", str(src), "-o", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    tr = Session.load(out).cases[0]["trace"]
    assert tr["tree"]["b"] == 16 and tr["tree"]["depth"] == 4  # the tree's candidates, every budget up to 16
    t = res["tree"]
    assert t["budget"] == 4 and t["measured_rounds"] > 0
    assert t["E_at_budget"] == pytest.approx(t["measured_E"], rel=1e-12)  # greedy: the walk is the run
