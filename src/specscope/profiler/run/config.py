"""What a run is asked to do: plain settings, checked, serialisable (no MLX, no Qt).

The app builds one from its setup panel, the CLI from its flags; the worker process
receives it as JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from specscope.drafter_kinds import DRAFTER_NAMES, TREE_DRAFTERS, TREE_TEXT
from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError

DRAFTERS = ("auto", *DRAFTER_NAMES)
# names a run takes for another drafter's setting: ``dflash2`` is the DFlash drafter with a DFlash2 folder (the
# demo's own where none is given), so every surface that speaks DFlash speaks it
DRAFTER_ALIASES = ("dflash2",)


def resolve_drafter_alias(drafter: str, draft_model: str | None, demo: bool) -> tuple[str, str | None]:
    """(drafter, draft model) for a drafter name that may be an alias (``DRAFTER_ALIASES``); others pass through.
    ``dflash2``: ``dflash`` with the given DFlash2 folder, or with ``demo`` the shipped trained one; refused with the
    reason where the folder is another kind or there is none."""
    if drafter != "dflash2":
        return drafter, draft_model
    if draft_model:
        from specscope.engine_adapter.model.dflash_format import is_dflash_folder, read_dflash

        if Path(draft_model).expanduser().is_dir() and is_dflash_folder(draft_model):
            if read_dflash(draft_model).variant != "dflash2":
                raise SpecscopeError(f"--drafter dflash2: {draft_model} is a DFlash drafter, not DFlash2 (its "
                                     "architecture says so); use --drafter dflash")
        return "dflash", draft_model  # a repo id or anything else: the engine reads and checks it
    if not demo:
        raise SpecscopeError("--drafter dflash2 needs --draft-model FOLDER (a DFlash2 drafter), or --demo")
    from specscope.engine_adapter.model import shipped as demo_assets  # no MLX: the app's setup calls this

    shipped = demo_assets.trained_demo_path("dflash2")
    if shipped is None:
        raise SpecscopeError("this install ships no trained DFlash2 demo drafter; give one with --draft-model FOLDER")
    return "dflash", str(shipped)
MAX_K = 16
ROUND_KINDS = ("paired", "alternate", "instrumented", "end_to_end")
BACKENDS = ("ring", "jaccl", "any")  # of a distributed run (profiler.run.launch)
MAX_LOCAL_RANKS = 16


@dataclass
class RunConfig(EngineParams):
    """A run: what the engine loads and how it decodes (``EngineParams``: model, drafter, k, sampling, round kinds,
    … with their defaults, defined once there), and what the protocol does with it (the fields below)."""

    # the default protocol: two repeats of 64 tokens a case (ABBA), so four component calls a case, each beside a
    # pass half as long as one repeat of 128 would be; on a 2-core VM whose speed wanders by ±6% a second that
    # narrowed the prediction error's interval (±1.9-3.2% against ±2.7-3.9%) at about the same time
    max_tokens: int = 64
    suite: str | None = None
    cases: int | None = None
    warmup: int = 1
    repeats: int = 2
    breakdown: bool = True
    breakdown_reps: int = 3
    # the prediction's inputs timed apart per case (engine_adapter.measure.components): half of them beside the
    # speculative pass before it, half after, each (k+1) rounds. 12 (18 rounds a call at k = 2) since a call prefills
    # its prompt and the drafter's context once (docs/figures.md, "Checked again on 2026-12-03, night"): a narrower run for the
    # call time that 3 took before
    component_reps: int = 12
    # the acceptance trace A(s) of the run's drafter along each case's plain output (engine_adapter.measure.acceptance_trace):
    # E(k) for every k from one run; off by default (it costs about one speculative run per case with MTP)
    trace: bool = False
    # the protocol against drift (see profiler.run.protocol): the first N cases are measured but left out of
    # the summary; --cooldown waits before each case until the clock probe is back within 2% of its best
    discard_first: int = 0
    cooldown: bool = False
    cooldown_timeout_s: float = 120.0
    # distributed runs (profiler.run.launch): N ranks on this machine, one rank per host, or an mlx.launch hostfile;
    # none of them set: a run in one process on this machine
    ranks: int | None = None
    hosts: list[str] | None = None
    backend: str = "ring"
    hostfile: str | None = None
    # long context (profiler.run.context): N tokens of a long document before every case's prompt, prefilled once and
    # copied per case and mode; ``context_kind`` one of the shipped documents, or ``context_file`` the user's own text.
    # ``sweep``: the protocol at each of these contexts (profiler.analysis.sweep), visited ``sweep_passes`` times in mirrored order
    context: int = 0
    context_kind: str = "mixed"
    context_file: str | None = None
    sweep: list[int] | None = None
    sweep_passes: int = 2
    # a failed pre-flight (engine_adapter.preflight) stops the run before it measures anything unless this is set
    ignore_preflight: bool = False
    # "decided": the cases one at a time, looking at the verdict after each (from the 8th on, the fewest units a
    # verdict takes), stopping once it is decided at the sequential level (profiler.analysis.sequential); at most
    # --cases, or UNTIL_DECIDED_CASES (the suite cycled)
    until: str | None = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:  # dict: the dataclass's fields by name (asdict), the session's config
        return asdict(self)

    def engine_params(self) -> EngineParams:
        """The engine's share of this run, as the engine takes it."""
        return EngineParams(**{f.name: getattr(self, f.name) for f in fields(EngineParams)})

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise SpecscopeError(f"unknown run settings: {', '.join(sorted(unknown))}")
        return cls(**d)

    def _dflash_draft(self) -> bool:
        """``draft_model`` is a DFlash drafter folder (read from its config.json; no MLX)."""
        from specscope.engine_adapter.model.dflash_format import is_dflash_folder

        return bool(self.draft_model) and is_dflash_folder(str(self.draft_model))

    def validate(self) -> None:
        if not self.demo and not self.model:
            raise SpecscopeError("no model: pass --model PATH or --demo")
        if self.engine != "specscope":
            from specscope.engine_adapter.engines.registry import available

            if self.engine not in available():
                names = ", ".join(["specscope", *sorted(available())])
                raise SpecscopeError(f"unknown engine {self.engine!r}; engines here: {names} (a plugin registers "
                                     "under the entry-point group 'specscope.engines')")
            if self.engine_timeout_s <= 0:
                raise SpecscopeError(f"--engine-timeout must be positive (got {self.engine_timeout_s:g})")
            if self.round_kinds == "paired":  # another engine runs its own loop: one end-to-end pass, no ledger pass
                self.round_kinds = "end_to_end"
            elif self.round_kinds != "end_to_end":
                raise SpecscopeError(f"--engine {self.engine} runs its own loop end to end: --round-kinds "
                                     f"{self.round_kinds} needs specscope's instrumented rounds")
            if self.sweep or self.ranks is not None or self.hosts or self.hostfile:
                raise SpecscopeError(f"--engine {self.engine} is for a single run on this machine (not a sweep or "
                                     "several ranks)")
        if self.drafter not in DRAFTERS:
            raise SpecscopeError(f"unknown drafter {self.drafter!r}; choose one of {', '.join(DRAFTERS)}")
        if not 1 <= self.num_draft_tokens <= MAX_K:
            raise SpecscopeError(f"--num-draft-tokens must be between 1 and {MAX_K} (got {self.num_draft_tokens})")
        if self.tree_budget < 0:
            raise SpecscopeError(f"--tree-budget must be >= 0 (got {self.tree_budget})")
        if self.tree_budget:
            self._validate_tree()
        if self.max_tokens < 2:
            raise SpecscopeError(f"--max-tokens must be at least 2 (got {self.max_tokens})")
        if self.temp < 0:
            raise SpecscopeError("--temp must be >= 0")
        if not 0 < self.top_p <= 1:
            raise SpecscopeError("--top-p must be in (0, 1]")
        if self.warmup < 0 or self.repeats < 1:
            raise SpecscopeError("--warmup must be >= 0 and --repeats >= 1")
        if not 0 <= self.oracle_p <= 1:
            raise SpecscopeError("--oracle-p must be between 0 and 1")
        if self.oracle_draft_ms < 0:
            raise SpecscopeError("--oracle-draft-ms must be >= 0")
        if self.drafter == "draft" and not self.draft_model and not self.demo:
            raise SpecscopeError("--drafter draft needs --draft-model PATH")
        if self.drafter == "dflash" and not self.draft_model and not self.demo:
            raise SpecscopeError("--drafter dflash needs --draft-model FOLDER (a DFlash drafter)")
        if (self.ranks is not None or self.hosts or self.hostfile) and (self.drafter == "dflash" or self._dflash_draft()):
            raise SpecscopeError("--drafter dflash is not supported with several ranks yet")
        if self.until not in (None, "decided"):
            raise SpecscopeError(f"--until takes 'decided' (got {self.until!r})")
        if self.until and (self.sweep or self.ranks is not None or self.hosts or self.hostfile):
            raise SpecscopeError("--until decided is for a single run on this machine (not a sweep or several ranks)")
        if self.round_kinds not in ROUND_KINDS:
            raise SpecscopeError(f"--round-kinds must be one of {', '.join(ROUND_KINDS)}")
        if self.component_reps < 1:
            raise SpecscopeError("--component-reps must be >= 1")
        if self.discard_first < 0:
            raise SpecscopeError("--discard-first must be >= 0")
        if self.cooldown_timeout_s <= 0:
            raise SpecscopeError("--cooldown-timeout must be > 0 seconds")
        if self.mtp_hidden not in ("post-norm", "pre-norm"):
            raise SpecscopeError("--mtp-hidden must be post-norm or pre-norm")
        from specscope.profiler.run.context import KINDS

        if self.context < 0:
            raise SpecscopeError(f"--context must be >= 0 tokens (got {self.context})")
        if self.context_kind not in KINDS:
            raise SpecscopeError(f"--context-kind must be one of {', '.join(KINDS)} (got {self.context_kind!r})")
        if self.sweep is not None:
            if not self.sweep or any(not isinstance(n, int) or n < 0 for n in self.sweep) or len(set(self.sweep)) != len(self.sweep):
                raise SpecscopeError("a sweep needs distinct context sizes >= 0, e.g. --context 0,1k,4k,16k")
            if self.sweep_passes < 1:
                raise SpecscopeError("--passes must be >= 1")
        if (self.context or self.sweep) and (self.ranks is not None or self.hosts or self.hostfile):
            raise SpecscopeError("--context is not supported with several ranks yet")
        if self.ranks is not None or self.hosts or self.hostfile:
            (DistSpec.from_config(self) or DistSpec(ranks=self.ranks, backend=self.backend)).validate()


    def _validate_tree(self) -> None:
        """``--tree-budget N``: a drafter with per-position distributions, specscope's own loop, one machine."""
        if self.drafter in DRAFTER_NAMES and self.drafter not in TREE_DRAFTERS:
            raise SpecscopeError(f"--tree-budget needs a drafter with per-position distributions ({TREE_TEXT}); "
                                 f"the {self.drafter} drafter drafts one chain and keeps no distribution of its steps")
        if self.engine != "specscope":
            raise SpecscopeError(f"--tree-budget runs specscope's own loop, not --engine {self.engine}")
        if self.ranks is not None or self.hosts or self.hostfile:
            raise SpecscopeError("--tree-budget is not supported with several ranks yet")


