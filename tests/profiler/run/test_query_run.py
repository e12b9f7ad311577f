"""``inspect`` and ``preflight`` as measurements (profiler.run.query_run): measured in the worker, their answers the
ones ``specscope inspect --json`` and ``specscope preflight --json`` print, folded harmlessly into a session."""

from __future__ import annotations

import json

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.cli.main import main
from specscope.profiler.run.measure_config import from_argument, worker_argument
from specscope.profiler.run.query_configs import InspectConfig, PreflightConfig
from specscope.profiler.run.runner import run_worker
from specscope.profiler.session.schema import validate


def _worker(cfg):
    seen: list[dict] = []
    res = run_worker(cfg, on_event=lambda ev, _s: seen.append(ev))
    assert res.returncode == 0 and res.session.status == "complete", (res.session.data["errors"], res.stderr[-2000:])
    return res.session, seen


def test_inspect_in_the_worker_is_what_the_command_prints(capsys):
    s, seen = _worker(InspectConfig(demo=True))
    assert [ev["event"] for ev in seen] == ["run_started", "status", "inspect", "run_done"]
    assert seen[0]["measure"] == "inspect"
    assert main(["inspect", "--demo", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert seen[2]["inspect"] == printed
    # the description is the record a run keeps as its model (Engine.describe): the session keeps it there
    assert s.data["model"] == printed and s.data["measure"] == "inspect" and s.config == {}
    validate(s.to_dict())


def test_preflight_in_the_worker_is_what_the_command_prints(capsys):
    s, seen = _worker(PreflightConfig(demo=True))
    ev = next(e for e in seen if e["event"] == "preflight")
    code = main(["preflight", "--demo", "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == (1 if printed["status"] == "fail" else 0)
    strip = lambda r: {k: v for k, v in r.items() if k != "time"}  # noqa: E731 (each reading its own clock)
    assert strip(ev["preflight"]) == strip(printed)
    assert s.data["preflight"] == ev["preflight"]  # the session's preflight key, as a run's pre-flight lands
    validate(s.to_dict())


def test_a_query_crosses_to_the_worker_whole():
    for cfg in (InspectConfig(model="org/name", allow_oversize=True),
                PreflightConfig(demo=True, demo_variant="random", drafter="dflash")):
        assert from_argument(json.loads(worker_argument(cfg))) == cfg
    assert PreflightConfig(demo=True, demo_variant="random").worker_env == {"SPECSCOPE_DEMO": "random"}
    assert InspectConfig(model="/m").worker_env == {}


@pytest.mark.parametrize("cfg, needle", [
    (InspectConfig(), "give a model"),
    (InspectConfig(model="/m", demo=True), "not both"),
    (InspectConfig(demo=True, demo_variant="huge"), "unknown demo variant 'huge'"),
    (PreflightConfig(drafter="nobody"), "unknown drafter 'nobody'"),
    (PreflightConfig(model="/m", drafter="dflash"), "--drafter dflash needs --draft-model"),
    (PreflightConfig(demo_variant="random"), "a demo variant needs --demo"),
])
def test_bad_input_is_refused_with_a_clear_message(cfg, needle):
    with pytest.raises(SpecscopeError, match=needle):
        cfg.validate()
