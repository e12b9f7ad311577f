"""Typed views of MLX calls whose annotations are looser than what they return here; no behaviour of their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import mlx.core as mx
from mlx.utils import tree_flatten


def flat(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[tuple[str, Any]]:
    """``mlx.utils.tree_flatten(tree, is_leaf=is_leaf)``: (dotted path, leaf) pairs. Without a ``destination`` it
    returns a list; its annotation also allows the dict it fills only when given a dict destination."""
    return cast(list[tuple[str, Any]], tree_flatten(tree, is_leaf=is_leaf))


def scalar(a: mx.array) -> float:
    """``a.item()`` of a real scalar array. MLX annotates ``item()`` as any scalar, complex included; an integer
    array's item is still an ``int`` at run time (an ``int`` passes as a ``float`` in annotations)."""
    return cast(float, a.item())


def token(a: mx.array) -> int:
    """``a.item()`` of an integer scalar array (a token id)."""
    return cast(int, a.item())


def values(a: mx.array) -> list[Any]:
    """``a.tolist()`` of an array with one dimension or more: a list (MLX annotates it as a list or a scalar)."""
    return cast(list[Any], a.tolist())
