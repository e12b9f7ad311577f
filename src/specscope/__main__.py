"""``python -m specscope`` is the ``specscope`` command."""

from specscope.profiler.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
