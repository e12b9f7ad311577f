"""The verify curve as a measurement of its own: its configuration, built by the CLI or beside a run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import specscope
from specscope.errors import SpecscopeError
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.measure_config import RooflineConfig
from specscope.profiler.run.roofline_run import roofline_data


class Opened(Exception):
    """The measurement got as far as opening the engine: every setting it reads was there."""


def test_run_roofline_builds_a_whole_measurement_from_the_runs_configuration(monkeypatch):
    """``run --roofline`` used to hand-build an argument namespace that lacked the context settings: it crashed with
    an AttributeError after the whole run. Now the run's configuration makes the roofline's."""
    from specscope.engine_adapter import tune_runs

    run = RunConfig(demo=True, num_draft_tokens=11, dtype="float32", engine="mlx-lm", context=512)
    cfg = RooflineConfig.beside_run(run, "draft")
    assert (cfg.positions, cfg.num_draft_tokens, cfg.drafter, cfg.dtype, cfg.context) == (12, 11, "draft", "float32", 512)
    assert cfg.engine == "specscope"  # the curve times specscope's own forwards, whichever loop the run measured
    seen = {}

    def open_(params, status):
        seen.update(drafter=params.drafter, dtype=params.dtype)
        raise Opened

    monkeypatch.setattr(tune_runs.TuneEngine, "open", staticmethod(open_))
    with pytest.raises(Opened):
        roofline_data(RooflineConfig.beside_run(RunConfig(demo=True, dtype="float32"), "mtp"))
    assert seen == {"drafter": "auto", "dtype": "float32"}  # every drafter opened; the run's cast kept


@pytest.mark.parametrize("bad, message", [(dict(positions=0), "--positions"), (dict(num_draft_tokens=9), "-k must"),
                                          (dict(reps=0), "--reps"), (dict(oracle_p=2.0), "--oracle-p"),
                                          (dict(demo=False), "give a model")])
def test_a_bad_roofline_setting_is_refused_before_anything_loads(bad, message):
    with pytest.raises(SpecscopeError, match=message):
        roofline_data(RooflineConfig(**{"demo": True, **bad}))


def test_no_argument_namespace_is_built_outside_argument_parsing():
    src = Path(specscope.__file__).resolve().parent
    built = [p.relative_to(src).as_posix() for p in src.rglob("*.py")
             if re.search(r"\b(?:argparse\.|Simple)?Namespace\(", p.read_text(encoding="utf-8"))]
    assert built == [], built
