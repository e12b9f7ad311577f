"""The MLX distributed group, and the small exchanges across its ranks (one all-sum each, outside every timer)."""

from __future__ import annotations

import mlx.core as mx

from specscope.errors import SpecscopeError

from specscope.engine_adapter.mlx_types import values

BACKENDS = ("ring", "jaccl", "mpi", "nccl", "any")


def init_group(backend: str = "ring"):
    """``mx.distributed.init`` for ``backend``; a clear error when this process was not launched as a rank."""
    if backend not in BACKENDS:
        raise SpecscopeError(f"unknown distributed backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    try:
        group = mx.distributed.init(strict=backend != "any", backend=backend)
    except Exception as exc:  # no hostfile / rank in the environment, or a backend this build lacks
        raise SpecscopeError(
            f"could not join the MLX distributed group (backend {backend}): {exc}; "
            "distributed runs are started by `specscope run --ranks N` or `--hosts H1,H2` (mlx.launch)"
        ) from None
    return group


def gather_rows(row: list[float], group) -> list[list[float]]:
    """Every rank's ``row`` (same length on every rank), in rank order, on every rank (one all-sum)."""
    n, r = group.size(), group.rank()
    m = mx.zeros((n, len(row)), dtype=mx.float32)
    if row:
        m[r] = mx.array(row, dtype=mx.float32)
    out = mx.distributed.all_sum(m, group=group)
    mx.eval(out)
    return values(out)


def gather_strings(s: str, group, width: int = 64) -> list[str]:
    """Every rank's ``s`` (its first ``width`` UTF-8 bytes), in rank order, on every rank."""
    b = s.encode("utf-8")[:width]
    rows = gather_rows([float(x) for x in b] + [0.0] * (width - len(b)), group)
    return [bytes(int(x) for x in row if x).decode("utf-8", "replace") for row in rows]


def sync(group) -> None:
    """A barrier across ranks (one tiny all-sum), outside every timer."""
    mx.eval(mx.distributed.all_sum(mx.zeros((1,)), group=group))
