"""The shapes of what a run reads and checks before it measures (``TypedDict``s: plain dicts at run time, keys
checked by mypy): the suite's cases, the long-context memory check, the sensors' description, a ring hostfile; and
what the measurements beside a run add to the analysis' figures (the roofline's).
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import NotRequired, TypedDict

# the roofline as measured is kept with the session: defined with it (``session.measured``)
from specscope.profiler.session.measured import AttentionAtContext, ContextPrefill, RooflineRun  # noqa: F401


class SuiteCase(TypedDict):
    """One prompt of a suite (``suite.load_suite``), normalised."""
    id: str
    content_class: str
    prompt: str


class Suite(TypedDict):
    name: str
    cases: list[SuiteCase]


class MemoryNeeded(TypedDict):
    """What holding a run's contexts needs, in bytes (``context_check.memory_needed``)."""
    kv_bytes_per_token: int
    stored_bytes: int
    scores_bytes: int
    weights_bytes: int
    total_bytes: int


class ContextCheck(TypedDict, total=False):
    """``context_check.precheck``: the model's window and ``MemoryNeeded``, all of them, or none where the model's
    config.json could not be read (``{}``)."""
    window: int
    kv_bytes_per_token: int
    stored_bytes: int
    scores_bytes: int
    weights_bytes: int
    total_bytes: int


class SensorDescription(TypedDict):
    """A sensor source, as the run's environment records it (``sensors.SensorSource.describe``)."""
    source: str
    available: bool
    reason: str
    thermal: str
    chip: NotRequired[str]             # macmon-lib: the chip's name ("" where it does not say)


class RingHost(TypedDict):
    ssh: str
    ips: list[str]


class RingHostfile(TypedDict):
    """The hostfile mlx.launch reads for the ring backend (``launch.ring_hostfile``)."""
    backend: str
    hosts: list[RingHost]


