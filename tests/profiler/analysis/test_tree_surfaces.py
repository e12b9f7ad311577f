"""A tree run on the surfaces: the summary text, the CSV and the report say it is a tree (budget, nodes verified, the
accepted path and its depths, nodes per accepted token); a chain run's surfaces carry none of it."""

from __future__ import annotations

import csv
import io
import json

from specscope.profiler.analysis.summary import summarize
from specscope.profiler.analysis.summary_text import format_summary
from specscope.profiler.analysis.tree_text import verify_width
from specscope.profiler.renderers import csv_renderer
from specscope.profiler.session.schema import migrate_names
from specscope.profiler.session.session import Session

from session_events import paired_events
from session_events import PAIRED, tree_session_dict


def _session(d: dict) -> Session:
    s = Session()
    for ev in paired_events(d):
        s.apply(ev)
    return s


def test_a_tree_run_says_it_is_one_and_a_chain_run_does_not():
    tree, chain = _session(tree_session_dict()), _session(migrate_names(json.loads(PAIRED.read_text(encoding="utf-8"))))
    text = format_summary(tree)
    assert "tree budget 4" in text and "accepted path" in text and "accepted depth" in text
    assert "nodes verified per accepted token" in text and "a tree of 4 nodes (5 positions)" in text
    assert "share of paths reaching depth i" in text and "acceptance 0" not in text
    plain = format_summary(chain)
    assert "tree" not in plain and "per position a_i" in plain
    s = summarize(tree)
    assert verify_width(s) == "a tree of 4 nodes (5 positions)" and verify_width(summarize(chain)) == "3 positions"
    rows = list(csv.DictReader(io.StringIO(csv_renderer.render(tree))))
    assert rows[0]["tree_budget"] == "4" and float(rows[0]["tree_nodes_per_round"]) == 4.0
    assert "tree_budget" not in csv_renderer.render(chain).splitlines()[0]


def test_the_reports_tree_section():
    from specscope.gui.reports.html_tree import tree_section

    tree = _session(tree_session_dict())
    html = tree_section(tree, summarize(tree))
    assert "Tree (budget 4)" in html and "Nodes per accepted token" in html and "Accepted path depth" in html
    chain = _session(migrate_names(json.loads(PAIRED.read_text(encoding="utf-8"))))
    assert tree_section(chain, summarize(chain)) == ""
