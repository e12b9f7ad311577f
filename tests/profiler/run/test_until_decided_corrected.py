"""``run --until decided`` through the protocol (the stand-in engine of test_protocol, its rounds given a per-case
level so the cases spread): the summary carries the error corrected for the sequential stop, and says so; a run of a
fixed size carries none."""

from __future__ import annotations

import math
import random

from specscope.profiler.analysis.summary import summarize
from specscope.profiler.analysis.summary_text import format_summary
from specscope.profiler.run import protocol
from specscope.profiler.run.config import RunConfig
from specscope.profiler.session.session import Session

from test_protocol import StubEngine  # noqa: E402 - the stand-in engine, from the module beside this one


class SpreadEngine(StubEngine):
    """The stand-in engine with each speculative pass's rounds at a level of its own (log sd 0.04)."""

    def __init__(self, seed: int, **kw):
        super().__init__(**kw)
        self.rng = random.Random(seed)

    def speculative(self, prompt, plain_tokens, max_tokens, round_kinds="instrumented"):
        f = math.exp(self.rng.gauss(0.0, 0.04))
        for ev in super().speculative(prompt, plain_tokens, max_tokens, round_kinds):
            if ev["event"] == "round":
                ev = {**ev, "ms": ev["ms"] * f, "verify_ms": ev["verify_ms"] * f if ev["verify_ms"] is not None else None}
            yield ev


def _run(monkeypatch, **kw):
    engine = SpreadEngine(seed=3, round_extra_ms=3.0)  # rounds dearer than their components: off by about +8%
    monkeypatch.setattr(protocol, "open_engine", lambda cfg, emit: engine)
    s = Session()
    status = protocol.run_protocol(RunConfig(demo=True, max_tokens=41, warmup=0, breakdown=False, repeats=1, **kw),
                                   s.apply)
    s.apply({"event": "run_done", "status": status})
    return s


def test_an_until_decided_run_reports_its_error_corrected_for_the_stop(monkeypatch):
    s = _run(monkeypatch, cases=20, until="decided")
    sm = summarize(s)
    assert sm["prediction_error"] is not None and sm["prediction_error_corrected"] is not None
    assert sm["prediction_error_corrected"] != sm["prediction_error"]
    assert "sequential stop" in sm["prediction_error_correction"]
    assert "corrected for the sequential stop" in format_summary(s)


def test_a_run_of_a_fixed_size_has_no_correction(monkeypatch):
    sm = summarize(_run(monkeypatch, cases=10))
    assert sm["prediction_error"] is not None
    assert sm["prediction_error_corrected"] is None and sm["prediction_error_correction"] is None


def test_verdict_pools_the_corrected_error_of_runs_that_stopped_sequentially(monkeypatch, tmp_path, capsys):
    import json

    import pytest

    from specscope.profiler.cli.main import main

    s = _run(monkeypatch, cases=20, until="decided")
    corrected = summarize(s)["prediction_error_corrected"]
    paths = [str(tmp_path / f"run{i}.json") for i in range(3)]
    for p in paths:
        s.save(p)
    assert main(["verdict", *paths, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["error"] == pytest.approx(corrected)
    assert all(r["corrected_for_sequential_stop"] and r["error"] == pytest.approx(corrected) for r in res["sessions"])
    assert main(["verdict", *paths]) == 0
    assert capsys.readouterr().out.count("(corrected for the sequential stop)") == 3
