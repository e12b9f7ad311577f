"""Can specscope profile this model correctly? The doctor behind ``specscope check``.

Cheap part (no forward pass): the rollback plan per layer, sliding windows (``compat_class``), MTP weights.
Full part: rollback exactness at the logit level — for k = 1..4 and every acceptance
count n, a verify over k+1 positions followed by a rollback to n must leave the caches
in a state whose next logits equal those of a fresh cache fed the same accepted tokens.
With a DFlash drafter (``--drafter dflash --draft-model FOLDER``): the drafter is checked against the
target first (refused before anything runs if it does not fit), rollback is checked at k = block size − 1
too, and the drafter's own context after every accepted count 0..B−1 (``dflash_check``).
"""

from __future__ import annotations

import time
from typing import cast

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.model.compat_class import CAVEATS, REFUSED, SUPPORTED, cheap_report, sliding_windows
from specscope.engine_adapter.model.inspect_model import describe, mtp_status
from specscope.engine_adapter.mlx_types import scalar
from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.rollback import VerifyRollback

from .records import DoctorReport, ExactnessCheck, ExactnessRow

# Logit difference, relative to the logits' scale, above which a rollback is wrong. Batched and
# single-row kernels differ by ~1e-6 relative in float32; a stale key or state differs by 1e-1 or more.
EXACT_TOLERANCE = 1e-3
MAX_WINDOW_EXERCISED = 1024


def _logits_after(model, cache, token: int) -> mx.array:
    out = model(mx.array([[token]], dtype=mx.uint32), cache=cache)[0, -1].astype(mx.float32)
    mx.eval(out)
    return out


def _prefill(model, cache, tokens: list[int]) -> mx.array:
    from specscope.engine_adapter.decode.decoding import prefill

    out = prefill(model, cache, tokens)
    mx.eval(out)
    return out


def rollback_exactness(model, prompt: list[int], ks=(1, 2, 3, 4), vocab_size: int | None = None,
                       progress=lambda done, total, what: None) -> ExactnessCheck:
    """For every k and accepted count n: max relative logit error after verify + rollback vs a fresh cache.

    ``progress(done, total, what)`` is called before each of the sum(k + 1) checks and once at the end."""
    total = sum(k + 1 for k in ks)
    if is_hybrid(model):
        install_capture(model)
    vocab = vocab_size or int(_prefill(model, make_prompt_cache(model), prompt[:1]).shape[-1])
    rows: list[ExactnessRow] = []
    t0 = time.perf_counter()
    for k in ks:
        # drafts that differ from each other and from the prompt's end: any tokens exercise the path
        drafts = [(prompt[(7 * j + 3) % len(prompt)] + 11 * (j + 1)) % vocab for j in range(k)]
        for n in range(k + 1):
            progress(len(rows), total, f"rollback exactness: k = {k}, {n} accepted")
            cache = make_prompt_cache(model)
            rb = VerifyRollback(model, cache)
            last = int(scalar(mx.argmax(_prefill(model, cache, prompt))))
            inputs = mx.array([last] + drafts, dtype=mx.uint32)
            rb.before_verify()
            with capturing() as cap:
                mx.eval(model(inputs[None], cache=cache))
            rb.record(cap, k + 1, inputs)
            touched = rb.rollback(n)
            if touched:
                mx.eval(touched)
            probe = drafts[n] if n < k else prompt[0]
            got = _logits_after(model, cache, probe)
            ref_cache = make_prompt_cache(model)
            _prefill(model, ref_cache, prompt + [last] + drafts[:n])
            want = _logits_after(model, ref_cache, probe)
            scale = max(1.0, float(scalar(mx.max(mx.abs(want)))))
            err = float(scalar(mx.max(mx.abs(got - want)))) / scale
            rows.append({"k": k, "accepted": n, "relative_error": err, "exact": err <= EXACT_TOLERANCE})
    progress(total, total, "rollback exactness done")
    return {
        "rows": rows,
        "max_relative_error": max(r["relative_error"] for r in rows),
        "exact": all(r["exact"] for r in rows),
        "tolerance": EXACT_TOLERANCE,
        "seconds": time.perf_counter() - t0,
    }


def check_prompt(prompt: list[int], windows: list[int]) -> tuple[list[int], str | None]:
    """A prompt long enough to wrap every sliding window that is small enough to exercise here."""
    exercised = [w for w in windows if w <= MAX_WINDOW_EXERCISED]
    need = max(exercised) + 8 if exercised else len(prompt)
    out = list(prompt)
    while len(out) < need:
        out += prompt
    note = None
    if any(w > MAX_WINDOW_EXERCISED for w in windows):
        note = (f"windows above {MAX_WINDOW_EXERCISED} tokens were not wrapped by the check prompt "
                "(the same code path is checked on small windows in specscope's tests)")
    return out[: max(need, len(prompt))], note


