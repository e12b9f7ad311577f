"""A tree run's budget what-if (``analysis.tree_what_if``): other budgets priced by the one round model, the run's own
budget's figure its prediction, E at a smaller budget from the run's rounds cut to their first B nodes, T_verify(B)
timed beside the run and put on the prediction's scale; on the summary text and the Division page's text."""

from __future__ import annotations

import math

import pytest

from specscope.profiler.analysis.round_model import RoundModel
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.analysis.summary_text import format_summary
from specscope.profiler.analysis.tree_text import budget_what_if_text
from specscope.profiler.analysis.tree_what_if import budget_what_if, cut_accepted
from specscope.profiler.session.components_fold import fold_components
from specscope.profiler.session.session import Session

from session_events import paired_events
from session_events import BUDGET, TIMES, tree_session_dict



def _session(times=TIMES) -> Session:
    d = tree_session_dict()
    for c in d["cases"]:
        if c.get("components") and times:
            c["components"]["budget_verify_ms"] = {b: list(xs) for b, xs in times.items()}
            c["components"]["budget_verify_wall_ms"] = 250.0
    s = Session()
    for ev in paired_events(d):
        s.apply(ev)
    return s


@pytest.fixture(scope="module")
def tree_run():
    sess = _session()
    return sess, summarize(sess)


def _counted_paths(sess) -> list[list[int]]:
    k = sess.k
    return [r["tree"]["path"] for c in sess.cases for r in c["spec"]["rounds"]
            if r["tree"]["max_depth"] == k and r.get("pass") != "ledger" and not r.get("repeat")]


def test_the_runs_own_budget_is_its_prediction_and_another_is_priced_by_the_round_model(tree_run):
    sess, s = tree_run
    w = budget_what_if(sess, s)
    assert w is not None and w["budget"] == BUDGET and w["e_source"] == "rounds"
    by = {p["budget"]: p for p in w["points"]}
    assert sorted(by) == [1, 2, 4, 8]
    own = by[BUDGET]
    assert own["this_run"] and own["speedup"] == s["predicted_speedup"]  # exactly the prediction
    assert own["tokens_per_round"] == s["tokens_per_round"] and own["t_verify_ms"] == s["t_verify_ms"]
    # budget 2 by hand: E from the rounds' trees cut to their first 2 nodes, T_verify on the prediction's scale
    paths = _counted_paths(sess)
    e2 = 1 + sum(cut_accepted(p, 2) for p in paths) / len(paths)
    cases = sum(1 for c in sess.cases if c.get("components"))
    loop_2, loop_own = sum(TIMES["2"]) / 2, sum(TIMES["4"]) / 2
    tv2 = s["t_verify_ms"] * loop_2 / loop_own
    want = RoundModel.from_summary(s).what_if(tokens_per_round=e2, t_verify_ms=tv2).speedup
    assert by[2]["tokens_per_round"] == pytest.approx(e2, rel=1e-12)
    assert by[2]["t_verify_ms"] == pytest.approx(tv2, rel=1e-12) and by[2]["timed_verify_ms"] == loop_2
    assert by[2]["speedup"] == pytest.approx(want, rel=1e-12) and by[2]["verify_samples"] == 2 * cases
    lo, hi = by[2]["speedup_ci95"]
    assert lo < by[2]["speedup"] < hi
    # cutting the tree lowers E (a tree of 2 nodes holds fewer paths), a fair what-if would show it
    assert by[1]["tokens_per_round"] <= by[2]["tokens_per_round"] < s["tokens_per_round"]
    # above the run's budget the rounds cannot say E (no trace): timed, not priced
    assert by[8]["tokens_per_round"] is None and by[8]["speedup"] is None and by[8]["t_verify_ms"] is not None
    priced = [p for p in w["points"] if p["speedup"] is not None]
    assert w["best"] == max(priced, key=lambda p: p["speedup"])["budget"]
    assert w["cost_s"] == pytest.approx(0.25 * cases)


def test_the_cut_follows_node_order_and_a_depth_cut_is_caught(tree_run):
    sess, s = tree_run
    # budget 4, k = 2 in the fixture's trees: nodes 1, 2 at depth 1, nodes 3, 4 under node 1; a full path is [1, 3]
    assert cut_accepted([1, 3], 4) == 2 and cut_accepted([1, 3], 2) == 1 and cut_accepted([1, 3], 1) == 1
    assert cut_accepted([2], 1) == 0 and cut_accepted([], 1) == 0
    paths = _counted_paths(sess)
    assert any(len(p) == 2 for p in paths)
    # negative control: cutting by depth (a chain's rule, min(a, B)) keeps node 3 at budget 2 and gives another E
    by_depth = 1 + sum(min(len(p), 2) for p in paths) / len(paths)
    w = budget_what_if(sess, s)
    e2 = next(p for p in w["points"] if p["budget"] == 2)["tokens_per_round"]
    assert not math.isclose(by_depth, e2)


def test_the_text_the_summary_and_the_division_say_it(tree_run):
    sess, s = tree_run
    text = format_summary(sess)
    assert "budget what-if" in text and "← this run: its prediction" in text and "best predicted: budget" in text
    assert "T_draft, T_rollback and T_bookkeeping taken at the run's budget" in text
    assert "record the run with --trace" in text  # budget 8: timed, but no E without a trace
    assert "cut to its first B nodes" in text
    page = budget_what_if_text(sess, s)
    assert page is not None and page.startswith("Tree budget what-if: best predicted")


def test_the_reports_tree_section_prices_the_budgets(tree_run):
    from specscope.gui.reports.html_tree import tree_section

    sess, s = tree_run
    html = tree_section(sess, s)
    assert "Budget what-if: best predicted" in html and "4 (this run)" in html and "its prediction" in html
    assert f"{s['predicted_speedup']:.3f}×" in html and "— (no E: run --trace)" in html


def test_no_what_if_for_a_chain_or_a_tree_run_that_timed_no_other_budget():
    from session_events import PAIRED, session_of as chain_session
    import json

    from specscope.profiler.session.schema import migrate_names

    chain = chain_session(migrate_names(json.loads(PAIRED.read_text(encoding="utf-8"))))
    assert budget_what_if(chain, summarize(chain)) is None and "what-if" not in format_summary(chain)
    old = _session(times=None)  # recorded before the what-if: nothing priced, nothing printed without a trace
    assert budget_what_if(old, summarize(old)) is None and "budget what-if" not in format_summary(old)


def test_the_fold_keeps_every_calls_budget_verifies():
    a = {"verify_ms": [1.0], "rollback_ms": {"0": [0.1]}, "budget_verify_ms": {"1": [2.0], "4": [3.0]},
         "budget_verify_wall_ms": 5.0, "wall_ms": 10.0}
    b = {"verify_ms": [1.5], "rollback_ms": {"0": [0.2]}, "budget_verify_ms": {"1": [2.5], "4": [3.5]},
         "budget_verify_wall_ms": 6.0, "wall_ms": 11.0}
    out = fold_components(fold_components(None, a), b)
    assert out["budget_verify_ms"] == {"1": [2.0, 2.5], "4": [3.0, 3.5]} and out["budget_verify_wall_ms"] == 11.0
    chain = fold_components(fold_components(None, {"verify_ms": [1.0]}), {"verify_ms": [2.0]})
    assert "budget_verify_ms" not in chain and chain["rollback_ms"] == {}
