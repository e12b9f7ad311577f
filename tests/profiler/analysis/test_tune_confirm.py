"""``profiler.analysis.tune_confirm``: the measured speedup's interval covers as claimed (simulated), the median of
per-repeat ratios is not the estimand, and the agreement states."""

from __future__ import annotations

import math
import random

import pytest

from specscope.profiler.analysis.tune_confirm import (MAX_REPS, MIN_INTERVAL_REPS, MIN_REPS, agreement, paired_error,
                                                      rate_ratio)
from specscope.profiler.analysis.tune_decide import widen_relative

JIT_P, JIT_S = 0.04, 0.06  # per-run jitter (log sd) of a plain and a speculative run
# tokens: plain runs emit 63 (64 tokens, one prefill); speculative runs' full rounds emit 50..58 (sampling moves it)
TRUE = ((54.0 / (600.0 * math.exp(JIT_S**2 / 2))) / (63.0 / (300.0 * math.exp(JIT_P**2 / 2))))


def _repeat(rng: random.Random) -> tuple[tuple[float, float], tuple[float, float]]:
    """One confirmation repeat on a shared machine: a drift both runs of the pair share (log sd 0.08), jitter of
    their own, and a stall (10–50% on top) hitting either run with probability 0.15: right-skewed, drifting times."""
    drift = math.exp(rng.gauss(0.0, 0.08))
    stall = lambda: rng.uniform(1.1, 1.5) if rng.random() < 0.15 else 1.0  # noqa: E731
    # the stall factor's mean is the same on both sides, so it cancels in TRUE (as the drift does)
    plain = (63.0, 300.0 * drift * math.exp(rng.gauss(0.0, JIT_P)) * stall())
    spec = (float(rng.randint(50, 58)), 600.0 * drift * math.exp(rng.gauss(0.0, JIT_S)) * stall())
    return spec, plain


def _coverage(n: int, trials: int, seed: int, **kw) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):
        spec, plain = zip(*(_repeat(rng) for _ in range(n)))
        _, (lo, hi) = rate_ratio(list(spec), list(plain), **kw)
        hits += lo <= TRUE <= hi
    return hits / trials


@pytest.mark.parametrize("n", [3, 6, 10, 15])
def test_the_interval_covers_the_ratio_of_mean_rates_as_claimed(n):
    """2,000 simulated confirmations per repeat count: the 95% interval holds the true ratio of mean rates at least
    93.5% of the time (seen: 96% at 3 to 10 repeats, 94–95% at 15; the check's binomial noise is ±1%)."""
    assert _coverage(n, 2000, seed=n) >= 0.935


def test_a_worse_interval_fails_the_same_check():
    """The check can fail: the normal quantile in place of Student's t, at three repeats, covers well under 94%; so does
    a percentile bootstrap over the repeats at six."""
    assert _coverage(3, 2000, seed=3, t_quantile=lambda df: 1.959964) < 0.9
    rng, hits = random.Random(6), 0
    for _ in range(500):
        spec, plain = zip(*(_repeat(rng) for _ in range(6)))
        boots = []
        for _ in range(200):
            idx = [rng.randrange(6) for _ in range(6)]
            boots.append(rate_ratio([spec[i] for i in idx], [plain[i] for i in idx])[0])
        boots.sort()
        hits += boots[4] <= TRUE <= boots[194]
    assert hits / 500 < 0.9


