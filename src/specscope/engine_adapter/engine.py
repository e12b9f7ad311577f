"""The engine as the protocol sees it: one object built from plain parameters, one call per phase.

``Engine.open(...)`` loads the target (and a draft model when one is asked for), picks the
drafter, checks that every cache can be rolled back exactly (refusing before anything is
measured), and then offers what a run needs: the model's description and compatibility,
the machine, tokenization, plain and speculative decoding, the breakdown, the divergence
check and the peak memory. The protocol never reaches past it into the engine's modules.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any, Mapping, TypedDict, cast

import mlx.core as mx

from specscope.drafter_kinds import TREE_DRAFTERS, TREE_TEXT
from specscope.errors import SpecscopeError
from specscope.events import DivergenceEvent, PrefilledContext

from .decode.sampling import SamplingRecord
from .measure.records import AcceptanceTrace, BreakdownRecord, ClockProbeInfo, ClockReading, ComponentTimes
from .model.records import ModelDescription
from .params import EngineParams


class Environment(TypedDict):
    """The machine and the MLX it runs (``environment``), recorded with every run."""
    mlx: str
    mlx_lm: str
    device: str
    device_name: str
    chip: str
    os: str
    machine: str
    python: str
    cpu_count: int | None


Compatibility = TypedDict("Compatibility", {"class": str, "reasons": list[str], "rollback": dict[str, Any]})


class RunFacts(TypedDict):
    """``Engine.run_facts``: paths, sampling, drafter and compatibility, for the session's config."""
    model_path: str
    draft_model_path: str | None
    sampling: SamplingRecord          # Sampling.to_dict()
    drafter: dict[str, Any]          # the drafter's name and its own description
    compatibility: Compatibility
    clock_probe: ClockProbeInfo
    engine: dict[str, Any]           # whose speculative loop ran (another engine's own description)


