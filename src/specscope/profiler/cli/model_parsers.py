"""The parsers of ``specscope demo-model`` and ``specscope inspect`` (their commands: ``model_commands``)."""

from __future__ import annotations

from specscope.profiler.cli.common import add_download_arg
from specscope.profiler.cli.model_commands import cmd_demo_model, cmd_inspect
from specscope.profiler.cli.progress import add_progress_args


def add_parser(sub) -> None:
    """``specscope demo-model`` and ``specscope inspect`` on the ``specscope`` argparse subparsers."""
    d = sub.add_parser("demo-model", help="write a demo model folder (the shipped trained one; --random: synthetic)")
    d.add_argument("path")
    d.add_argument("--random", action="store_true", help="random (synthetic) weights, the larger layout the fast tests use")
    kind = d.add_mutually_exclusive_group()
    kind.add_argument("--dense", action="store_true", help="a plain qwen3 model instead of the hybrid MoE")
    kind.add_argument("--draft", action="store_true", help="a small qwen3 draft model")
    kind.add_argument("--dflash", action="store_true", help="a random DFlash drafter (published format) for the demo target "
                      "(the trained one; --random: the random one; --shape/--layers: that slice)")
    kind.add_argument("--dflash2", action="store_true", help="a random DFlash2 drafter (published format: sliding "
                      "window, convolutions, candidate selector) for the demo target, as --dflash")
    d.add_argument("--block-size", type=int, default=16, help="with --dflash or --dflash2: the drafter's block size (default 16: "
                   "up to 15 drafts a round)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--shape", metavar="NAME", help="random weights at a released model's dimensions instead "
                   "(qwen3.5-35b-a3b), written a layer at a time")
    d.add_argument("--layers", type=int, metavar="N", help="with --shape: the first N decoder layers, 4 to 40 (default 4; "
                   "one in four is full attention; about 0.47 GiB per layer plus 0.55 GiB for embedding and head)")
    add_progress_args(d)
    d.set_defaults(func=cmd_demo_model)

    i = sub.add_parser("inspect", help="describe a local checkpoint")
    i.add_argument("path", nargs="?", metavar="MODEL", help="a model folder, or a repo id (org/name[@revision]) "
                   "from the local Hugging Face cache")
    i.add_argument("--demo", action="store_true")
    i.add_argument("--target", metavar="MODEL", help="with a DFlash drafter folder: also say whether it fits this target")
    add_download_arg(i)
    i.add_argument("--json", action="store_true")
    i.add_argument("--allow-oversize", action="store_true")
    i.set_defaults(func=cmd_inspect)
