"""One ``run_started`` shape for every measurement (``measure`` and ``config``), its fold, the results of the
benchmarks measured in the worker, and older measurement sessions (their kind and configuration nested in
``config``) loading in the new shape."""

from __future__ import annotations

import json

from specscope.profiler.session.schema import SCHEMA, SCHEMA_VERSION
from specscope.profiler.session.session import Session


def _started(measure: str, config: dict) -> dict:
    return {"event": "run_started", "measure": measure, "config": config, "environment": {}, "model": {}, "cases": [],
            "time": 1.0}


def test_a_run_keeps_its_config_and_a_measurement_its_own_beside_it():
    run = Session()
    run.apply(_started("run", {"max_tokens": 8, "drafter": {"name": "mtp"}}))
    assert run.data["measure"] == "run" and run.config["drafter"]["name"] == "mtp" and "measurement" not in run.data
    bench = Session()
    bench.apply(_started("bench", {"what": "rollback", "pairs": 1}))
    # a run's readers see no run configuration (never a measurement's fields under a run's names)
    assert bench.data["measure"] == "bench" and bench.config == {} and bench.data["measurement"]["what"] == "rollback"
    old = Session()
    old.apply({"event": "run_started", "config": {"max_tokens": 8}, "environment": {}, "model": {}, "cases": []})
    assert old.data["measure"] == "run" and old.config == {"max_tokens": 8}  # an event from before ``measure``


def test_the_benchmarks_results_fold_under_their_names():
    s = Session()
    s.apply(_started("bench", {"what": "rollback"}))
    s.apply({"event": "bench_pair", "benchmark": "rollback", "pair": 1})  # progress only
    before = json.loads(s.to_json())
    s.apply({"event": "bench", "bench": {"benchmark": "rollback", "ratio": 0.01}})
    assert "bench" not in before and s.data["bench"] == {"benchmark": "rollback", "ratio": 0.01}
    s.apply({"event": "memory_peak", "memory_peak": {"mlx_peak": 123, "tokens": [1, 2]}})
    assert s.data["memory_peak"]["mlx_peak"] == 123
    s.apply({"event": "run_done", "status": "complete"})
    assert Session.from_dict(json.loads(s.to_json())) == s  # saved and loaded whole


def test_an_older_measurement_session_loads_in_the_one_shape():
    d = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "status": "complete", "environment": {}, "model": {},
         "cases": [], "errors": [], "config": {"measure": "roofline", "measurement": {"positions": 3, "drafter": "auto"}},
         "roofline": {"curve": []}}
    s = Session.from_dict(d)
    assert s.data["measure"] == "roofline" and s.data["measurement"] == {"positions": 3, "drafter": "auto"}
    assert s.config == {} and s.data["roofline"] == {"curve": []}
