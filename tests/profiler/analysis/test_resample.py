"""One seeded resampling helper: the same data give the same resamples, and no other module draws its own."""

from pathlib import Path

import numpy as np
import pytest

from specscope.profiler.analysis import resample

SRC = Path(__file__).resolve().parents[3] / "src" / "specscope"


def test_the_same_seed_gives_the_same_resamples_and_units_are_drawn_whole():
    a = resample.indices(resample.generator(), 7, 50)
    b = resample.indices(resample.generator(), 7, 50)
    assert a.shape == (50, 7) and (a == b).all() and a.min() >= 0 and a.max() <= 6
    x = np.arange(7.0)
    means = resample.statistic(x, np.mean, resample.generator(3), 400)
    assert means.shape == (400,) and 1.0 < means.mean() < 5.0
    assert not (resample.indices(resample.generator(1), 7, 50) == a).all()  # another seed, other draws


@pytest.mark.skipif(not SRC.is_dir(), reason="needs the checkout's src/")
def test_no_module_draws_bootstrap_indices_of_its_own():
    """Every bootstrap resamples through ``analysis.resample`` (run's error interval, tune's prediction, bench's median):
    a module that draws unit indices itself would be a fourth rule."""
    own = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
           if p.name != "resample.py" and "profiler" in p.parts and ".integers(0, len(" in p.read_text(encoding="utf-8")]
    assert own == []


@pytest.mark.parametrize("n, reps", [(1, 7), (3, 2000), (499, 2000), (3001, 301), (200_001, 5)])
def test_resamples_drawn_a_slice_at_a_time_equal_the_whole_matrix(n, reps):
    """``statistic`` and ``means`` draw the index matrix a slice of rows at a time (it stays in cache): the same
    resamples as the whole (reps, n) matrix drawn at once, and the generator left where the whole draw leaves it (so
    every later draw is unchanged too)."""
    x = np.random.default_rng(n).random(n)
    y = np.random.default_rng(n + 1).random(n)
    whole_rng, sliced_rng = np.random.default_rng(5), np.random.default_rng(5)
    idx = whole_rng.integers(0, n, size=(reps, n))
    assert np.array_equal(resample.statistic(x, np.mean, sliced_rng, reps), x[idx].mean(axis=1))
    idx = whole_rng.integers(0, n, size=(reps, n))
    mx_, my_ = resample.means([x, y], sliced_rng, reps)
    assert np.array_equal(mx_, x[idx].mean(axis=1)) and np.array_equal(my_, y[idx].mean(axis=1))
    assert sliced_rng.integers(0, 1 << 40) == whole_rng.integers(0, 1 << 40)