@dataclass
class DistSpec:
    """Where the ranks run: ``ranks`` local processes, or one per host in ``hosts`` (or a ``hostfile``)."""

    ranks: int | None = None
    hosts: list[str] | None = None
    backend: str = "ring"
    hostfile: str | None = None
    python: str | None = None  # the interpreter on every host (default: this one, at the same path)
    port: int | None = None  # ring: first port (default: free ports for local ranks, 32323 across hosts)

    @classmethod
    def from_config(cls, cfg: RunConfig, **overrides) -> "DistSpec | None":
        """The spec a RunConfig asks for (its ``ranks`` / ``hosts`` / ``backend`` / ``hostfile`` fields), or None."""
        d: dict[str, Any] = {k: getattr(cfg, k, None) for k in ("ranks", "hosts", "backend", "hostfile")}
        d = {k: v for k, v in d.items() if v not in (None, "", [])}
        d.update({k: v for k, v in overrides.items() if v is not None})
        if isinstance(d.get("hosts"), str):
            d["hosts"] = parse_hosts(d["hosts"])
        if not (d.get("ranks") or d.get("hosts") or d.get("hostfile")):
            return None
        return cls(**d)

    def validate(self) -> None:
        if self.backend not in BACKENDS:
            raise SpecscopeError(f"--backend must be one of {', '.join(BACKENDS)} (got {self.backend!r})")
        given = [x for x in (self.ranks, self.hosts, self.hostfile) if x not in (None, "", [])]
        if len(given) != 1:
            raise SpecscopeError("a distributed run takes one of --ranks N, --hosts H1,H2 or --hostfile FILE")
        if self.ranks is not None and not 1 <= self.ranks <= MAX_LOCAL_RANKS:
            raise SpecscopeError(f"--ranks must be between 1 and {MAX_LOCAL_RANKS} (got {self.ranks})")
        if self.hosts is not None and (len(self.hosts) < 1 or any(not str(h).strip() for h in self.hosts)):
            raise SpecscopeError("--hosts needs at least one host, comma-separated, with no empty names "
                                 f"(got {','.join(map(str, self.hosts))!r})")
        if self.backend == "jaccl" and not self.hostfile:
            raise SpecscopeError(
                "JACCL needs each host's RDMA devices: write a hostfile with `mlx.distributed_config --backend jaccl "
                "--over thunderbolt --hosts H1,H2 --output-hostfile hosts.json` and pass --hostfile hosts.json"
            )
        if self.hostfile and not Path(self.hostfile).expanduser().is_file():
            raise SpecscopeError(f"hostfile {self.hostfile} does not exist")

    def rank_hosts(self) -> list[str]:
        """The host each rank runs on, rank order (for messages)."""
        if self.ranks:
            return ["this machine"] * self.ranks
        if self.hosts:
            return list(self.hosts)
        if self.hostfile is None:
            raise SpecscopeError(f"hostfile {self.hostfile} is not a hostfile mlx.launch can read (JSON with hosts)")
        try:
            data = json.loads(Path(self.hostfile).expanduser().read_text(encoding="utf-8"))
            hosts = data["hosts"] if isinstance(data, dict) else data
            return [h.get("ssh", "?") for h in hosts]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise SpecscopeError(f"hostfile {self.hostfile} is not a hostfile mlx.launch can read (JSON with hosts)") from None

    @property
    def size(self) -> int:
        return len(self.rank_hosts())


def parse_hosts(text: str) -> list[str]:
    hosts = [h.strip() for h in text.split(",")]
    if not hosts or any(not h for h in hosts):
        raise SpecscopeError(f"--hosts takes a comma-separated list of hosts (got {text!r})")
    return hosts
