"""The one chip table: Apple M1–M5 by GPU bin (nominal figures) and by GPU generation (what the generation's GPU runs
natively, and whether MLX's small-row quantized kernel serves a wide verify on it), with the public measurements of
what a wide verify costs relative to one decode step, each with its source.

No MLX here: the app (which never imports MLX) reads the wide-verify facts for the Verify cost page and the report;
``machine_probe`` reads the nominal figures, ``preflight_mac`` both.
"""

from __future__ import annotations

import re
from typing import Final, TypedDict

# Nominal figures per chip and GPU bin: (GPU cores, unified-memory bandwidth GB/s, GPU FP32 TFLOP/s), one row per bin.
# The one table every nominal figure comes from (the roofline, the Verify cost page and the reports read it through
# ``nominal``). A chip sold with two GPU bins that differ in bandwidth (M3 Max, M4 Max) has no nominal bandwidth until
# the GPU core count is known. None where no source gave a figure. Achieved bandwidth is lower than any of these
# (about 318 GB/s measured on an M1 Max, 78% of its 409.6: the roofline divides by the *measured* figure).
# Bandwidth is the memory interface: bus width x transfer rate, which is where Apple's rounded marketing numbers come
# from (Apple says 200 for 204.8, 400 for 409.6, 800 for 819.2, 100 for 102.4, 150 for 153.6, 300 for 307.2, 410 for
# 409.6). Sources:
#  - M1 68.25 GB/s (LPDDR4X-4266, 128-bit; Wikipedia "Apple M1"); M1 Pro 204.8 (LPDDR5-6400, 256-bit), M1 Max 409.6
#    (512-bit), M1 Ultra 819.2 (1024-bit): Apple's M1 Pro/Max/Ultra announcements (200/400/800 GB/s, rounded);
#    409.6 GB/s and 32 GPU cores for an M1 Max as philipturner/applegpuinfo prints it (github.com/philipturner/
#    applegpuinfo/issues/2); M1 Max bins 24/32 cores, M1 Pro 14/16, M1 7/8 (Apple's tech specs).
#  - M2 102.4 (LPDDR5-6400, 128-bit; Apple: 100), M2 Pro 204.8, M2 Max 409.6 (applegpuinfo issue #10: M2 Max, 38
#    cores, 409.6 GB/s), M2 Ultra 819.2; bins M2 8/10, Pro 16/19, Max 30/38, Ultra 60/76. M2 10-core GPU 1398 MHz x
#    1280 ALUs = 3.6 TFLOP/s (github.com/StarBeat/cpu-gpu-arch gpu/Apple-M2.md, after AnandTech and Chips and Cheese).
#  - M3 102.4; M3 Pro 153.6 (LPDDR5-6400, 192-bit; Apple: 150); M3 Max 307.2 with the 30-core GPU (384-bit; Apple:
#    300) and 409.6 with the 40-core GPU (512-bit; Apple: 400; applegpuinfo issue #4: M3 Max, 40 cores, 409.6 GB/s);
#    M3 Ultra 819.2 (Ars Technica's table, 2025-03-05, quoted at mjtsai.com/blog/2025/03/05/apple-m3-ultra/).
#  - M4 120 (LPDDR5X-7500, 128-bit), M4 Pro 273 (LPDDR5X-8533, 256-bit), M4 Max 409.6 with the 32-core GPU (384-bit;
#    Apple: 410) and 546 with the 40-core GPU (512-bit): Apple's M4 Max announcement (macrumors.com/2024/10/30/
#    apple-announces-m4-max-chip/, notebookcheck.net).
#  - M5 153 (Apple's M5 announcement, 2025-10-15, as reported by techradar.com and allyoucantech.com); M5 Max 614
#    (thedailyscout.com, M5 Pro/Max launch); no M5 Pro bandwidth and no M5 TFLOP/s figure was found: None.
#  - FP32 TFLOP/s: ALUs x 2 (FMA) x clock for the top bin (M1 family 1278 MHz: 10.4 for 32 cores; M2 as above;
#    hmc-tech.com GPU pages for M3/M4: 40-core M3 Max 14.32, 18-core M3 Pro 6.44, 10-core M4 3.76, 16-core M4 Pro
#    6.02, 32-core M4 Max 13.74); every other bin scaled by its GPU cores at the same clock.
BINS: dict[str, list[tuple[int | None, float | None, float | None]]] = {
    "M1": [(7, 68.25, 2.28), (8, 68.25, 2.6)],
    "M1 Pro": [(14, 204.8, 4.55), (16, 204.8, 5.2)],
    "M1 Max": [(24, 409.6, 7.8), (32, 409.6, 10.4)],
    "M1 Ultra": [(48, 819.2, 15.6), (64, 819.2, 20.8)],
    "M2": [(8, 102.4, 2.88), (10, 102.4, 3.6)],
    "M2 Pro": [(16, 204.8, 5.73), (19, 204.8, 6.8)],
    "M2 Max": [(30, 409.6, 10.74), (38, 409.6, 13.6)],
    "M2 Ultra": [(60, 819.2, 21.47), (76, 819.2, 27.2)],
    "M3": [(8, 102.4, 2.86), (10, 102.4, 3.58)],
    "M3 Pro": [(14, 153.6, 5.01), (18, 153.6, 6.44)],
    "M3 Max": [(30, 307.2, 10.74), (40, 409.6, 14.32)],
    "M3 Ultra": [(60, 819.2, 21.48), (80, 819.2, 28.64)],
    "M4": [(8, 120.0, 3.01), (10, 120.0, 3.76)],
    "M4 Pro": [(16, 273.0, 6.02), (20, 273.0, 7.53)],
    "M4 Max": [(32, 409.6, 13.74), (40, 546.0, 17.18)],
    "M5": [(None, 153.0, None)],
    "M5 Pro": [(None, None, None)],
    "M5 Max": [(None, 614.0, None)],
}