def full_report(lm, ks=(1, 2, 3, 4), mtp: bool = True, progress=lambda done, total, what: None,
                dflash: str | None = None) -> DoctorReport:
    """Everything ``specscope check`` prints, for a LoadedModel. ``progress`` as for ``rollback_exactness``.
    ``dflash``: a DFlash drafter folder to check with it (refused with a SpecscopeError if it does not fit)."""
    drafter = None
    if dflash:
        from specscope.engine_adapter.drafters.dflash_loader import load_dflash_drafter

        drafter = load_dflash_drafter(lm, dflash)  # refuses a misfit before anything runs
        ks = tuple(sorted(set(ks) | {drafter.spec.max_draft_tokens}))
    rep = cast(DoctorReport, cheap_report(lm.model))  # its "mtp" and "model" are set below
    desc = describe(lm)
    prompt = lm.encode("Explain why a verification pass over several tokens can cost as much as decoding.") or [1, 2, 3]
    if rep["class"] != REFUSED:
        long_prompt, note = check_prompt(prompt, rep["sliding_windows"])
        exact = rollback_exactness(lm.model, long_prompt, ks=ks, vocab_size=lm.vocab_size or None, progress=progress)
        rep["exactness"] = exact
        if note:
            rep["reasons"].append(note)
        if not exact["exact"]:
            bad = [r for r in exact["rows"] if not r["exact"]][0]
            rep["class"] = REFUSED
            rep["reasons"].insert(0, f"rollback is not exact: after a verify of k={bad['k']} and {bad['accepted']} "
                                     f"accepted, logits differ by {bad['relative_error']:.3g} (relative) from a fresh cache")
        _check_tree(lm, prompt, rep, progress)
        if drafter is not None:
            from specscope.engine_adapter.measure.dflash_check import drafter_context_exactness

            d = drafter  # DFlash's or DFlash2's drafter (``drafter_class``): fresh ones of the same class
            ctx = drafter_context_exactness(lm.model, lambda: type(d)(lm, d.model, d.spec), prompt,
                                            d.spec.max_draft_tokens, EXACT_TOLERANCE, progress=progress)
            rep["dflash"] = {**d.spec.describe(), "context": ctx}
            if not ctx["exact"]:
                off = [r for r in ctx["rows"] if not r["exact"] or r["context_positions"] != r["expected_positions"]][0]
                rep["class"] = REFUSED
                rep["reasons"].insert(0, f"the DFlash drafter's context is not exact after {off['accepted']} accepted: "
                                         f"draft logits differ by {off['relative_error']:.3g} (relative) from a fresh drafter's")
    rep["mtp"] = {**mtp_status(lm.checkpoint), "loadable": None}
    if mtp and rep["mtp"]["available"]:
        progress(None, None, "loading the MTP head")
        try:
            from specscope.engine_adapter.drafters.mtp import load_mtp_drafter

            head = load_mtp_drafter(lm).head
            rep["mtp"]["loadable"] = True
        except Exception as exc:  # report, don't crash: the doctor's job is to say what is wrong
            rep["mtp"]["loadable"] = False
            rep["mtp"]["error"] = f"{type(exc).__name__}: {exc}"
            if rep["class"] == SUPPORTED:
                rep["class"] = CAVEATS
            rep["reasons"].append(f"MTP weights present but the head does not load: {rep['mtp']['error']}")
        if rep["mtp"]["loadable"] and rep.get("tree"):
            _check_mtp_tree(lm, head, prompt, rep, progress)
    rep["model"] = {k: desc.get(k) for k in ("name", "revision", "path", "model_type", "architecture", "layers",
                                             "memory_estimate_bytes", "system_memory_bytes")}
    return rep