def test_the_ratio_of_pooled_rates_is_unbiased_where_the_median_of_ratios_is_not():
    """Stalls on the plain side only (a speculative run here never stalls): the mean rates pay for them, the median of
    per-repeat ratios ignores them. Over 4,000 repeats the pooled figure is within 0.5% of the truth; the median misses
    by more than 3%."""
    rng = random.Random(5)
    spec, plain = [], []
    for _ in range(4000):
        drift = math.exp(rng.gauss(0.0, 0.05))
        plain.append((63.0, 300.0 * drift * (1.6 if rng.random() < 0.2 else 1.0)))
        spec.append((54.0, 600.0 * drift))
    truth = (54.0 / 600.0) / (63.0 / (300.0 * (0.8 + 0.2 * 1.6)))
    pooled, _ = rate_ratio(spec, plain)
    ratios = sorted((s[0] / s[1]) / (p[0] / p[1]) for s, p in zip(spec, plain))
    median = ratios[len(ratios) // 2]
    assert abs(pooled / truth - 1) < 0.005
    assert abs(median / truth - 1) > 0.03


def test_rate_ratio_edges():
    assert rate_ratio([], []) == (None, None)
    r, ci = rate_ratio([(10.0, 100.0)] * (MIN_INTERVAL_REPS - 1), [(10.0, 50.0)] * (MIN_INTERVAL_REPS - 1))
    assert r == pytest.approx(0.5) and ci is None
    r, ci = rate_ratio([(10.0, 100.0)] * 6, [(10.0, 50.0)] * 6)
    assert ci == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError):
        rate_ratio([(1.0, 1.0)], [])


def test_agreement_states():
    """The one rule on the error's interval (the prediction's interval over the measured one)."""
    # measured 1.00 known to ±1%, predicted 1.03: error +3%, interval +2.0%..+4.0%: wholly within ±5%
    assert agreement(0.03, 1.03, [0.99, 1.01], 9)["state"] == "agrees"
    # +3% alone does not agree when the measurement is known only to ±10% (the old rule said "agrees")
    assert agreement(0.03, 1.03, [0.9, 1.1], 9)["state"] == "too_little_data"
    assert agreement(0.2, 1.2, [0.95, 1.05], 9)["state"] == "off"  # +14%..+26%: wholly beyond
    assert agreement(0.2, 1.2, [0.8, 1.3], 9)["state"] == "too_little_data"  # -8%..+50%
    # the prediction's own interval counts: wholly beyond is off, reaching inside ±5% is not
    assert agreement(0.2, 1.2, [0.95, 1.05], 9, [1.15, 1.3])["state"] == "off"
    und = agreement(0.2, 1.2, [0.95, 1.05], 9, [1.0, 1.4])
    assert und["state"] == "too_little_data" and und["interval"][0] < 0 < und["interval"][1]
    assert agreement(0.2, 1.2, None, 3)["state"] == "too_little_data"
    assert agreement(0.0, 1.0, [0.999, 1.001], 2)["state"] == "too_little_data"  # fewer repeats than an interval needs
    assert agreement(None, 1.0, None, 0) is None


# -- the paired error interval (greedy confirmations: each repeat's predicted round priced from the timings beside it) --

E_K, C0 = 2.4, 10.0  # tokens per round, and a round's true cost (ms) before drift


NOISY = {"moment": 0.03, "jitter": 0.10, "stalls": 0.15}  # a busy machine: the width rule mostly runs to MAX_REPS
QUIET = {"moment": 0.015, "jitter": 0.04, "stalls": 0.05}  # a quieter one: the width rule stops near 12 repeats


def _paired_repeat(rng: random.Random, bias: float, noise: dict = NOISY) -> tuple[tuple[float, float], float]:
    """One repeat: 30 full rounds (their tokens, and their ms) and the predicted round priced from 8 rounds timed
    beside the pair. A drift both share (log sd 0.08), a moment of their own for the beside timings (log sd
    ``moment``), per-round jitter (log sd ``jitter``) and stalls (10–50% on top, probability ``stalls``); the real
    rounds cost ``bias`` more than the rounds timed apart (the prediction's error)."""
    drift = math.exp(rng.gauss(0.0, 0.08))
    stall = lambda: rng.uniform(1.1, 1.5) if rng.random() < noise["stalls"] else 1.0  # noqa: E731
    tokens = float(30 * E_K + rng.randint(-2, 2))
    ms = sum(C0 * (1 + bias) * drift * math.exp(rng.gauss(0.0, noise["jitter"])) * stall() for _ in range(30))
    moment = math.exp(rng.gauss(0.0, noise["moment"]))
    cost = sum(C0 * drift * moment * math.exp(rng.gauss(0.0, noise["jitter"])) * stall() for _ in range(8)) / 8
    return (tokens, ms), cost


