"""The shapes of what a run reads and checks before it measures (``TypedDict``s: plain dicts at run time, keys
checked by mypy): the suite's cases, the long-context memory check, the sensors' description, a ring hostfile; and
what the measurements beside a run add to the analysis' figures (the roofline's).
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from specscope.profiler.analysis.records import Roofline


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


class ContextPrefill(TypedDict):
    """The long context prefilled once and stored (``TuneEngine.store_context``), and where its tokens came from."""
    ms: float
    tokens: int
    bytes: int
    kind: str                          # "file", or the synthetic context's kind


class AttentionAtContext(TypedDict):
    """Full attention's KV reads against a decode step's bytes, from the model's bytes (not timed)."""
    bytes_per_context_token: float
    step_bytes_no_context: float
    kv_share_of_step: float            # of a decode step's bytes at this context
    context_at_10pct: float            # the context at which the KV reads are 10% (and 50%) of a step's bytes
    context_at_50pct: float


class RooflineRun(Roofline):
    """The roofline as ``specscope roofline`` measures it (``roofline_run.roofline_data``): ``analysis.records.Roofline``
    and what the measurement knows beside it. ``notes`` also holds the cost model's own notes."""
    model: str
    prompt_tokens: int
    weight_bytes_total: int
    machine: Mapping[str, Any]         # machine_probe.probe_machine's record, as measured
    labels: dict[str, str]             # block name -> its label for this model
    verify_tokens: list[int]
    context_prefill: ContextPrefill | None
    attention_at_context: NotRequired[AttentionAtContext]   # where the model's KV bytes per token are known
