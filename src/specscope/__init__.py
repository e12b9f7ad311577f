"""specscope: a desktop profiler for speculative decoding of local LLMs with MLX.

Layers: ``gui`` (Qt) → ``profiler`` (no Qt, no MLX at import) → ``engine_adapter`` (MLX).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("specscope")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
