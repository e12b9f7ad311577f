"""The Chrome trace export (``report X.trace.json``) of a tree run: its rounds are "tree round" slices carrying the
tree's nodes, depth, nodes per depth and accepted path; a chain run's are "round" slices without them."""

import json
from pathlib import Path

from specscope.profiler.renderers import trace
from specscope.profiler.session.session import Session

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_tree_rounds_carry_their_shape_and_chain_rounds_do_not():
    s = Session.load(FIXTURES / "session_tree_traced.json")
    doc = json.loads(trace.render(s))
    rounds = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] in ("round", "tree round")]
    recorded = [r for c in s.cases for r in c["spec"]["rounds"]]
    assert len(rounds) == len(recorded) and all(e["name"] == "tree round" for e in rounds)
    for e, r in zip(rounds, recorded):
        assert e["args"]["tree_nodes"] == r["tree"]["nodes"] and e["args"]["accepted_path"] == r["accepted"]
        assert sum(e["args"]["nodes_per_depth"]) == r["tree"]["nodes"] == len(r["drafted"])
    verify = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "verify"]
    assert all(v["args"]["positions"] == v["args"]["tree_nodes"] + 1 for v in verify)
    assert doc["otherData"]["tree_budget"] == 4
    chain = json.loads(trace.render(Session.load(FIXTURES / "session_demo.json")))
    assert chain["otherData"]["tree_budget"] == 0
    assert not any(e["name"] == "tree round" or "tree_nodes" in e.get("args", {}) for e in chain["traceEvents"])
