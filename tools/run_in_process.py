"""The run's protocol in this process (no worker process, no reader): ``run_protocol``'s events into a ``Session``,
saved without its figures (``tools/session_round_terms.py`` computes them). Tells the protocol's own effects from the
worker's and the reader's. usage: python tools/run_in_process.py OUT.json [DRAFTER] [CASES]"""
import sys

from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.protocol import run_protocol
from specscope.profiler.session.session import Session

cfg = RunConfig(demo=True, drafter=sys.argv[2] if len(sys.argv) > 2 else "draft",
                cases=int(sys.argv[3]) if len(sys.argv) > 3 else None)
session = Session()
print(run_protocol(cfg, session.apply))
session.save(sys.argv[1])
