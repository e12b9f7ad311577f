"""What typing the session's measurements found: a session saved while its roofline was still measuring holds only the
curve so far (``RooflinePartial``), and the report reads it as no roofline yet instead of failing on the keys a whole
roofline has (``by_block``, ``headline``)."""

from __future__ import annotations

from specscope.gui.charts.cost_data import expert_union_data, verify_curve_data
from specscope.gui.reports.html_cost import verify_cost_section
from specscope.profiler.session.session import Session


def _stopped_mid_roofline() -> Session:
    s = Session()
    s.apply({"event": "roofline", "partial": True,
             "roofline": {"curve": [{"positions": n, "whole_ms": 2.0 * n, "whole_ms_min": 1.9 * n,
                                     "whole_ms_max": 2.1 * n} for n in (1, 2, 3)], "partial": True}})
    return s


def test_a_report_of_a_session_stopped_mid_roofline_leaves_the_roofline_out():
    s = _stopped_mid_roofline()
    assert verify_cost_section(s) == ""  # no roofline yet: no section (it failed on the missing by_block)


def test_the_page_still_draws_the_curve_so_far():
    roof = _stopped_mid_roofline().data["roofline"]
    d = verify_curve_data(roof)
    assert d is not None and d["n"] == [1, 2, 3] and d["measured"] == [1.0, 2.0, 3.0]
    assert d["floor"] == [None, None, None] and d["ideal"] is None  # no floor until the roofline is whole
    assert expert_union_data(roof) is None  # not yet known whether the model routes experts
