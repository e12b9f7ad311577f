"""What a busy process beside the worker costs its measurements: the demo's end-to-end passes and plain passes, with
a process that serialises a session-sized JSON document over and over (as the CLI's saves did) running beside them
and stopped, alternating. Prints the mean round and step times both ways and their ratios.
usage: python tools/busy_neighbour.py [DRAFTER] [PAIRS] (DRAFTER: mtp, draft; PAIRS: 8)"""
import os
import signal
import subprocess
import sys
import time

import numpy as np

from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

name = sys.argv[1] if len(sys.argv) > 1 else "mtp"
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 8
SAVER = ("import json\n"
         "d = {'rounds': [{'drafted': [1, 2], 'accepted': 1, 'emitted': [3, 4], 'ms': 12.345678901234,"
         " 'kind': 'end_to_end', 'pass': 'measured'} for _ in range(60000)]}\n"
         "while True:\n    json.dumps(d, indent=1, ensure_ascii=False)\n")
neighbour = subprocess.Popen([sys.executable, "-c", SAVER])
try:
    time.sleep(1.0)
    os.kill(neighbour.pid, signal.SIGSTOP)
    eng = Engine.open(EngineParams(model=None, demo=True, drafter=name, num_draft_tokens=2, round_kinds="end_to_end"))
    prompt = eng.encode(PROMPT)
    plain = [r["token"] for r in eng.plain(prompt, 64)]
    rounds: dict[str, list[float]] = {"alone": [], "beside": []}
    steps: dict[str, list[float]] = {"alone": [], "beside": []}
    for i in range(2 * pairs + 1):  # the first (alone) warms up
        side = "beside" if i % 2 else "alone"
        os.kill(neighbour.pid, signal.SIGCONT if side == "beside" else signal.SIGSTOP)
        time.sleep(0.05)
        r = [x["ms"] for x in eng.speculative(prompt, plain, 64) if x["event"] == "round"]
        s = [x["ms"] for x in eng.plain(prompt, 64) if x["event"] == "step"]
        if i:
            rounds[side].append(float(np.mean(r)))
            steps[side].append(float(np.mean(s)))
finally:
    neighbour.kill()
ra, rb = np.mean(rounds["alone"]), np.mean(rounds["beside"])
sa, sb = np.mean(steps["alone"]), np.mean(steps["beside"])
print(f"{name}, {pairs} pairs: round {ra:.2f} ms alone, {rb:.2f} ms beside the busy process ({rb / ra:.3f}x); "
      f"plain step {sa:.2f} ms alone, {sb:.2f} ms beside ({sb / sa:.3f}x)")