def _check_tree(lm, prompt: list[int], rep: DoctorReport, progress) -> None:
    """Tree verification (``--tree-budget``) where the model takes trees (``tree_check``); else why it takes none."""
    from mlx_lm.models.cache import make_prompt_cache

    from specscope.engine_adapter.cache.tree_verify import refusal
    from specscope.engine_adapter.measure.tree_check import tree_exactness

    why = refusal(lm.model, make_prompt_cache(lm.model))
    if why is not None:
        rep["tree_refused"] = why
        return
    progress(None, None, "tree verification: a tree with rejected branches against plain forwards")
    t = tree_exactness(lm.model, prompt, lm.vocab_size or None, EXACT_TOLERANCE)
    rep["tree"] = t
    if not t["exact"]:
        if rep["class"] == SUPPORTED:
            rep["class"] = CAVEATS
        rep["reasons"].append(f"tree verification is not exact (relative logit error {t['max_relative_error']:.3g}, "
                              f"{t['kept_relative_error']:.3g} after keeping a path): do not use --tree-budget")
    if t["control_caught"] is False:
        rep["reasons"].append("the tree check's negative control was not caught: its comparison has no power here")


def _check_mtp_tree(lm, head, prompt: list[int], rep: DoctorReport, progress) -> None:
    """The MTP head's trees (``--tree-budget`` with ``--drafter mtp``): its state after a path off its chain."""
    from specscope.engine_adapter.drafters.mtp import MTPDrafter
    from specscope.engine_adapter.measure.tree_check import drafter_tree_state

    progress(None, None, "the MTP head's trees: its state after a path off its chain against a fresh head's")
    t = drafter_tree_state(lm.model, lambda: MTPDrafter(lm, head), prompt, EXACT_TOLERANCE)
    rep["mtp"]["tree"] = t
    if not t["exact"]:
        if rep["class"] == SUPPORTED:
            rep["class"] = CAVEATS
        rep["reasons"].append(f"the MTP head is not left on the accepted path after a tree round (probability error "
                              f"{t['max_probability_error']:.3g}): do not use --tree-budget with --drafter mtp")


def format_report(rep: DoctorReport) -> str:
    m = rep["model"]
    lines = [f"{m['name']}  ({m['architecture']}, model_type {m['model_type']}, {m['layers']} layers)",
             f"  compatibility     {rep['class']}"]
    for r in rep["reasons"]:
        lines.append(f"    - {r}")
    lines.append(f"  rollback          {rep['rollback']['text']}")
    ex = rep.get("exactness")
    if ex:
        n = len(ex["rows"])
        ks = sorted({r["k"] for r in ex["rows"]})
        lines.append(f"  rollback check    {'exact' if ex['exact'] else 'NOT EXACT'}: {n} verify/rollback cases "
                     f"(k = {', '.join(map(str, ks))}, every accepted count), max relative logit error "
                     f"{ex['max_relative_error']:.2g} (tolerance {ex['tolerance']:g}), {ex['seconds']:.1f} s")
    if rep.get("tree"):
        from specscope.engine_adapter.measure.tree_check import describe_check

        lines.append(f"  tree verify       {describe_check(rep['tree'])}")
    elif rep.get("tree_refused"):
        lines.append(f"  tree verify       refused: {rep['tree_refused']}")
    if (rep.get("mtp") or {}).get("tree"):
        from specscope.engine_adapter.measure.tree_check import describe_drafter_check

        lines.append(f"  MTP tree state    {describe_drafter_check(rep['mtp']['tree'])}")
    if rep["sliding_windows"]:
        lines.append(f"  sliding windows   {', '.join(map(str, rep['sliding_windows']))} tokens")
    df = rep.get("dflash")
    if df:
        c = df["context"]
        label = "DFlash2 drafter" if df.get("kind") == "dflash2" else "DFlash drafter"
        lines.append(f"  {label:<18}{df['path']}: block {df['block_size']}, target layers "
                     f"{', '.join(map(str, df['target_layer_ids']))}; its context after 0..{c['k']} accepted "
                     f"{'exact' if c['exact'] else 'NOT EXACT'} (max relative error {c['max_relative_error']:.2g}, "
                     f"{c['seconds']:.1f} s)")
    mtp = rep.get("mtp") or {}
    if mtp:
        state = "no" if not mtp.get("available") else ("yes, loads" if mtp.get("loadable") else
                                                       ("yes, NOT loadable" if mtp.get("loadable") is False else "yes"))
        lines.append(f"  MTP head          {state}")
    if m.get("memory_estimate_bytes"):
        gib = 2**30
        sysmem = m.get("system_memory_bytes")
        lines.append(f"  memory estimate   {m['memory_estimate_bytes'] / gib:.2f} GiB"
                     + (f" of {sysmem / gib:.0f} GiB" if sysmem else ""))
    return "\n".join(lines)


__all__ = ["CAVEATS", "REFUSED", "SUPPORTED", "check_prompt", "cheap_report", "format_report", "full_report",
           "rollback_exactness", "sliding_windows"]
