"""specscope: a desktop profiler for speculative decoding of local LLMs with MLX.

Layers: ``gui`` (Qt) → ``profiler`` (no Qt, no MLX at import) → ``engine_adapter`` (MLX).
"""


def __getattr__(name: str) -> str:
    # the version on demand: importing importlib.metadata costs every process's start 20-50 ms here
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("specscope")
        except PackageNotFoundError:  # running from a source tree that was never installed
            return "0+unknown"
    raise AttributeError(f"module 'specscope' has no attribute {name!r}")