_CHIP = re.compile(r"\bM([1-9])(?:\s+(Pro|Max|Ultra))?\b")
_ARCH = re.compile(r"applegpu_g(\d+)")


def chip_name(name: str | None) -> str | None:
    """The Apple chip a device name or CPU brand string names ("Apple M2 Max" -> "M2 Max"); None for anything else."""
    m = _CHIP.search(name) if name and "apple" in name.lower() else None
    return (f"M{m.group(1)}" + (f" {m.group(2)}" if m.group(2) else "")) if m else None


# -- GPU generations ----------------------------------------------------------------------------------------------

class Generation(TypedDict):
    """One Apple GPU generation (MLX's ``architecture``: "applegpu_g13s" is generation 13, the letter its variant)."""
    family: str              # the chips of that generation: "M1" (M1, M1 Pro, M1 Max, M1 Ultra)
    architecture: str        # MLX's device_info "architecture" without the variant letter
    native_bf16: bool        # bfloat16 runs natively (M1 and M2 emulate it: verify, compute-bound, pays more)
    qmv_wide_affine: bool    # mlx 0.32's qmv_wide serves affine-quantized weights at 2..8 rows


# Sources. The architecture strings as MLX reports them, from device info recorded on each generation (the recordings
# are in tests/engine_adapter/test_preflight.py): applegpu_g13g (M1), applegpu_g14d (M2 Ultra, ml-explore/mlx#1060),
# applegpu_g15s (M3 Max, ml-explore/mlx-c#93), AGXAcceleratorG16G in ioreg (M4), applegpu_g17s (M5 Max,
# ddalcu/mlx-serve#83). qmv_wide: ml-explore/mlx#3764 (merged 2026-06-26, in mlx 0.32; read): "selected for M in
# [2, vector_limit)"; "The fp modes use it on all GPU generations; affine is gated to gen-15+" (its benchmark table
# shows the M2 Pro's int4/int8 on the old qmv path). lablup/mlxcel#1254 gates its B=1 MTP on the same split
# ("the use_qmv_wide split at Apple GPU generation 15"). bfloat16 native from the M3 generation: the pre-flight's
# existing fact (M1 and M2 GPUs have no bfloat16 arithmetic; MLX emulates it).
GENERATIONS: Final[dict[int, Generation]] = {
    13: {"family": "M1", "architecture": "applegpu_g13", "native_bf16": False, "qmv_wide_affine": False},
    14: {"family": "M2", "architecture": "applegpu_g14", "native_bf16": False, "qmv_wide_affine": False},
    15: {"family": "M3", "architecture": "applegpu_g15", "native_bf16": True, "qmv_wide_affine": True},
    16: {"family": "M4", "architecture": "applegpu_g16", "native_bf16": True, "qmv_wide_affine": True},
    17: {"family": "M5", "architecture": "applegpu_g17", "native_bf16": True, "qmv_wide_affine": True},
}
GPU_FAMILIES: Final = {n: g["family"] for n, g in GENERATIONS.items()}
FIRST_NATIVE_BF16_FAMILY: Final = min(n for n, g in GENERATIONS.items() if g["native_bf16"])
FIRST_QMV_WIDE_GENERATION: Final = min(n for n, g in GENERATIONS.items() if g["qmv_wide_affine"])
QMV_WIDE_MLX: Final = (0, 32)   # the first MLX release with qmv_wide
QMV_WIDE_SOURCE: Final = "ml-explore/mlx#3764"


