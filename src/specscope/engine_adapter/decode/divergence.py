"""Why did greedy speculative output leave plain decoding? Measure the logit margin at the divergence.

Under greedy sampling a correct speculative engine emits exactly the plain
tokens, up to kernel rounding: a batched verify forward may sum in another
order than a single-row decode step, and that can only flip the argmax where
two logits are (nearly) tied. So at the first position where the two outputs
differ we recompute the logits, from a fresh cache, two ways:

- **plain step**: a forward over ``prompt + prefix`` whose last token goes
  through a one-row forward (``decoding.prefill`` — the shape of a plain
  decode step); its last row is the distribution plain decoding chose from;
- **verify row**: a forward over ``prompt + prefix[:-j]`` followed by one
  multi-position forward of the last ``j`` tokens, padded to the verify width
  ``k + 1``, so the decisive row is evaluated in a batched forward, as the
  verify did (hybrid models run it with state capture on, as the verify did).

From each we report the top-1 / top-2 tokens and their margin, and the logits
of the plain token and of the speculative token. The plain token's *lead*
over the speculative token decides the verdict: within ``near_tie_tolerance``
in both recomputations it is a near-tie ("rounding"); otherwise the engine
emitted a token the model clearly did not prefer ("engine_fault").

The recomputation cannot rebuild the speculative run's own cache (which was
filled by several verify forwards), only the same prefix through the same
kinds of kernels; the tolerance covers that difference, which is rounding too.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict, cast

import mlx.core as mx

from specscope.events import DivergenceEvent
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.mlx_types import flat, values
from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid



class RowReport(TypedDict):
    """One recomputed row at the divergence (``_row_report``): top-1 / top-2 tokens and logits, their ``margin``, the
    plain and speculative tokens' logits and ``lead`` (plain − speculative; > 0: the plain token is preferred)."""
    top1: int
    top2: int
    top1_logit: float
    top2_logit: float
    margin: float
    plain_logit: float
    spec_logit: float
    lead: float
    row: NotRequired[int]       # the verify row: its row in the batched forward and the forward's width
    width: NotRequired[int]


class Margins(TypedDict):
    """The margins at the first divergence (``divergence_margins``)."""
    plain: RowReport
    verify: RowReport
    dtype: str
    tolerance: float
    verdict: str                # "rounding" or "engine_fault"


# The near-tie tolerance, in logits, by the least precise floating dtype the model computes in:
# a divergence is kernel rounding only if |lead| <= max(ABSOLUTE, RELATIVE * |top-1 logit|).
#
# - float32: 24-bit significands; reordering the sums of one forward moves a logit by ~1e-6..1e-4
#   (errors grow through the layers), so 1e-3 absolute (plus 1e-4 relative for large logits) is far
#   above rounding and far below a real preference (a wrong cache or a broken rollback shifts logits
#   by tenths to units).
# - float16 (11-bit significand, one ulp up to ~1e-3 relative) and bfloat16 (8-bit, one ulp up to
#   ~7.8e-3 relative): the logits themselves are rounded to that grid, so two nearly equal logits can
#   swap by a few ulps of the logit's magnitude: 4 ulps at the top of a binade (2^-8 and 2^-5 relative),
#   with an absolute floor equal to that at |logit| = 8.
NEAR_TIE_TOLERANCE = {
    "float32": (1e-3, 1e-4),
    "float64": (1e-3, 1e-4),
    "float16": (3e-2, 2.0**-8),
    "bfloat16": (2.5e-1, 2.0**-5),
}
_PRECISION_ORDER = ("float64", "float32", "float16", "bfloat16")  # most to least precise


def dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def compute_dtype(model, logits: mx.array) -> str:
    """The least precise floating dtype among the logits and the model's parameters (quantized
    weights are integers; their scales carry the compute dtype)."""
    names = {dtype_name(logits.dtype)}
    names |= {dtype_name(v.dtype) for _, v in flat(model.parameters()) if mx.issubdtype(v.dtype, mx.floating)}
    known = [n for n in _PRECISION_ORDER if n in names]
    return known[-1] if known else "float32"


def near_tie_tolerance(dtype: str, top1_logit: float) -> float:
    absolute, relative = NEAR_TIE_TOLERANCE.get(dtype, NEAR_TIE_TOLERANCE["bfloat16"])
    return max(absolute, relative * abs(top1_logit))


def classify(lead_plain: float | None, lead_verify: float | None, tolerance: float) -> str:
    """"rounding" only if the plain token's lead over the speculative token is a near-tie in every
    recomputation we have; anything else (including no margin at all) is an engine fault."""
    leads = [x for x in (lead_plain, lead_verify) if x is not None]
    if not leads:
        return "engine_fault"
    return "rounding" if all(abs(x) <= tolerance for x in leads) else "engine_fault"


def _row_report(row: mx.array, plain_token: int, spec_token: int) -> RowReport:
    row = row.astype(mx.float32)
    top = mx.argsort(-row)[:2]
    mx.eval(row, top)
    t1, t2 = (int(x) for x in values(top))
    # a float32 row: .item() gives a float
    l1, l2 = cast(float, row[t1].item()), cast(float, row[t2].item())
    lp, ls = cast(float, row[plain_token].item()), cast(float, row[spec_token].item())
    return {
        "top1": t1,
        "top2": t2,
        "top1_logit": l1,
        "top2_logit": l2,
        "margin": l1 - l2,
        "plain_logit": lp,
        "spec_logit": ls,
        "lead": lp - ls,  # > 0: the plain token is preferred
    }


