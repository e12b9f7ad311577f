"""The chart data for a session that grows (the app's snapshots): ``LiveChartData`` gives what
``data.all_chart_data`` gives, extending each series with the steps and rounds that arrived since it last looked
instead of rebuilding it (equal to a full recomputation: tested)."""

from __future__ import annotations

from itertools import chain

from specscope.profiler.analysis import stats
from specscope.profiler.analysis.summary import LiveSummary
from specscope.profiler.session.records import Case, Summary
from specscope.profiler.session.session import Session

from .data import (acceptance_points, breakdown_data, count_emitted, counted_rounds, division_data, plain_points,
                   probe_series, spec_points)
from .tree_acceptance import tree_acceptance
from .records import (AcceptanceData, BreakdownData, ChartData, ProbeSeries, ThroughputData,
                      TokensPerRoundData)


# -- the same, for a session that grows -----------------------------------------------------------

class _Segment:
    __slots__ = ("case", "src", "n", "start", "end", "cols")

    def __init__(self, case, src, start, ncols):
        self.case, self.src, self.n, self.start, self.end = case, src, 0, start, start
        self.cols: list[list] = [[] for _ in range(ncols)]


class _SeriesFold:
    """A series that runs across the cases in order (a clock, a cumulative count), kept up to date.

    Each case's segment is extended with the items appended to its list since the last look; a case
    whose list was replaced or shrank, or whose start state moved (an earlier case changed), is redone
    from its start. ``columns()`` returns new lists when anything changed, else the same ones as before.
    """

    def __init__(self, source, extend, ncols: int, initial):
        self.source, self.extend, self.ncols, self.initial = source, extend, ncols, initial
        self._segs: dict[int, _Segment] = {}  # by id(case); a segment holds its case, so ids stay unique
        self._order: list[_Segment] = []
        self._out: list[list] | None = None

    def columns(self, cases: list[Case]) -> list[list]:
        state, order, changed = self.initial, [], False
        for c in cases:
            src = self.source(c)
            seg = self._segs.get(id(c))
            if seg is None or seg.case is not c or seg.src is not src or len(src) < seg.n or seg.start != state:
                seg = self._segs[id(c)] = _Segment(c, src, state, self.ncols)
                changed = True
            if len(src) > seg.n:
                seg.end = self.extend(src, seg.n, seg.end, *seg.cols)
                seg.n = len(src)
                changed = True
            state = seg.end
            order.append(seg)
        if changed or self._out is None or len(order) != len(self._order) or any(a is not b for a, b in zip(order, self._order)):
            self._order = order
            self._out = [list(chain.from_iterable(s.cols[j] for s in order)) for j in range(self.ncols)]
        return self._out


class LiveChartData:
    """``all_chart_data(session, summary)`` for a session that grows the way ``Session.apply`` grows it.

    Series are extended, not rebuilt; a section whose data did not change comes back as the same
    objects, so a chart can tell at once that it has nothing to redraw. Equal to ``all_chart_data``
    (tested on the fixture session fed event by event, and on a live run).
    """

    def __init__(self, session: Session, live_summary: LiveSummary | None = None):
        self.session = session
        self.live = live_summary if live_summary is not None else LiveSummary(session)
        self._k: int | None = None
        self._plain = _SeriesFold(lambda c: c["plain"]["step_ms"], plain_points, 2, 0.0)
        self._spec = _SeriesFold(lambda c: c["spec"]["rounds"], spec_points, 2, 0.0)
        # each chart's data, and the key it was made from: remade only when the key changes
        self._bd_src: object | None = None  # the summary's breakdown, compared by identity
        self._bd: BreakdownData | None = None
        self._tp_key: tuple | None = None
        self._tp: ThroughputData | None = None
        self._acc_key: tuple | None = None
        self._acc: AcceptanceData | None = None
        self._tpr_key: tuple | None = None
        self._tpr: TokensPerRoundData | None = None
        self._probe_key: tuple | None = None
        self._probe: ProbeSeries | None = None

    def _reset_k(self, k: int) -> None:
        self._k = k
        self._acc_fold = _SeriesFold(counted_rounds,
                                     lambda rs, i, st, *cols: acceptance_points(rs, i, st, k, *cols), 4, (0, 0, 0))
        self._tpr_counts: dict[int, tuple] = {}  # id(case) -> (case, rounds, n counted, counts)

    def _tokens_per_round(self, cases: list[Case], k: int) -> list[int]:
        total = [0] * (k + 1)
        for c in cases:
            rs = counted_rounds(c)
            e = self._tpr_counts.get(id(c))
            if e is None or e[0] is not c or e[1] is not rs or len(rs) < e[2]:
                e = (c, rs, 0, [0] * (k + 1))
            if len(rs) > e[2]:
                count_emitted(rs, e[2], k, e[3])
                e = (c, rs, len(rs), e[3])
            self._tpr_counts[id(c)] = e
            total = [a + b for a, b in zip(total, e[3])]
        return total

    def chart_data(self, summary: Summary | None = None) -> ChartData:
        s = self.session
        summary = self.live.summary() if summary is None else summary
        cases, k = s.cases, s.k
        if k != self._k:
            self._reset_k(k)
        px, py = self._plain.columns(cases)
        sx, sy = self._spec.columns(cases)
        tp_key = (px, sx, summary.get("predicted_tok_s"), summary.get("plain_tok_s"), summary.get("spec_tok_s"))
        if self._tp is None or not _same(tp_key, self._tp_key):
            self._tp_key = tp_key
            self._tp = {"plain_x": px, "plain_y": py, "spec_x": sx, "spec_y": sy, "predicted_tok_s": tp_key[2],
                        "plain_tok_s": tp_key[3], "spec_tok_s": tp_key[4]}
        x, y, lo, hi = self._acc_fold.columns(cases)
        acc_key = (x, summary.get("regime"), summary.get("drafted"), tree_acceptance(summary))  # a tree: by depth
        if self._acc is None or not _same(acc_key, self._acc_key):
            self._acc_key = acc_key
            self._acc = {"x": x, "y": y, "lo": lo, "hi": hi, "low_sample_limit": stats.LOW_SAMPLE_DRAFTED,
                         "regime": acc_key[1], "drafted": acc_key[2], "tree": acc_key[3]}
        counts = self._tokens_per_round(cases, k)
        tpr_key = (summary.get("tokens_per_round"), k)
        if self._tpr is None or counts != self._tpr["counts"] or tpr_key != self._tpr_key:
            self._tpr_key = tpr_key
            self._tpr = {"bins": list(range(1, k + 2)), "counts": counts, "mean": tpr_key[0], "k": k}
        bd = summary.get("breakdown")
        if self._bd is None or bd is not self._bd_src:
            self._bd_src, self._bd = bd, breakdown_data(summary)
        probe_key = (len(s.data.get("probe") or []), len(s.data.get("sensors") or []), summary.get("probe"))
        if self._probe is None or probe_key != self._probe_key:
            self._probe_key, self._probe = probe_key, probe_series(s, summary)
        return {
            "probe": self._probe,
            "summary": summary,
            "throughput": self._tp,
            "acceptance": self._acc,
            "tokens_per_round": self._tpr,
            "breakdown": self._bd,
            "division": division_data(s, summary, case_stats=self.live.case_stats),
        }


def _same(a: tuple, b: tuple | None) -> bool:
    """Same series objects (lists compared by identity) and equal numbers."""
    return b is not None and len(a) == len(b) and all(x is y if isinstance(x, list) else x == y for x, y in zip(a, b))
