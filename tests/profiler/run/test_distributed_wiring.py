"""Distributed runs wired into the product, without launching anything: flags, config, the per-rank aggregate,
the text summary, the break-even acceptance and the communication what-if."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.analysis import stats
from specscope.profiler.analysis.round_model import RoundModel, communication_what_if
from specscope.profiler.cli.main import build_parser
from specscope.profiler.cli.run_args import config_from_args
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.config import DistSpec
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import LiveSummary, aggregate_breakdown, summarize
from specscope.profiler.analysis.summary_text import format_summary

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"


def distributed_session(n: int = 2) -> Session:
    """The fixture session made to look like an ``n``-rank run: a communication block and per-rank figures
    (rank r's times scaled by 1 + r/10) in every breakdown, as ``engine_adapter.distributed.engine`` records them."""
    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    for c in d["cases"]:
        bd = c.get("breakdown")
        if not bd:
            continue
        for side, comm in (("decode", 3.0), ("verify", 3.3)):
            f = bd[side]
            f["blocks"]["communication"] = comm
            f["skip_estimates"]["communication"] = comm * 0.8
            scalars = {k: [f[k] * (1 + r / 10) for r in range(n)]
                       for k in ("whole_ms", "instrumented_ms", "block_sum_ms", "inter_block_ms", "barrier_distortion")}
            f["per_rank"] = {**scalars,
                             "communication_split": {"wait_ms": [1.0] * n, "transfer_ms": [comm - 1.0] * n},
                             "blocks": {k: [v * (1 + r / 10) for r in range(n)] for k, v in f["blocks"].items()},
                             "skip_estimates": {k: [v * (1 + r / 10) for r in range(n)] for k, v in f["skip_estimates"].items()}}
        bd["labels"]["communication"] = f"Communication (ring, {n} ranks)"
        bd["distributed"] = {"ranks": n, "backend": "ring", "hosts": [f"h{r}" for r in range(n)], "rank_of_figures": 0,
                             "parallelism": "tensor", "collectives_per_forward": "1 all-gather + 16 all-sums"}
    return Session.from_dict(d)


# -- flags and config ---------------------------------------------------------------------------------------


def test_run_flags_reach_the_config():
    ap = build_parser()
    cfg = config_from_args(ap.parse_args(["run", "--demo", "--ranks", "2"]))
    assert cfg.ranks == 2 and cfg.hosts is None and DistSpec.from_config(cfg) == DistSpec(ranks=2)
    cfg = config_from_args(ap.parse_args(["run", "--demo", "--hosts", "10.0.0.1, 10.0.0.2", "--backend", "any"]))
    assert cfg.hosts == ["10.0.0.1", "10.0.0.2"] and cfg.backend == "any"
    assert DistSpec.from_config(build_config()) is None  # no flag: one process
    with pytest.raises(SystemExit):  # one of --ranks, --hosts, --hostfile
        ap.parse_args(["run", "--demo", "--ranks", "2", "--hosts", "a,b"])
    g = ap.parse_args(["gui", "--demo", "--ranks", "2", "--repeats", "3", "--cooldown", "--discard-first", "1"])
    assert (g.ranks, g.repeats, g.cooldown, g.discard_first) == (2, 3, True, 1)


def build_config(**kw) -> RunConfig:
    return RunConfig(demo=True, **kw)


@pytest.mark.parametrize("kw, msg", [
    ({"ranks": 0}, "--ranks must be"),
    ({"ranks": 2, "backend": "jaccl"}, "mlx.distributed_config"),
    ({"hosts": ["a", ""]}, "no empty names"),
    ({"hostfile": "/nonexistent/hosts.json"}, "does not exist"),
])
def test_config_refuses_a_bad_distributed_setting(kw, msg):
    with pytest.raises(SpecscopeError, match=msg):
        build_config(**kw).validate()


def test_a_rank_runs_the_protocol_as_a_plain_run():
    from specscope.profiler.run.dist_worker import split_config

    cfg, dist = split_config(build_config(ranks=2, backend="ring").to_dict(), {"backend": "ring", "hosts": ["x", "y"]})
    assert cfg.ranks is None and cfg.hosts is None and dist["ranks"] == 2 and dist["hosts"] == ["x", "y"]
    cfg.validate()


def test_run_protocol_takes_an_engine_opener():
    from specscope.profiler.run import protocol

    seen = []

    def opener(cfg, emit):
        seen.append(cfg)
        raise SpecscopeError("opened by the caller's opener")

    with pytest.raises(SpecscopeError, match="caller's opener"):
        protocol.run_protocol(build_config(cases=1), lambda ev: None, open_engine=opener)
    assert seen


# -- the aggregate, batch and live ----------------------------------------------------------------------------


def test_per_rank_aggregate_and_shares():
    s = distributed_session(2)
    bd = summarize(s)["breakdown"]
    assert bd["distributed"]["ranks"] == 2 and "communication" in bd["block_order"]
    assert bd["ratios"]["communication"] == pytest.approx(3.3 / 3.0)
    for side in ("decode", "verify"):
        a = bd[side]
        sh = a["communication_share"]
        assert sh["barrier"] == pytest.approx(a["blocks"]["communication"] / a["block_sum_ms"])
        assert sh["barrier_free"] == pytest.approx(a["skip_estimates"]["communication"] / a["whole_ms"])
        pr = a["per_rank"]
        assert pr["ranks"] == 2 and pr["communication_ruler"] == "barrier_free"
        assert pr["communication_ms"] == pr["skip_estimates"]["communication"]
        assert pr["communication_barrier_ms"] == pr["blocks"]["communication"]
        assert pr["compute_ms"] == [w - c for w, c in zip(pr["whole_ms"], pr["communication_ms"])]
        assert pr["whole_ms"][1] == pytest.approx(pr["whole_ms"][0] * 1.1)
    # the live path gives the same numbers (it reuses the aggregate)
    assert LiveSummary(s).summary()["breakdown"] == bd


def test_per_rank_needs_the_same_ranks_in_every_case():
    s = distributed_session(2)
    bds = [copy.deepcopy(c["breakdown"]) for c in s.cases if c.get("breakdown")]
    bds[-1]["decode"]["per_rank"]["whole_ms"].append(1.0)  # a case from a 3-rank run
    agg = aggregate_breakdown(bds)
    assert "per_rank" not in agg["decode"] and agg["decode"]["communication_share"]["barrier"] is not None


def test_one_machine_has_no_per_rank_figures():
    bd = summarize(Session.load(str(FIXTURE)))["breakdown"]
    assert "distributed" not in bd and "per_rank" not in bd["decode"] and "communication_share" not in bd["decode"]


def test_text_summary_has_a_row_per_rank():
    text = format_summary(distributed_session(2))
    assert "Communication (ring, 2 ranks)" in text
    assert "per rank (2 ranks, ring, tensor parallel, 1 all-gather + 16 all-sums per forward" in text
    assert "rank 0 (h0)" in text and "rank 1 (h1)" in text and "communication's share: decode" in text
    assert "per rank" not in format_summary(Session.load(str(FIXTURE)))


def test_html_report_has_a_row_per_rank(tmp_path):
    from specscope.gui.reports.html_breakdown import per_rank_section

    html = per_rank_section(summarize(distributed_session(2))["breakdown"])
    assert "Per rank: compute and communication" in html and "rank 1 (h1)" in html and html.count("<tr") == 3
    assert per_rank_section(summarize(Session.load(str(FIXTURE)))["breakdown"]) == ""


# -- the break-even acceptance and the communication what-if ----------------------------------------------------


def test_break_even_p():
    p = RoundModel(1.0, 10.0, 15.0, 2.0).break_even_alpha(3)
    assert stats.tokens_per_round_from_p(p, 3) * 10.0 == pytest.approx(17.0)
    assert RoundModel(1.0, 10.0, 8.0, 1.0).break_even_alpha(2) == 0.0  # wins at p = 0
    assert RoundModel(1.0, 10.0, 40.0, 0.0).break_even_alpha(2) is None  # cannot win even at p = 1 (E ≤ 3)
    # the whole round: a rollback makes the break-even acceptance higher
    assert RoundModel(1.0, 10.0, 15.0, 2.0, 1.0, 0.5).break_even_alpha(3) > p


def test_communication_pushes_the_break_even_down():
    """Communication that every forward pays alike makes verify cheaper relative to decode."""
    m = RoundModel(1.0, 10.0, 25.0, 1.0)
    base = communication_what_if(m, 2, 0.0, 0.0, 0.0)
    assert base["break_even_p"] == pytest.approx(m.break_even_alpha(2))
    more = [communication_what_if(m, 2, 0.0, 0.0, x) for x in (5.0, 20.0, 80.0)]
    ps = [base["break_even_p"]] + [w["break_even_p"] for w in more]
    assert ps == sorted(ps, reverse=True) and ps[-1] < ps[0]
    assert [w["verify_multiple"] for w in more] == sorted((w["verify_multiple"] for w in more), reverse=True)
    # a measured share is taken out first: 50% of a 10 ms decode is communication, so 5 ms of it gives the same T_decode
    w = communication_what_if(m, 2, 0.5, 0.2, 5.0)
    assert w["t_decode_ms"] == pytest.approx(10.0) and w["t_verify_ms"] == pytest.approx(25.0 * 0.8 + 5.0)
