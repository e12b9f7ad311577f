"""The session file's schema: its marker and version (with what each version added), the check that a file is a
session this specscope can read (field-level messages), and the renaming of keys older files spell the old way."""

from __future__ import annotations

import math

from specscope.profiler.session.trace_record import TraceError, check

SCHEMA = "specscope.session"
SCHEMA_VERSION = 2
# What each schema version added (a reader of version N reads every version up to N; older files load as they are,
# and every figure they lack is labelled, never invented):
#   1  the first wave's session (cases, rounds, breakdowns, probe, sensors, roofline, tune).
#   2  the third wave: the prediction's inputs timed apart per case (``components``), paired speculative runs
#      (``round_kinds`` "paired": each round carries its ``pass``), the acceptance trace, long-context settings.
#      Acceptance trace: ``case["trace"]`` (a ``trace`` event: ``A`` per position, ``k_max``, ``drafter``, ``tokens``,
#      ``regime``, ``estimate``, ``draws`` under sampling, ``cost_ms``; see ``profiler.analysis.trace_walk``), and in
#      ``session["tune"]``: ``traces`` per drafter, ``acceptance_source``, each drafter's ``trace`` facts and each
#      row's ``tokens_per_round_k_max_rounds`` (absent from version-1 files: their tune read E(k) off K_max rounds).
#      Tune's confirmation (optional keys, no bump: ``tune["measured_method"]`` "pooled" says a row's
#      ``measured_speedup`` is the pooled rates with a delta-method ``measured_ci95``, ``timed_beside`` that its
#      prediction used timings re-taken beside its runs, ``measured_speedup_median`` the per-repeat ratios' median;
#      a tune without ``measured_method`` took the median of per-repeat ratios and is shown as such; a row's
#      ``agreement["interval_kind"]`` "paired" says its error's interval was paired repeat by repeat, "unpaired" or
#      absent the prediction's interval over the measured one).
#      Long context (optional keys, absent from older files): ``config["context"]``/``context_kind``/``context_file``
#      and ``session["context"]`` (the context's own prefill: tokens, prefill_ms, draft_prefill_ms, kv_bytes) for a
#      run with ``--context``; ``session["sweep"]`` for ``specscope sweep``: contexts, order, passes and per point
#      ``{"context", "prefill", "visits", "reuses", "complete", "session"}`` where ``session`` is that point's own
#      session (cases, rounds, breakdowns, components: the same shape as a run's), so its figures are recomputed.
#      Names (no version bump: ``migrate_names`` renames them on load, files of version 1 or 2 alike, a sweep's point
#      sessions too; new files carry the new names only): a case's content class is ``case["content_class"]``
#      (was ``category``), and a roofline point's per-block costs are ``roofline["curve"][i]["by_block"]`` (was
#      ``categories``). "Category" meant both, and "other" was a value of both.
#      What was measured (no bump): ``session["measure"]`` ("run", "sweep", "roofline", "tune", "bench", …; absent:
#      a run); a run's configuration under ``config``, a measurement's under ``measurement`` (``config`` then {}).
#      A measurement's older file nested both in ``config`` (``{"measure": kind, "measurement": {…}}``), which
#      ``migrate_names`` unnests on load.
SCHEMA_HISTORY = {1: "first and second wave",
                  2: "third wave: components timed apart, paired runs, traces, context; a case's content class is "
                     "content_class and a roofline point's per-block costs by_block (files with the old names, "
                     "category and categories, are renamed on load)"}
class SessionError(ValueError):
    """A session file that cannot be used, with a message that says why."""


def _rename(items, old: str, new: str) -> None:
    """In each dict of ``items``, the key ``old`` becomes ``new`` (a value already under ``new`` wins)."""
    for x in items or []:
        if isinstance(x, dict) and old in x:
            value = x.pop(old)
            x.setdefault(new, value)


def migrate_names(d: dict) -> dict:  # dict: an older file's raw JSON, renamed in place
    """Rename, in place, the keys an older session file spells the old way ("category" meant two things): a
    case's ``category`` (its content class) becomes ``content_class``, a roofline point's ``categories`` (its
    per-block costs) becomes ``by_block``; a sweep's point sessions likewise; a measurement's nested ``config``
    (``{"measure", "measurement"}``) becomes ``measure`` and ``measurement``. The new name wins where a file has
    both. Returns ``d``. The derived figures (summary, case_stats) are recomputed on load, so they are not touched."""
    _rename(d.get("cases"), "category", "content_class")
    cfg = d.get("config")
    if isinstance(cfg, dict) and set(cfg) == {"measure", "measurement"} and isinstance(cfg["measurement"], dict):
        d.setdefault("measure", cfg["measure"])  # a measurement's older run_started: its kind and config nested
        d.setdefault("measurement", cfg["measurement"])
        d["config"] = {}
    roof = d.get("roofline")
    if isinstance(roof, dict):
        _rename(roof.get("curve"), "categories", "by_block")
    sw = d.get("sweep")
    if isinstance(sw, dict):
        for p in sw.get("points") or []:
            if isinstance(p, dict) and isinstance(p.get("session"), dict):
                migrate_names(p["session"])
    return d


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _time_ok(x) -> bool:
    return _finite(x) and x >= 0


