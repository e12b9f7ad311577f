"""The one seeded resampling helper: every bootstrap in specscope draws its units through here.

A seeded generator, so the same data give the same interval (a report opened twice reads the same), and units drawn
whole with replacement; what a unit is (a case, a block of rounds, a pair) is the caller's choice.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

SEED = 20261201  # the default seed: intervals are a function of the data alone


def generator(seed: int | list[int] | None = None) -> np.random.Generator:
    return np.random.default_rng(SEED if seed is None else seed)


def indices(rng: np.random.Generator, n: int, reps: int) -> np.ndarray:
    """``reps`` resamples of ``n`` units: a (reps, n) matrix of unit indices drawn with replacement."""
    return rng.integers(0, n, size=(reps, n))


def statistic(x: np.ndarray, stat: Callable, rng: np.random.Generator, reps: int) -> np.ndarray:
    """``stat`` (numpy-style, taking ``axis``) of ``reps`` resamples of ``x``."""
    return stat(x[indices(rng, len(x), reps)], axis=1)


def draws(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> np.ndarray:
    """Unit indices drawn with replacement in any ``shape`` (a simulation's runs × looks of cases, say)."""
    return rng.integers(0, n, size=shape)
