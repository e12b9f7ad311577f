"""``specscope check``: can specscope profile this model correctly (rollback exactness, MTP, windows; a DFlash
drafter's too)? With ``--engine NAME``: is another engine's acceptance rule right at temperature?

``add_parser(sub)`` adds the command; ``check_config(a)`` turns its flags into the measurement
(``run.tool_configs.CheckConfig``), which runs in the worker (``run.check_run``); ``-o`` keeps its session, which the
app opens on its Checks page.
"""

from __future__ import annotations

import json

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import add_download_arg, add_dtype_arg, resolve_model_args
from specscope.profiler.cli.progress import add_progress_args, progress_bar, progress_wanted
from specscope.profiler.cli.worker_measure import incomplete_exit, run_in_worker
from specscope.profiler.run.tool_configs import CheckConfig


def add_parser(sub) -> None:
    ck = sub.add_parser("check", help="can specscope profile this model correctly? (rollback exactness, MTP, windows)")
    ck.add_argument("path", nargs="?", metavar="MODEL", help="a model folder or a cached repo id")
    ck.add_argument("--model", dest="model_flag", metavar="MODEL", help="the same, as run and tune spell it")
    ck.add_argument("--demo", action="store_true")
    ck.add_argument("--json", action="store_true")
    ck.add_argument("--max-k", type=int, default=4, help="check rollback for k = 1..MAX_K (default 4)")
    ck.add_argument("--no-mtp", action="store_true", help="skip loading the MTP head")
    ck.add_argument("--drafter", choices=["dflash", "draft", "auto"], help="also check this drafter: dflash checks rollback at k = block "
                    "size - 1 and the drafter's own context at every accepted length 0..block size - 1")
    ck.add_argument("--engine", metavar="NAME", help="check another engine's acceptance rule at temperature instead: its "
                    "sampled tokens against plain decoding's (two-sample chi-square) with the test's power")
    ck.add_argument("--temp", type=float, help="with --engine: the temperature (default 0.25)")
    ck.add_argument("--top-p", type=float, default=0.9, help="with --engine (default 0.9)")
    ck.add_argument("--draws", type=int, default=100, help="with --engine: sampled draws per side (default 100)")
    ck.add_argument("--num-draft-tokens", "-k", type=int, default=2, help="with --engine (default 2)")
    ck.add_argument("--prompt", default="Why is the sky blue?", help="with --engine: the prompt the draws start from")
    ck.add_argument("--draft-model", help="with --drafter dflash: the DFlash drafter folder (or cached repo id)")
    ck.add_argument("--allow-oversize", action="store_true")
    ck.add_argument("-o", "--output", metavar="FILE", help="keep the check's session (its report and how it was run; "
                    "`specscope gui FILE` shows it on the Checks page)")
    add_dtype_arg(ck)
    add_progress_args(ck)
    add_download_arg(ck)
    ck.set_defaults(func=cmd_check)


def check_config(a) -> CheckConfig:
    """The check the flags ask for (model references resolved to folders first)."""
    if getattr(a, "model_flag", None):
        if a.path and a.path != a.model_flag:
            raise SpecscopeError(f"two models given: {a.path} and --model {a.model_flag}; give one")
        a.path = a.model_flag
    if not a.path and not a.demo:
        raise SpecscopeError("give a model (a folder or a cached repo id like org/name) or --demo")
    resolve_model_args(a)
    return CheckConfig(model=a.path, demo=bool(a.demo), max_k=a.max_k, no_mtp=a.no_mtp, drafter=a.drafter,
                       draft_model=a.draft_model, engine=a.engine, temp=a.temp, top_p=a.top_p, draws=a.draws,
                       num_draft_tokens=a.num_draft_tokens, prompt=a.prompt, allow_oversize=a.allow_oversize,
                       dtype=a.dtype)


def cmd_check(a) -> int:
    cfg = check_config(a)
    cfg.validate()  # refused here, before a worker starts
    total = [None if cfg.engine else sum(range(2, cfg.max_k + 2))]  # a DFlash drafter's block adds its own k
    with progress_bar("check", total=total[0], unit="draws" if cfg.engine else "checks",
                      enabled=progress_wanted(a)) as bar:
        def status(ev) -> None:
            if "done" in ev:  # a counted step of the rollback checks
                if ev["total"] != total[0]:
                    total[0] = ev["total"]
                    bar.set_total(ev["total"])
                bar.update_to(ev["done"], ev["message"])
            else:
                bar.status(ev["message"])

        s = run_in_worker(cfg, status, a.output)
    if s.status != "complete" or "check" not in s.data:
        return incomplete_exit("check", s, a.output)
    res = s.data["check"]
    print(json.dumps(res["report"], indent=1) if a.json else res["text"])
    return 0 if res["ok"] else 1