def validate(d) -> None:
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise SessionError("not a specscope session (missing schema marker)")
    v = d.get("schema_version")
    if not isinstance(v, int):
        raise SessionError("session has no schema version")
    if v > SCHEMA_VERSION:
        raise SessionError(
            f"session was written by a newer specscope (schema {v}; this one reads up to {SCHEMA_VERSION}); upgrade specscope"
        )
    if v < 1:
        raise SessionError(f"session schema {v} is too old to read")
    if not isinstance(d.get("cases"), list) or not isinstance(d.get("config"), dict):
        raise SessionError("session is missing its cases or config")
    sw = d.get("sweep")
    if sw is not None:
        if not isinstance(sw, dict) or not isinstance(sw.get("points"), list):
            raise SessionError("session has a malformed sweep record")
        for p in sw["points"]:
            if not isinstance(p, dict) or not isinstance(p.get("context"), int) or p["context"] < 0:
                raise SessionError("session has a sweep point without a context size")
            try:
                validate(p.get("session"))
            except SessionError as exc:
                raise SessionError(f"sweep point at context {p['context']}: {exc}") from None
    probe = d.get("probe", [])
    if not isinstance(probe, list) or not all(
            isinstance(p, dict) and isinstance(p.get("ms"), (int, float)) and math.isfinite(p["ms"]) and p["ms"] > 0
            for p in probe):
        raise SessionError("session has a malformed clock-probe series (each reading needs a positive ms)")
    for key in ("sensors", "thermal", "cooldowns"):
        if not isinstance(d.get(key, []), list) or not all(isinstance(x, dict) for x in d.get(key, [])):
            raise SessionError(f"session has a malformed {key} record")
    for c in d["cases"]:
        if not isinstance(c, dict) or "id" not in c or not isinstance(c.get("plain"), dict) or not isinstance(c.get("spec"), dict):
            raise SessionError("session has a malformed case record")
        for side in ("plain", "spec"):
            toks = c[side].get("tokens", [])
            if not isinstance(toks, list) or not all(isinstance(t, int) and t >= 0 for t in toks):
                raise SessionError(f"case {c['id']!r}: {side}.tokens must be a list of token ids")
        if c.get("trace") is not None:
            try:
                check(c["trace"])
            except TraceError as exc:
                raise SessionError(f"case {c['id']!r}: {exc}") from None
        div = c.get("divergence")
        if div is not None and (not isinstance(div, dict) or not isinstance(div.get("position"), int) or div["position"] < 0):
            raise SessionError(f"case {c['id']!r}: malformed divergence record")
        for ms in c["plain"].get("step_ms", []):
            if not isinstance(ms, (int, float)) or ms < 0 or not math.isfinite(ms):
                raise SessionError(f"case {c['id']!r}: step times must be non-negative numbers")
        comp = c.get("components")
        if comp is not None:
            # an in-round draft time is a difference (round less the verify before it): noise can make one negative
            diff = isinstance(comp, dict) and comp.get("draft_method") == "in_round"
            ok = isinstance(comp, dict) and all(
                isinstance(comp.get(key, []), list)
                and all(_time_ok(x) or (diff and key == "draft_ms" and _finite(x)) for x in comp.get(key, []))
                for key in ("verify_ms", "draft_ms", "round_ms", "draft_alone_ms", "bookkeeping_ms", "draft_forward_ms",
                            "draft_walk_ms"))
            rb = comp.get("rollback_ms", {}) if isinstance(comp, dict) else None
            if not ok or not isinstance(rb, dict) or not all(isinstance(v, list) and all(_time_ok(x) for x in v)
                                                              for v in rb.values()):
                raise SessionError(f"case {c['id']!r}: malformed components record (times must be non-negative numbers)")
        for r in c["spec"].get("rounds", []):
            if not isinstance(r, dict):
                raise SessionError(f"case {c['id']!r}: malformed round")
            n, drafted = r.get("accepted"), r.get("drafted")
            if not isinstance(n, int) or not isinstance(drafted, list) or not 0 <= n <= len(drafted):
                raise SessionError(f"case {c['id']!r}: a round accepts {n!r} of {drafted!r} drafts")
            if r.get("kind", "instrumented") not in ("instrumented", "end_to_end"):
                raise SessionError(f"case {c['id']!r}: unknown round kind {r.get('kind')!r}")
            timed = ("draft_ms", "verify_ms", "ms") if r.get("kind", "instrumented") == "instrumented" else ("ms",)
            for key in timed:  # an end-to-end round times only the whole round, by design
                x = r.get(key)
                if not isinstance(x, (int, float)) or x < 0 or not math.isfinite(x):
                    raise SessionError(f"case {c['id']!r}: round {key} must be a non-negative number")
