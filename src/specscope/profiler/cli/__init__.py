"""``specscope``, the command line: the parser and its commands (run, report, compare, trace, inspect, roofline,
tune, bench, capture); ``python -m specscope.profiler.cli`` runs it."""