def generation(chip: str | None = None, architecture: str | None = None) -> int | None:
    """The GPU generation from MLX's architecture ("applegpu_g14d" -> 14), else from the chip's name ("M2 Max" -> 14)."""
    m = _ARCH.search(str(architecture or ""))
    if m:
        return int(m.group(1))
    name = chip_name(chip) or chip_name(f"Apple {chip}" if chip else None)
    family = name.split()[0] if name else None
    return next((n for n, g in GENERATIONS.items() if g["family"] == family), None)


def qmv_wide_applies(gen: int) -> bool:
    """mlx#3764's rule for affine-quantized weights (mlx-lm's default quantization): generation 15 and later."""
    g = GENERATIONS.get(gen)
    return g["qmv_wide_affine"] if g else gen >= FIRST_QMV_WIDE_GENERATION


def mlx_has_qmv_wide(version: str | None) -> bool | None:
    """Whether this MLX version has qmv_wide (0.32 on); None when the version cannot be read."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) >= QMV_WIDE_MLX if m else None


# -- what a wide verify costs, measured in public ----------------------------------------------------------------

class WideVerifyMeasurement(TypedDict):
    """One public measurement of a wide verify's cost in decode steps (one position's forward = 1)."""
    chip: str                          # the chip it was measured on
    generation: int
    positions: int | None              # the verify's width (positions verified at once); None for a fit over widths
    ratio: float | None                # its cost in decode steps at that width
    fit: tuple[float, float] | None    # (a, b): cost = a + b·K decode steps over the widths swept
    kind: str                          # what it times, in two or three words: "a verify", "one layer", ...
    what: str                          # what was timed, on what
    source: str                        # owner/repo#number
    checked: str                       # what was seen in the source, or that the figure is the design brief's only


# Each figure's source, and what of it was seen there (2026-12, through the public issue index): "seen" means the
# figure was read in that thread; "from the design brief" means the thread was not found or the figure was not in the
# part of it read, so the number is the design brief's (docs/DESIGN.md §8), not checked.
WIDE_VERIFY: Final[tuple[WideVerifyMeasurement, ...]] = (
    {"chip": "M2", "generation": 14, "positions": 2, "ratio": 1.725, "fit": None,
     "kind": "a verify",
     "what": "an MTP verify of 2 positions (Qwen3.5/3.6, mlx-lm), which caps MTP near 1.1–1.2×",
     "source": "ml-explore/mlx-lm#990",
     "checked": "the PR was found (native MTP for Qwen3.5/3.6; its thread says the verify's small-M quantized matmul "
                "cost is chip-dependent); the 1.725 itself was not in the part read: from the design brief"},
    {"chip": "M3 Ultra", "generation": 15, "positions": None, "ratio": None, "fit": (0.83, 0.170),
     "kind": "a whole round",
     "what": "a whole MTP round (the bf16 assistant's draft and the verify) of width K, Gemma 4 31B, widths swept",
     "source": "lablup/mlxcel#1217",
     "checked": "seen: 'Width sweep on the code row fits 0.83 + 0.170 K, largest residual 0.06' (#1217; PR #1254's "
                "record: round cost in classic decode steps)"},
    {"chip": "M3 Ultra", "generation": 15, "positions": 2, "ratio": 2.2, "fit": None,
     "kind": "an MoE verify",
     "what": "a 2-token verify of an MoE routing 8 of 256 experts per token (the experts' union is read)",
     "source": "jundot/omlx#2077", "checked": "not found in the index: from the design brief"},
    {"chip": "M4 Pro", "generation": 16, "positions": 4, "ratio": 1.47, "fit": None,
     "kind": "one layer",
     "what": "one quantized projection (4096×24576, an MLP's gate+up; affine 4-bit, mlx 0.32.0 with qmv_wide) at 4 "
             "rows against 1: a single layer, not a whole verify",
     "source": "ml-explore/mlx#3839", "checked": "seen (M4 Pro 24 GB, macOS 15.6, median of 40 synced calls)"},
    {"chip": "M4 Pro", "generation": 16, "positions": 8, "ratio": 2.69, "fit": None,
     "kind": "one layer", "what": "the same projection at 8 rows against 1",
     "source": "ml-explore/mlx#3839", "checked": "seen"},
    {"chip": "M5 Max", "generation": 17, "positions": 4, "ratio": 1.29, "fit": None,
     "kind": "a verify", "what": "a verify forward of 4 positions against 1 (a Qwen 27B 4-bit target)",
     "source": "lablup/mlxcel#1187",
     "checked": "the figure was seen in lablup/mlxcel#1182's thread ('T=1 to T=4 cost only 1.29x for 4x the "
                "positions'); #1187 itself and the chip of that thread were not seen: the M5 Max is the design "
                "brief's"},
)

MEASURED: Final = "measured on this chip"
INFERRED: Final = "inferred from the generation, not measured on this chip"
NOT_APPLICABLE: Final = "does not apply"
UNKNOWN: Final = "unknown chip"
CPU_BACKEND: Final = ("the chip facts do not apply here: MLX runs on the CPU (CPU backend), and qmv_wide and the public "
                      "wide-verify measurements are Apple-GPU (Metal) figures")


class WideVerifyFacts(TypedDict):
    """What a wide verify is expected to cost on one chip (``wide_verify_facts``)."""
    applies: bool                                # False: CPU backend, or not an Apple chip specscope knows
    chip: str | None                             # "M2 Max"
    generation: int | None
    family: str | None                           # "M2"
    qmv_wide: bool | None                        # mlx#3764's answer for affine-quantized weights on this generation
    basis: str                                   # MEASURED, INFERRED, NOT_APPLICABLE or UNKNOWN
    measurements: list[WideVerifyMeasurement]    # the public figures the expectation rests on
    text: str                                    # all of it in a sentence or three, sources named


def describe(m: WideVerifyMeasurement, short: bool = False) -> str:
    """One public figure with its chip, what was timed (``short``: in a word or three) and its source."""
    if m["fit"] is not None:
        a, b = m["fit"]
        cost = f"a round of width K costs {a:.2f} + {b:.3f}·K decode steps"
    else:
        cost = f"{m['positions']} positions cost {m['ratio']:g}× one decode step"
    if short:
        return f"{m['chip']}, {m['kind']}: {cost} ({m['source']})"
    return f"{m['chip']}: {cost} ({m['what']}; {m['source']})"


def qmv_wide_text(gen: int) -> str:
    if qmv_wide_applies(gen):
        return (f"qmv_wide applies (mlx ≥ 0.32 verifies 2–8 rows of affine-quantized weights in one weight read from "
                f"generation {FIRST_QMV_WIDE_GENERATION}, M3, on; {QMV_WIDE_SOURCE})")
    return (f"qmv_wide does not apply to affine-quantized weights, mlx-lm's usual 4- and 8-bit (generation "
            f"{FIRST_QMV_WIDE_GENERATION}, M3, and later only; the nvfp4, mxfp4 and mxfp8 modes use it on every "
            f"generation; {QMV_WIDE_SOURCE})")


def _measurements(name: str | None, gen: int) -> tuple[str, list[WideVerifyMeasurement]]:
    own = [m for m in WIDE_VERIFY if name and m["chip"] == name]
    if own:
        return MEASURED, own
    same = [m for m in WIDE_VERIFY if m["generation"] == gen]
    if not same and gen in GENERATIONS:  # none on this generation: those of the generations on the same kernel path
        same = [m for m in WIDE_VERIFY if qmv_wide_applies(m["generation"]) == qmv_wide_applies(gen)]
    return INFERRED, same


def inferred_from(found: list[WideVerifyMeasurement], gen: int) -> str:
    """Whence an inferred expectation comes: the same generation's other chips, or a generation on the same path."""
    chips = " and the ".join(sorted({m["chip"] for m in found}))
    if all(m["generation"] == gen for m in found):
        return f"the {chips} of the same generation"
    path = "qmv_wide" if qmv_wide_applies(gen) else "no qmv_wide for affine weights"
    return f"generation {gen} takes the same kernel path as the {chips}: {path}"