def _paired_truth(bias: float, noise: dict = NOISY) -> float:
    """The estimand, predicted ÷ measured = E · E[ms] / (E[tokens] · E[cost]), in closed form: E[tokens] = 30 E
    (the ±2 is symmetric); the drift, the jitter and the stalls are independent of each other and enter E[ms] / 30
    and E[cost] alike, so only the bias and the beside timings' own moment are left: (1 + bias) / E[moment], with
    E[exp N(0, s²)] = exp(s² / 2). (50,000 simulated repeats gave the same to 1e-4: 5 s of the run a call.)"""
    return (1.0 + bias) * math.exp(-noise["moment"] ** 2 / 2.0)


def _paired_coverage(n: int, trials: int, seed: int, truth: float, **kw) -> float:
    rng, hits = random.Random(seed), 0
    for _ in range(trials):
        rounds, costs = zip(*(_paired_repeat(rng, 0.0) for _ in range(n)))
        f, h = paired_error(list(rounds), list(costs), **kw)
        v = E_K * f
        hits += v * (1 - h) <= truth <= v * (1 + h)
    return hits / trials


@pytest.fixture(scope="module")
def paired_truth() -> float:
    return _paired_truth(0.0)


@pytest.mark.parametrize("n", [3, 6, 10, 15])
def test_the_paired_error_interval_covers_as_claimed(n, paired_truth):
    """2,000 simulated confirmations per repeat count: the paired 95% interval holds the true predicted ÷ measured at
    least 93% of the time (seen: 95.0%, 95.7%, 94.9%, 94.0% at 3, 6, 10, 15)."""
    assert _paired_coverage(n, 2000, seed=n, truth=paired_truth) >= 0.93


def test_a_worse_paired_interval_fails_the_same_check(paired_truth):
    """The check can fail: the normal quantile in place of Student's t at three repeats (seen 81%), and a percentile
    bootstrap over six repeats (seen 84%)."""
    assert _paired_coverage(3, 2000, seed=3, truth=paired_truth, t_quantile=lambda df: 1.959964) < 0.9
    rng, hits = random.Random(6), 0
    for _ in range(500):
        rounds, costs = zip(*(_paired_repeat(rng, 0.0) for _ in range(6)))
        boots = []
        for _ in range(200):
            idx = [rng.randrange(6) for _ in range(6)]
            boots.append(E_K * paired_error([rounds[i] for i in idx], [costs[i] for i in idx])[0])
        boots.sort()
        hits += boots[4] <= paired_truth <= boots[194]
    assert hits / 500 < 0.9


def _sequential(rng: random.Random, bias: float, truth: float, rule: str, noise: dict = NOISY,
                stops: list | None = None) -> tuple[bool, str]:
    """One adaptive confirmation: a look after every repeat from MIN_REPS to MAX_REPS; ``rule`` "looked" stops as soon
    as the verdict is decided at the looks' corrected level (tune's rule, ``tune_decide.LEVEL``), "naive" as soon as it
    is decided at 95% (the negative control), "never" runs to MAX_REPS (a fixed sample size, judged at 95%). The repeat
    it stopped at is appended to ``stops``."""
    rounds, costs = [], []
    for n in range(1, MAX_REPS + 1):
        r, c = _paired_repeat(rng, bias, noise)
        rounds.append(r)
        costs.append(c)
        if n < MIN_REPS:
            continue
        f, h = paired_error(rounds, costs)
        v = E_K * f
        out = agreement(v - 1.0, v, None, n, paired_half=widen_relative(h, n) if rule == "looked" else h)
        assert out is not None
        if rule != "never" and out["state"] != "too_little_data":
            break
    if stops is not None:
        stops.append(n)
    lo, hi = out["interval"]
    return lo <= truth - 1.0 <= hi, out["state"]


