"""``run``'s flags into a RunConfig: a flag missing from a caller's parser takes the config's own default."""

from __future__ import annotations

from specscope.profiler.cli.main import build_parser
from specscope.profiler.cli.run_args import config_from_args
from specscope.profiler.run.config import RunConfig


def test_flags_a_parser_lacks_take_the_run_configs_defaults():
    """Without --component-reps (or --trace, --until, --engine, --engine-timeout) on the namespace, the config's own
    defaults hold, read from RunConfig, not a copy (the fallback was 3 component reps where the config says 12)."""
    a = build_parser().parse_args(["run", "--demo"])
    assert config_from_args(a).component_reps == RunConfig.component_reps
    a = build_parser().parse_args(["run", "--demo"])
    for name in ("component_reps", "trace", "until", "engine", "engine_timeout"):
        delattr(a, name)
    cfg = config_from_args(a)
    default = RunConfig()
    assert (cfg.component_reps, cfg.trace, cfg.until, cfg.engine, cfg.engine_timeout_s) == (
        default.component_reps, default.trace, default.until, default.engine, default.engine_timeout_s)
