"""Chi-square helpers for the tests that check speculative sampling's output distribution (decode/test_sampling,
drafters/test_dflash): importable as ``chi2`` from any test under tests/engine_adapter (its conftest's folder is on
the path). The tail and the two-sample statistic are the package's own (``specscope.chi_square``, which
``check --engine`` uses); only the goodness of fit against known probabilities is the tests'."""

from collections import Counter

import numpy as np

from specscope.chi_square import chi2_sf, two_sample

__all__ = ["chi2_goodness_of_fit", "chi2_sf", "chi2_two_sample"]


def chi2_two_sample(a: Counter, b: Counter, min_count=5):
    """Chi-square homogeneity statistic and degrees of freedom, rare tokens pooled."""
    stat, dof, _ = two_sample(a, b, min_count)
    return stat, dof


def chi2_goodness_of_fit(counts: np.ndarray, probs: np.ndarray) -> float:
    """P-value of observed counts against known probabilities."""
    expected = probs * counts.sum()
    return chi2_sf(float(((counts - expected) ** 2 / expected).sum()), len(counts) - 1)
