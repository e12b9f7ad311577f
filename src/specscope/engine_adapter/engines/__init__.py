"""Other speculative engines on the same model, profiled beside specscope's own (issue: another engine).

``seam`` is the small protocol an engine's speculative loop implements; ``registry`` finds engines by name (built in,
or registered by a user under the entry-point group ``specscope.engines``); ``mlx_lm_loop`` is mlx-lm's own loop.
"""
