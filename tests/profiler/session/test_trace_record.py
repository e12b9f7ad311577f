"""The acceptance trace record: what a session accepts as one."""

from __future__ import annotations

import pytest

from specscope.profiler.session.trace_record import TraceError, check


@pytest.mark.parametrize("bad", [None, {"k_max": 0, "A": []}, {"k_max": 2, "A": [3]}, {"k_max": 2, "A": ["x"]},
                                 {"k_max": 2, "A": [1, 1], "draws": [[1]]}])
def test_check_refuses_malformed_traces(bad):
    with pytest.raises(TraceError):
        check(bad)
