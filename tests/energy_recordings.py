"""Sensor recordings of a run, simulated from a known power trace: what ``run.sensors.MacmonSource`` would record on a
Mac whose energy counters are live, batched or stale. No Mac is at hand, so these stand in for captures; each knows
its truth (the energy every mode really spent), which the tests hold the analysis against.

The timeline follows the protocol: per case and repeat, plain and speculative in ABBA order; a speculative phase of a
paired run makes an end-to-end ("measured") and an instrumented ("ledger") pass, each in its own window; timing apart
and the probe run between windows. Each window records what macmon-lib's means give: the counter's rise over it (mean
power × seconds) per domain, and the counter's reading at its end.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass, field


@dataclass
class Counter:
    """How a domain's counter reports the energy spent: "live" (as it is spent), "batched" (the energy since the last
    update, every ``period`` s from ``phase``) or "stale" (never moves)."""
    kind: str = "live"
    period: float = 2.0
    phase: float = 0.3

    def reading(self, true_j, t: float) -> float:
        if self.kind == "live":
            return true_j(t)
        if self.kind == "stale":
            return 0.0
        if t < self.phase:
            return 0.0
        return true_j(self.phase + math.floor((t - self.phase) / self.period) * self.period)


@dataclass
class Truth:
    """What each mode really spent (package and GPU joules, tokens, accepted drafts) over its measured passes, and the
    whole run's span."""
    joules: dict = field(default_factory=lambda: {("plain", "package"): 0.0, ("spec", "package"): 0.0,
                                                  ("plain", "gpu"): 0.0, ("spec", "gpu"): 0.0})
    tokens: dict = field(default_factory=lambda: {"plain": 0, "spec": 0})
    accepted: int = 0
    span_j: float = 0.0
    span_s: float = 0.0

    def per_token(self, mode: str, domain: str = "package") -> float:
        return self.joules[(mode, domain)] / self.tokens[mode]

    def ratio(self, domain: str = "package") -> float:
        return self.per_token("spec", domain) / self.per_token("plain", domain)


def record(cases: int = 6, repeats: int = 3, package: Counter | None = None, gpu: Counter | None = None,
           plain_w: float = 20.0, spec_w: float = 26.0, between_w: float = 14.0, other_w: float = 4.0,
           plain_s: float = 1.0, spec_s: float = 0.6, tokens: int = 64, accepted: int = 40, case_spread: float = 0.0,
           noise: float = 0.0, seed: int = 0, case_ids: list[str] | None = None) -> tuple[list[dict], Truth]:
    """(the run's sensor windows as the session keeps them, the truth). GPU power is each segment's; the package adds
    ``other_w`` (CPU, memory). ``case_spread``: each case's power scale varies by this share (cases differ);
    ``noise``: each pass's by this share; ``case_ids``: the cases' names (default c0, c1, …)."""
    package, gpu = package or Counter(), gpu or Counter()
    rng = random.Random(seed)
    segments: list[tuple[float, float, float]] = []   # (start, end, GPU watts)
    t = 0.0

    def spend(seconds: float, watts: float) -> tuple[float, float]:
        nonlocal t
        segments.append((t, t + seconds, watts))
        t += seconds
        return t - seconds, t

    def true_j(domain: str):
        extra = other_w if domain == "package" else 0.0
        starts = [a for a, _, _ in segments]
        before = list(itertools.accumulate(((b - a) * (w + extra) for a, b, w in segments), initial=0.0))

        def at(x: float) -> float:   # the energy spent up to time x
            i = bisect.bisect_right(starts, x) - 1
            if i < 0:
                return 0.0
            a, b, w = segments[i]
            return before[i] + (min(x, b) - a) * (w + extra)
        return at

    truth, passes = Truth(), []
    names = case_ids or [f"c{c}" for c in range(cases)]
    for c in range(len(names) if case_ids else cases):
        scale = 1.0 + case_spread * rng.uniform(-1, 1)
        for r in range(repeats):
            for phase in (("plain", "spec") if r % 2 == 0 else ("spec", "plain")):
                spend(0.2, between_w)                                    # the probe, timing apart
                kinds = [("plain", None)] if phase == "plain" else [("spec", "measured"), ("spec", "ledger")]
                for mode, pass_name in kinds:
                    watts = (plain_w if mode == "plain" else spec_w) * scale * (1.0 + noise * rng.gauss(0, 1))
                    seconds = plain_s if mode == "plain" else spec_s * (1.3 if pass_name == "ledger" else 1.0)
                    a, b = spend(seconds, watts)
                    passes.append({"case": names[c], "mode": mode, "pass": pass_name, "repeat": r, "a": a, "b": b,
                                   "watts": watts})
                    if pass_name != "ledger":
                        truth.joules[(mode, "gpu")] += watts * seconds
                        truth.joules[(mode, "package")] += (watts + other_w) * seconds
                        truth.tokens[mode] += tokens
                        truth.accepted += accepted if mode == "spec" else 0
                    spend(0.05, between_w)
    funcs = {"package": true_j("package"), "gpu": true_j("gpu")}
    counters = {"package": package, "gpu": gpu}
    windows = []
    for p in passes:
        rise = {d: counters[d].reading(funcs[d], p["b"]) - counters[d].reading(funcs[d], p["a"]) for d in counters}
        seconds = p["b"] - p["a"]
        w = {"case": p["case"], "mode": p["mode"], "repeat": p["repeat"], "tokens": tokens, "t": p["b"],
             "seconds": seconds, "gpu_freq_mhz": 1296.0, "gpu_power_w": rise["gpu"] / seconds,
             "package_power_w": rise["package"] / seconds, "gpu_temp_c": 60.0, "joules": rise["package"],
             "energy_j": rise, "counter_j": {d: counters[d].reading(funcs[d], p["b"]) for d in counters},
             "source": "recorded"}
        if p["pass"]:
            w["pass"] = p["pass"]
        if p["mode"] == "spec":
            w["accepted"] = accepted
        windows.append(w)
    truth.span_s = passes[-1]["b"] - passes[0]["a"]
    truth.span_j = funcs["package"](passes[-1]["b"]) - funcs["package"](passes[0]["a"])
    return windows, truth


def per_window_mean(windows: list[dict], mode: str) -> float | None:
    """The figure specscope printed before it checked its counters: Σ window joules (the package's mean power × the
    window) ÷ Σ tokens over the mode's windows — the negative control."""
    ws = [w for w in windows if w["mode"] == mode and w.get("pass") in (None, "measured")]
    tokens = sum(w["tokens"] for w in ws)
    return math.fsum(w["joules"] for w in ws) / tokens if tokens else None


def with_windows(session, windows: list[dict]):
    """``session`` (a ``Session``) as if its run had read these windows on a Mac: its sensor windows replaced, its
    environment's sensors available. Returns the session."""
    session.data["sensors"] = windows
    env = session.data.setdefault("environment", {})
    env["sensors"] = {"source": "recorded", "available": True, "reason": "", "thermal": "pmset -g therm"}
    return session