def environment() -> Environment:
    try:
        from importlib.metadata import version

        mlx_version, mlx_lm_version = version("mlx"), version("mlx-lm")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        mlx_version, mlx_lm_version = getattr(mx, "__version__", "?"), "?"
    device = str(mx.default_device())
    info = {}
    try:
        if mx.metal.is_available():
            info = {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in mx.metal.device_info().items()}
    except Exception:
        info = {}
    return {
        "mlx": mlx_version,
        "mlx_lm": mlx_lm_version,
        "device": device,
        "device_name": cast(str, info.get("device_name") or ("CPU" if "cpu" in device else device)),  # Metal's is a string
        "chip": _chip(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


def _chip() -> str:
    if platform.system() == "Darwin":
        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5).stdout.strip()
        except Exception:
            return platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Engine:
    def __init__(self, params: EngineParams, target, draft, drafter_name: str, compat: Mapping[str, Any], dflash=None):
        from specscope.engine_adapter.decode.sampling import Sampling

        self.params, self.target, self.draft, self.drafter_name, self.compat = params, target, draft, drafter_name, compat
        self.dflash = dflash  # the DFlash drafter's checked folder (dflash_format.DFlashSpec), when one was given
        self._dflash_model: Any = None  # drafters.dflash.DFlashModel, loaded by the first make_drafter
        self._mtp_head: Any = None  # drafters.mtp_head.MTPHead, likewise
        self.sampling = Sampling(params.temp, params.top_p, params.seed)
        self._held_prompt: Any = None  # cache.context.Stored: the last components call's prompt (``_prompt_entry``)
        self._probe: Any = None  # the ClockProbe, made on first use (its import loads the probe's kernel)
        self.foreign = None  # another engine's loop (engines.seam), when the run names one

    # -- building ----------------------------------------------------------------------------------
    @classmethod
    def open(cls, params: EngineParams, status=lambda message: None) -> "Engine":
        from specscope.model_ref import resolve_model

        from specscope.engine_adapter.model.dflash_format import is_dflash_folder
        from specscope.engine_adapter.measure.doctor import REFUSED, cheap_report
        from specscope.engine_adapter.model.demo_model import default_demo_path
        from specscope.engine_adapter.model.inspect_model import mtp_status
        from specscope.engine_adapter.model.loader import check_same_vocabulary, load_model

        foreign_cls = None
        if params.engine != "specscope":
            from specscope.engine_adapter.engines.registry import engine_class

            foreign_cls = engine_class(params.engine)
            if getattr(foreign_cls, "refusal", None):  # an engine that cannot run here: said before any weights load
                raise SpecscopeError(foreign_cls.refusal)
        if params.demo:
            status("building/loading the demo model")
            # an engine that cannot run the hybrid demo names the demo it runs (mlx-lm's loop: the dense one)
            kind = getattr(foreign_cls, "demo_kind", None) or "hybrid"
            if kind != "hybrid":  # no trained one ships: the synthetic pair (its draft shares its tokenizer)
                params.demo_variant = "random"
            path, label = str(default_demo_path(kind, params.demo_variant)), f"the {kind} demo model"
        else:  # a folder or a cached repo id, resolved the same way as on the command line (never the network)
            ref = resolve_model(str(params.model))  # as resolve_model reads it
            path, label = ref.path, ref.label
        if params.mtp_weights and not Path(params.mtp_weights).expanduser().is_dir():
            params.mtp_weights = resolve_model(params.mtp_weights, what="MTP weights").path
        status(f"loading {label}")
        target = load_model(path, allow_oversize=params.allow_oversize, dtype=params.dtype)
        name = params.drafter
        if name == "auto" and params.demo and getattr(foreign_cls, "demo_kind", None) and \
                getattr(foreign_cls, "needs_draft_model", False):
            name = "draft"  # the demo's own draft model, for an engine that drafts with one
        if name == "auto":
            name = "draft" if params.draft_model else ("mtp" if mtp_status(target.checkpoint)["available"] else "ngram")
            if params.draft_model and is_dflash_folder(resolve_model(params.draft_model, what="draft model").path):
                name = "dflash"
        draft = dflash = None
        if name == "dflash":  # read and checked against the target before anything runs; its weights load with the drafter
            dflash = open_dflash(params, target, label, status)
        if name == "draft" and params.draft_model and is_dflash_folder(resolve_model(params.draft_model, what="draft model").path):
            raise SpecscopeError(f"{params.draft_model} is a DFlash drafter, not a draft model: use --drafter dflash (or auto)")
        if name == "draft":
            draft = load_model(params.draft_model or str(default_demo_path("draft", params.demo_variant)),
                               allow_oversize=params.allow_oversize, dtype=params.dtype)
            check_same_vocabulary(target, draft)
        compat = cheap_report(target.model)  # refuse before measuring anything that cannot be rolled back exactly
        if compat["class"] == REFUSED:
            raise SpecscopeError(f"{compat['reasons'][0]} (see `specscope check`)")
        if params.tree_budget:
            check_tree_run(params, name, target.model)
        engine = cls(params, target, draft, name, compat, dflash=dflash)
        if foreign_cls is not None:  # another engine's loop behind the seam; plain decoding and the rest stay ours
            status(f"opening engine {params.engine}")
            engine.foreign = foreign_cls(target, draft, params)
        return engine

    def make_drafter(self, plain_tokens: list[int] | None = None):
        from specscope.engine_adapter.drafters import drafter as drafters

        p, name = self.params, self.drafter_name
        if name == "ngram":
            return drafters.NgramDrafter()
        if name == "draft":
            return drafters.DraftModelDrafter(self.draft.model, name=self.draft.path.name)
        if name == "oracle":
            from specscope.engine_adapter.drafters.oracle import OracleDrafter

            return OracleDrafter(plain_tokens or [], p=p.oracle_p, draft_ms=p.oracle_draft_ms, seed=p.seed,
                                 vocab_size=self.target.vocab_size)
        if name == "mtp":
            from specscope.engine_adapter.drafters.mtp import load_mtp_drafter, load_mtp_head

            if self._mtp_head is None:  # loaded once per engine; every drafter made from it starts its own cache
                self._mtp_head = load_mtp_head(self.target, p.mtp_weights)
            return load_mtp_drafter(self.target, weights_path=p.mtp_weights, hidden=p.mtp_hidden, head=self._mtp_head)
        if name == "dflash":
            from specscope.engine_adapter.drafters.dflash_loader import drafter_class, load_model

            if self.dflash is None:
                raise SpecscopeError("the DFlash drafter needs --draft-model FOLDER (a DFlash drafter)")
            if self._dflash_model is None:  # loaded once per engine; every drafter made from it resets its own caches
                self._dflash_model = load_model(self.dflash, dtype=self.target.compute_dtype)
            return drafter_class(self.dflash)(self.target, self._dflash_model, self.dflash, self.sampling)
        raise SpecscopeError(f"unknown drafter {name!r}")

    # -- what a session records about the run ------------------------------------------------------
    def describe(self) -> ModelDescription:
        """``inspect_model.describe``'s record, passed through whole."""
        from specscope.engine_adapter.model.inspect_model import describe

        return describe(self.target).copy()  # a copy: a subclass adds its own keys

    def run_facts(self, max_tokens: int) -> RunFacts:
        """Paths, sampling, drafter and compatibility, for the session's config."""
        probe = self.make_drafter([0] * max_tokens)
        c = self.compat
        return {
            "model_path": str(self.target.path),
            "draft_model_path": str(self.draft.path) if self.draft else (str(self.dflash.path) if self.dflash else None),
            "sampling": self.sampling.to_dict(),
            "drafter": {"name": self.drafter_name, **probe.describe()},
            "compatibility": {"class": c["class"], "reasons": c["reasons"],
                              "rollback": {k: c["rollback"][k] for k in ("mode", "methods", "text")}},
            "clock_probe": self.probe_describe(),
            # whose speculative loop ran, and which timings it reports (the rest: "not reported by this engine")
            "engine": self.foreign.describe() if self.foreign is not None else {"name": "specscope"},
        }

    @property
    def context_window(self) -> int:
        return int(self.target.checkpoint.text_config.get("max_position_embeddings") or 0)

    def encode(self, text: str) -> list[int]:
        return self.target.encode(text)

    def decode(self, tokens: list[int]) -> str:
        return self.target.decode(tokens)

    # -- long context (engine_adapter.cache.context) ------------------------------------------------------
    def prepare_context(self, tokens: list[int]) -> PrefilledContext:
        """Prefill a long context once for the target and the drafter's own model or head, and store it: every
        later prefill that starts with these tokens starts from a copy (``context``). A context already stored is
        reused (``reused``: True, with the times of its first prefill). Times in ms, to the sync, on their own."""
        from specscope.engine_adapter.cache import context

        if not tokens:
            return {"tokens": 0, "prefill_ms": 0.0, "draft_prefill_ms": None, "kv_bytes": 0, "reused": False}
        entry = context.lookup(self.target.model, list(tokens))
        if entry is not None and entry.extra.get("facts"):
            first: PrefilledContext = entry.extra["facts"]
            return {**first, "reused": True}
        mtp = self.drafter_name == "mtp"
        if self.drafter_name == "dflash":
            self.make_drafter()  # installs the taps on its target layers: the stored context keeps their outputs
        res = context.prefill_context(self.target.model, list(tokens), with_hidden=mtp or self.drafter_name == "dflash")
        facts: PrefilledContext = {"tokens": len(tokens), "prefill_ms": res["ms"], "reused": False,
                                   "prefill_tok_s": len(tokens) / max(res["ms"], 1e-9) * 1000.0,
                                   "kv_bytes": res["bytes"], "draft_prefill_ms": None, "draft_kv_bytes": None}
        if mtp:
            d = self.make_drafter()
            r = d.prefill_context(list(tokens), res["hidden"])
            facts["draft_prefill_ms"], facts["draft_kv_bytes"] = r["ms"], r["bytes"]
        elif self.drafter_name == "draft":
            r = context.prefill_context(self.draft.model, list(tokens))
            facts["draft_prefill_ms"], facts["draft_kv_bytes"] = r["ms"], r["bytes"]
        stored = context.lookup(self.target.model, list(tokens))
        assert stored is not None  # prefill_context stored it
        stored.extra["facts"] = facts
        return facts

    def forget_contexts(self) -> None:
        from specscope.engine_adapter.cache import context

        context.clear(self.target.model)  # this engine's models only (an MTP head's are in the target's store)
        if self.draft is not None:
            context.clear(self.draft.model)
        self._held_prompt = None

    # -- the measured phases -----------------------------------------------------------------------
    def plain(self, prompt: list[int], max_tokens: int):
        from specscope.engine_adapter.decode.decoding import plain_generate

        return plain_generate(self.target.model, prompt, max_tokens, self.sampling)

    def speculative(self, prompt: list[int], plain_tokens: list[int], max_tokens: int, round_kinds: str | None = None):
        """Speculative decoding; ``round_kinds`` overrides the run's (a paired run asks for each pass's kind)."""
        from specscope.engine_adapter.decode.decoding import speculative_generate

        if self.foreign is not None:  # its own loop, as it runs it (end to end); what it does not time stays None
            from specscope.engine_adapter.engines.seam import checked, watched

            name = self.params.engine
            return checked(watched(self.foreign.speculative(prompt, max_tokens, self.sampling),
                                   self.params.engine_timeout_s, name), name)
        p = self.params
        kinds = round_kinds or p.round_kinds
        if kinds == "paired":  # a paired run's passes are asked for one by one (profiler.run.protocol); alone: the measured one
            kinds = "end_to_end"
        if p.tree_budget > 0:
            from specscope.engine_adapter.decode.tree_decoding import tree_speculative_generate

            return tree_speculative_generate(self.target.model, prompt, self.make_drafter(plain_tokens),
                                             p.num_draft_tokens, p.tree_budget, max_tokens, self.sampling,
                                             round_kinds=kinds)
        return speculative_generate(self.target.model, prompt, self.make_drafter(plain_tokens), p.num_draft_tokens,
                                    max_tokens, self.sampling, round_kinds=kinds)

    def breakdown(self, prompt: list[int], continuation: list[int], reps: int) -> BreakdownRecord:
        from specscope.engine_adapter.measure.breakdown import measure_breakdown

        if self.params.tree_budget > 0:  # the verify a tree round runs: the drafter's own tree after the prompt
            from specscope.engine_adapter.measure.tree_breakdown import measure_tree_breakdown

            return measure_tree_breakdown(self.target.model, self.make_drafter(continuation), prompt, continuation,
                                          self.params.num_draft_tokens, self.params.tree_budget, reps=reps)
        bd = measure_breakdown(self.target.model, prompt, continuation, self.params.num_draft_tokens, reps=reps)
        if self.foreign is not None:  # the other engine's own forwards, timed by block while its loop decodes
            from specscope.engine_adapter.engines.opened import opened_pass

            bd["engine"] = opened_pass(self.foreign, prompt, len(continuation), self.sampling, passes=max(1, reps - 1))
        return bd

    def components(self, prompt: list[int], continuation: list[int], reps: int = 3, at: float = 0.5,
                   points: list[float] | None = None) -> ComponentTimes:
        """The prediction's inputs timed apart from the rounds (``components.measure_components``); a tree run's at
        ``points`` (its rounds' starts: ``tree_components.spread``, the budget what-if at the first) where given."""
        from specscope.engine_adapter.measure.components import measure_components

        drafter = self.make_drafter(continuation)  # first: a DFlash drafter's taps go in before the prompt's prefill
        if self.params.tree_budget > 0:  # a tree run's rounds verify trees: its prediction times a tree round
            from specscope.engine_adapter.measure.tree_components import WHAT_IF_REPS, measure_tree_components, spread

            start = self._prompt_entry(prompt, drafter.needs_hidden)
            made: list[float] = []

            def measure_at(where: float, r: int) -> ComponentTimes:
                made.append(where)  # the budget what-if at the first point only (spread keeps its record)
                return measure_tree_components(self.target.model, lambda: drafter, self.sampling, prompt, continuation,
                                               self.params.num_draft_tokens, self.params.tree_budget, reps=r, at=where,
                                               start=start, what_if_reps=WHAT_IF_REPS if len(made) == 1 else 0)
            return spread(measure_at, reps, points) if points else measure_at(at, reps)
        return measure_components(self.target.model, lambda: drafter, self.sampling, prompt, continuation,
                                  self.params.num_draft_tokens, reps=reps, at=at,
                                  start=self._prompt_entry(prompt, drafter.needs_hidden))

    def _prompt_entry(self, prompt: list[int], with_hidden: bool):
        """The target's cache over ``prompt``, prefilled once and kept apart (``context.prefill_entry``) while calls
        for the same prompt follow (a case's component calls); none where a stored long context starts the prompt
        (``--context``: that copy already spares the prefill) or its cache kinds cannot be kept."""
        from specscope.engine_adapter.cache import context

        tokens = list(prompt)
        held = self._held_prompt
        if held is not None and held.tokens == tokens and (held.extra.get("hidden") is not None or not with_hidden):
            return held
        self._held_prompt = None  # the last case's, released before the next is made
        if len(tokens) < 2 or context.find(self.target.model, tokens) is not None:
            return None
        try:
            self._held_prompt = context.prefill_entry(self.target.model, tokens, with_hidden)
        except SpecscopeError:
            return None
        return self._held_prompt

    def trace(self, prompt: list[int], continuation: list[int]) -> AcceptanceTrace | None:
        """The run's drafter's acceptance trace along ``continuation`` (``acceptance_trace.engine_trace``)."""
        from specscope.engine_adapter.measure.acceptance_trace import engine_trace

        return engine_trace(self, prompt, continuation)

    def divergence(self, case_id: str, prompt: list[int], plain: list[int], spec: list[int]) -> DivergenceEvent | None:
        """The divergence event of a greedy case whose outputs differ (None if they are equal)."""
        from specscope.engine_adapter.decode.divergence import divergence_event

        return divergence_event(self.target.model, case_id, prompt, plain, spec, self.params.num_draft_tokens + 1)

    # -- the clock probe (engine_adapter.measure.clock_probe) --------------------------------------------------
    def _clock_probe(self):
        if self._probe is None:
            from specscope.engine_adapter.measure.clock_probe import ClockProbe

            self._probe = ClockProbe()
        return self._probe

    def probe_describe(self) -> ClockProbeInfo:
        """What the clock probe runs (kernel, device, reps), recorded with the session."""
        return self._clock_probe().describe()

    def probe(self) -> ClockReading:
        """One clock-probe reading on the model's device: ``{"ms": median, "reps_ms": [...]}``."""
        return self._clock_probe().read()

    def peak_memory(self) -> int:
        return int(mx.get_peak_memory())


def check_tree_run(params: EngineParams, drafter: str, model) -> None:
    """Refuse ``--tree-budget`` before anything runs where it cannot be exact or has nothing to grow a tree from."""
    from specscope.engine_adapter.decode.tree_decoding import tree_refusal

    if params.tree_budget < 0:
        raise SpecscopeError(f"--tree-budget must be >= 0 (got {params.tree_budget})")
    if drafter not in TREE_DRAFTERS:  # the one drafter table's (DFlash2 is the dflash drafter with its folder)
        raise SpecscopeError(f"--tree-budget needs a drafter with per-position distributions ({TREE_TEXT}); the "
                             f"{drafter} drafter drafts one chain and keeps no distribution of its steps")
    if params.engine != "specscope":
        raise SpecscopeError(f"--tree-budget runs specscope's own loop, not --engine {params.engine}")
    why = tree_refusal(model)
    if why:
        raise SpecscopeError(f"--tree-budget: {why}")


def open_dflash(params: EngineParams, target, label: str, status=lambda message: None):
    """The DFlash drafter folder of ``params`` (``--draft-model``; with ``--demo`` and none given, the random demo
    drafter for the demo target, built once into the cache), read and checked against ``target``; refuses a misfit,
    DFlash2, or more drafts a round than its block holds."""
    from specscope.model_ref import resolve_model

    from specscope.engine_adapter.model.dflash_format import check_fits, read_dflash

    if params.draft_model:
        path = resolve_model(params.draft_model, what="DFlash drafter").path
    elif params.demo:
        from specscope.engine_adapter.model.dflash_demo import default_dflash_path

        status("building/loading the demo DFlash drafter")
        path = str(default_dflash_path(target))
    else:
        raise SpecscopeError("--drafter dflash needs --draft-model FOLDER (a DFlash drafter folder or cached repo id)")
    spec = read_dflash(path)
    check_fits(spec, target.checkpoint.text_config, label)
    if params.num_draft_tokens > spec.max_draft_tokens:
        raise SpecscopeError(f"--num-draft-tokens {params.num_draft_tokens} is more than {spec.path.name}'s block holds: "
                             f"block size {spec.block_size} drafts at most {spec.max_draft_tokens} a round")
    return spec