def plain_step_logits(model, prompt: list[int], prefix: list[int]) -> mx.array:
    """The last row of a fresh forward over ``prompt + prefix`` (its last token alone, like a decode step)."""
    cache = make_prompt_cache(model)
    return prefill(model, cache, list(prompt) + list(prefix))


def verify_row_logits(model, prompt: list[int], prefix: list[int], width: int, row: int | None = None,
                      fill: int = 0) -> tuple[mx.array, int, int]:
    """The decisive row of a batched forward of ``width`` positions, from a fresh cache.

    The window ends with the last ``row + 1`` tokens of ``prompt + prefix`` (default: the whole window,
    decisive row last) and is padded with ``fill`` after the decisive row, as later drafts would be
    (causal attention: they do not enter that row). Returns (logits row, row, width used).
    """
    seq = list(prompt) + list(prefix)
    width = max(1, int(width))
    row = width - 1 if row is None else max(0, min(int(row), width - 1))
    j = min(row + 1, len(seq) - 1)  # the cache must hold at least one token before the window
    if j < 1:  # a one-token sequence: there is nothing to batch
        return plain_step_logits(model, prompt, prefix), 0, 1
    row = j - 1
    window = seq[-j:] + [fill] * (width - j)
    if is_hybrid(model):
        install_capture(model)
    cache = make_prompt_cache(model)
    prefill(model, cache, seq[:-j])
    with capturing():  # as the verify forward runs (hybrid models: per-position state capture)
        logits = model(mx.array(window, dtype=mx.uint32)[None], cache=cache)[0]
    return logits[row], row, len(window)


def divergence_margins(model, prompt: list[int], prefix: list[int], plain_token: int, spec_token: int,
                       width: int, row: int | None = None) -> Margins:
    """Margins at the first divergence: ``prefix`` is the common output before it.

    Returns {"plain": row report, "verify": row report, "dtype", "tolerance", "verdict"}; each row
    report has top1/top2 tokens and logits, ``margin`` (top-1 − top-2), the plain and speculative
    tokens' logits and ``lead`` (plain − speculative logit).
    """
    plain_row = plain_step_logits(model, prompt, prefix)
    plain = _row_report(plain_row, plain_token, spec_token)
    verify_logits, vrow, vwidth = verify_row_logits(model, prompt, prefix, width, row, fill=spec_token)
    verify = _row_report(verify_logits, plain_token, spec_token)
    verify["row"], verify["width"] = vrow, vwidth
    dtype = compute_dtype(model, plain_row)
    tol = near_tie_tolerance(dtype, max(abs(plain["top1_logit"]), abs(verify["top1_logit"])))
    return {
        "plain": plain,
        "verify": verify,
        "dtype": dtype,
        "tolerance": tol,
        "verdict": classify(plain["lead"], verify["lead"], tol),
    }


def first_divergence(plain: list[int], spec: list[int]) -> int | None:
    """Index of the first differing token (or of the first token only one list has); None if equal."""
    n = min(len(plain), len(spec))
    for i in range(n):
        if plain[i] != spec[i]:
            return i
    return None if len(plain) == len(spec) else n


def divergence_event(model, case_id: str, prompt: list[int], plain: list[int], spec: list[int],
                     width: int) -> DivergenceEvent | None:
    """The ``divergence`` event for one greedy case, or None when the two outputs are equal."""
    i = first_divergence(plain, spec)
    if i is None:
        return None
    plain_token, spec_token = plain[i] if i < len(plain) else None, spec[i] if i < len(spec) else None
    ev: DivergenceEvent = {"event": "divergence", "case": case_id, "position": i, "plain_token": plain_token,
                           "spec_token": spec_token}
    if plain_token is None or spec_token is None:
        ev["verdict"] = "engine_fault"
        ev["reason"] = f"the outputs have different lengths ({len(plain)} vs {len(spec)} tokens)"
        return ev
    try:
        m = divergence_margins(model, prompt, plain[:i], plain_token, spec_token, width)
    except Exception as exc:  # never lose the divergence itself; without a margin it is never rounding
        ev["verdict"] = "engine_fault"
        ev["reason"] = f"the margin could not be computed ({type(exc).__name__}: {exc})"
        return ev
    p, v = m["plain"], m["verify"]
    ev.update({
        "plain_margin": p["margin"], "verify_margin": v["margin"],
        "plain_lead": p["lead"], "verify_lead": v["lead"],
        "plain_top": [p["top1"], p["top2"]], "verify_top": [v["top1"], v["top2"]],
        "plain_logits": {"plain": p["plain_logit"], "spec": p["spec_logit"]},
        "verify_logits": {"plain": v["plain_logit"], "spec": v["spec_logit"]},
        "verify_row": v["row"], "verify_width": v["width"],
        "dtype": m["dtype"], "tolerance": m["tolerance"], "verdict": m["verdict"],
    })
    return ev