def wide_verify_facts(chip: str | None, device: str | None = None, architecture: str | None = None) -> WideVerifyFacts:
    """What a wide verify is expected to cost on ``chip`` (a device name or brand string: "Apple M1 Max"), run on MLX's
    ``device`` ("Device(gpu, 0)"; a CPU device: the facts do not apply), from the public measurements: those measured on
    this very chip, else (said so) those of its generation, else those of the generations on the same kernel path."""
    name = chip_name(chip)
    gen = generation(chip, architecture)
    none: WideVerifyFacts = {"applies": False, "chip": name, "generation": gen, "family": None, "qmv_wide": None,
                             "basis": NOT_APPLICABLE, "measurements": [], "text": CPU_BACKEND}
    if device is not None and "gpu" not in device.lower():
        return none
    if gen is None:
        return {**none, "basis": UNKNOWN,
                "text": f"{chip or 'this chip'} is not an Apple M-series chip specscope knows: no public wide-verify "
                        "figures for it"}
    family = GPU_FAMILIES.get(gen)
    basis, found = _measurements(name, gen)
    label = f"Apple {name}" if name else f"an Apple {family or 'GPU'} chip"
    text = f"{label} (GPU generation {gen}): {qmv_wide_text(gen)}. "
    if not found:
        text += "No public wide-verify measurement for this generation."
    elif basis == MEASURED:
        text += "Measured on this chip: " + "; ".join(describe(m) for m in found) + "."
    else:
        text += f"Expected from its generation, not measured on this chip ({inferred_from(found, gen)}): " \
            + "; ".join(describe(m) for m in found) + "."
    return {"applies": True, "chip": name, "generation": gen, "family": family, "qmv_wide": qmv_wide_applies(gen),
            "basis": basis, "measurements": found, "text": text}


def beside_this_machine(facts: WideVerifyFacts, measured: dict[int, float], width: int | None = None,
                        short: bool = False) -> list[str]:
    """Each public figure beside what this machine measured at the same width (``measured``: decode steps by verify
    width, from the session's verify curve); a fit beside the machine at ``width`` (the run's own verify). A width the
    curve did not measure says so: no number is made up for it."""
    lines = []
    for m in facts["measurements"]:
        fit = m["fit"]
        n = m["positions"] if fit is None else width
        if n is None:
            here = "this machine: no verify width to compare"
        elif n in measured:
            at = f"the fit at K = {n}: {fit[0] + fit[1] * n:.2f}; " if fit is not None else ""
            here = f"{at}this machine: {measured[n]:.2f}× at n = {n}"
        else:
            here = f"this machine: n = {n} not measured"
        lines.append(f"{describe(m, short)} — {here}")
    return lines
