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
