"""One clock behind the seam: dflash-mlx's cycles, like specscope's own records (``decode/test_clock.py``), hold none
of the consumer's time, though each is handed on from inside the next cycle (the first token that shows it complete).
A consumer pausing after every record: the records, disjoint spans of the engine's own run, sum to at most the pass's
wall time less the pauses (no timing threshold: it follows from where the clock reads). Skipped where the ``dflash``
extra is not installed. (mlx-lm's loop starts each cycle's clock at the resume and always did.)"""

from __future__ import annotations

import json
import time

import pytest

from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.engine_adapter.model.dflash_demo import build_dflash_demo

pytest.importorskip("dflash_mlx", reason="the dflash extra (pip install 'specscope[dflash]') is not installed")

PAUSE_S = 0.05
N = 24


def test_dflash_mlxs_cycles_hold_no_consumer_time(model_dirs, tmp_path):
    text = json.loads((model_dirs["dense"] / "config.json").read_text())
    drafter = build_dflash_demo(tmp_path / "drafter", text.get("text_config", text), "the dense demo")
    eng = Engine.open(EngineParams(model=str(model_dirs["dense"]), drafter="dflash", draft_model=str(drafter),
                                   engine="dflash-mlx", num_draft_tokens=3))
    prompt = eng.encode("Explain why a verification pass over several tokens can cost as much as decoding.")
    records = []
    t0 = time.perf_counter()
    for rec in eng.speculative(prompt, [], N):
        records.append(rec)
        time.sleep(PAUSE_S)
    engine_ms = (time.perf_counter() - t0) * 1000.0 - len(records) * PAUSE_S * 1000.0
    assert sum(r["event"] == "round" for r in records) > 3  # several cycles, each handed on from inside the next
    assert sum(r["ms"] for r in records) <= engine_ms