# +4.5% (near the edge, with its negative control) runs by default; 0 and +6.5% (~10 s each) with `pytest -m slow`
@pytest.mark.parametrize("bias", [pytest.param(0.0, marks=pytest.mark.slow), 0.045, pytest.param(0.065, marks=pytest.mark.slow)])
def test_stopping_on_the_looked_verdict_keeps_the_coverage_where_the_naive_look_does_not(bias):
    """tune's confirmations look after every repeat (MIN_REPS to MAX_REPS) and stop once the verdict is decided at the
    looks' corrected level (``tune_decide.LEVEL``, as ``run --until decided`` does): 1,000 simulated runs keep 95%
    coverage with the true error at 0, +4.5% (inside ±5%, near its edge) and +6.5% (seen 99.8%, 99.6%, 99.8%). The
    negative control stops as soon as a 95% interval decides: near the edge it covers under 92% (seen 88.0%) and reads
    "off" for a true +4.5% far more often (seen 7.9% against 0.3%)."""
    truth, sims = _paired_truth(bias), 1000
    looked = [_sequential(rng, bias, truth, "looked") for rng in [random.Random(7)] for _ in range(sims)]
    assert sum(c for c, _ in looked) / sims >= 0.95
    if bias == 0.045:
        naive = [_sequential(rng, bias, truth, "naive") for rng in [random.Random(7)] for _ in range(sims)]
        assert sum(c for c, _ in naive) / sims < 0.92
        wrong = lambda runs: sum(s == "off" for _, s in runs) / sims  # noqa: E731
        assert wrong(naive) > 2 * wrong(looked)


def _rule_checks(rule: str, bias: float = 0.0, trials: int = 1000) -> tuple[float, float, float]:
    """On a quieter machine (``QUIET``): (the coverage, the median repeat stopped at, the share that ran to MAX_REPS)."""
    truth, stops = _paired_truth(bias, QUIET), []
    rng = random.Random(11)
    runs = [_sequential(rng, bias, truth, rule, QUIET, stops) for _ in range(trials)]
    return (sum(c for c, _ in runs) / trials, sorted(stops)[trials // 2], sum(n == MAX_REPS for n in stops) / trials)


def test_the_looked_rule_stops_well_before_the_cap_and_keeps_the_coverage():
    """On a quieter machine, with the prediction right (error 0), the looked rule stops well before the cap — median
    stop at most 15 repeats, rarely at MAX_REPS — and 1,000 simulated confirmations still cover at least 95% (seen:
    median 13, 0.2% at the cap, 99.7%). The negative control on the same data: no rule (every confirmation runs to
    MAX_REPS, a fixed sample size) fails the stopping check."""
    coverage, median_stop, capped = _rule_checks("looked")
    assert coverage >= 0.95 and median_stop <= 15 and capped <= 0.05, (coverage, median_stop, capped)
    _, median_stop, capped = _rule_checks("never", trials=200)
    assert not (median_stop <= 15 and capped <= 0.05)  # no rule: the same check on stops fails


def test_paired_error_edges():
    assert paired_error([], []) == (None, None)
    f, h = paired_error([(24.0, 100.0)] * 2, [10.0, 10.0])
    assert f == pytest.approx(100.0 / (24.0 * 10.0)) and h is None  # too few repeats for an interval
    f, h = paired_error([(24.0, 100.0)] * 4, [10.0] * 4)
    assert h == pytest.approx(0.0)
    with pytest.raises(ValueError):
        paired_error([(1.0, 1.0)], [])
    # the paired interval is what the verdict judges when given
    out = agreement(0.01, 1.01, [0.5, 1.5], 6, paired_half=0.02)
    assert out is not None and out["state"] == "agrees" and out["interval_kind"] == "paired"
    assert out["interval"] == pytest.approx([1.01 * 0.98 - 1, 1.01 * 1.02 - 1])
    assert agreement(0.01, 1.01, [0.5, 1.5], 6)["state"] == "too_little_data"
