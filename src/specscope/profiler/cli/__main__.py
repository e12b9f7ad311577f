import sys

from specscope.profiler.cli.main import main

sys.exit(main())
