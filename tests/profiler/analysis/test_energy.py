"""analysis.energy on simulated recordings (``energy_recordings``: live, batched and stale counters with a known
truth). Each claim has its control: the per-window figure specscope printed before it checked its counters, or an
interval that ignores how the passes cluster."""

from __future__ import annotations

import pytest
from energy_recordings import Counter, per_window_mean, record

from specscope.profiler.analysis.energy import WIDEN_PERIODS, cadence, energy_figures, energy_text
from specscope.profiler.analysis.unit_intervals import ratio_interval


def test_live_counters_give_each_mode_its_energy_per_token_and_per_accepted_draft():
    windows, truth = record(noise=0.03, case_spread=0.1, seed=1)
    e = energy_figures(windows)
    assert e["available"] and e["domain"] == "package" and e["note"] is None and e["unit"] == "cases"
    assert [c["kind"] for c in e["cadence"]] == ["live", "live"]
    for mode in ("plain", "spec"):
        m = e[mode]
        assert m["joules_per_token"] == pytest.approx(truth.per_token(mode), rel=1e-9)
        lo, hi = m["joules_per_token_ci95"]
        assert lo < m["joules_per_token"] < hi
    assert e["plain"]["joules_per_accepted"] is None and e["plain"]["accepted"] is None
    assert e["spec"]["joules_per_accepted"] == pytest.approx(truth.joules[("spec", "package")] / truth.accepted)
    assert e["ratio"] == pytest.approx(truth.ratio(), rel=1e-9)
    assert e["ratio_ci95"][0] < e["ratio"] < e["ratio_ci95"][1]
    text = "\n".join(energy_text(e, 1.4))
    assert "J/accepted draft" in text and "energy ratio      0.75×" in text and "beside a 1.40× speedup" in text


def test_the_instrumented_pass_of_a_paired_phase_is_not_counted():
    """A paired speculative phase makes two passes; the energy per token is the measured (end-to-end) pass's. The
    control: counting both passes' windows (as one window around the phase did) gives another, wrong figure."""
    windows, truth = record(seed=2)
    e = energy_figures(windows)
    assert e["spec"]["windows"] == sum(1 for w in windows if w.get("pass") == "measured")
    assert e["spec"]["joules_per_token"] == pytest.approx(truth.per_token("spec"))
    both = [w for w in windows if w["mode"] == "spec"]
    wrong = sum(w["joules"] for w in both) / sum(w["tokens"] for w in both if w.get("pass") == "measured")
    assert wrong > 2.0 * truth.per_token("spec")


@pytest.mark.parametrize("phase", [0.1, 0.5, 0.9, 1.3, 1.7])
def test_a_batched_package_counter_is_refused_per_pass_and_the_live_gpu_counter_used(phase):
    """An M5 Max-like Mac: the package counter updates every 2 s, passes last 0.6-1 s, the GPU's stays live."""
    windows, truth = record(package=Counter("batched", 2.0, phase))
    e = energy_figures(windows)
    pkg = next(c for c in e["cadence"] if c["domain"] == "package")
    assert pkg["kind"] == "batched" and pkg["period_s"] == pytest.approx(2.0, rel=0.25)
    assert e["available"] and e["domain"] == "gpu" and e["note"].startswith("GPU only: the package counter updates in batches")
    assert e["plain"]["joules_per_token"] == pytest.approx(truth.per_token("plain", "gpu"))
    assert e["ratio"] == pytest.approx(truth.ratio("gpu"))
    # widened: the run spans ~26 updates, so the whole run's package power is read to within a batch at each end
    wd = e["widened"]
    assert wd is not None and wd["periods"] >= WIDEN_PERIODS
    assert wd["mean_power_w"] == pytest.approx(truth.span_j / truth.span_s, rel=2 / WIDEN_PERIODS)


def test_the_per_window_figure_of_a_batched_counter_is_wrong():
    """The negative control: the per-window package figure specscope printed before is off the truth — its energy
    ratio by more than 10% on average over the counter's phases, and by more than 30% at worst."""
    errors = []
    for phase in (0.1, 0.5, 0.9, 1.3, 1.7):
        windows, truth = record(package=Counter("batched", 2.0, phase))
        old = per_window_mean(windows, "spec") / per_window_mean(windows, "plain")
        errors.append(abs(old / truth.ratio() - 1))
    assert sum(errors) / len(errors) > 0.10 and max(errors) > 0.30
    # on live counters the same per-window figure is right: the control fails only where the counter is batched
    windows, truth = record()
    assert per_window_mean(windows, "plain") == pytest.approx(truth.per_token("plain"))


def test_a_short_run_on_a_batched_counter_is_not_widened():
    windows, _ = record(cases=1, repeats=2, package=Counter("batched", 2.0, 0.5))
    e = energy_figures(windows)
    assert e["widened"] is None and f"fewer than the {WIDEN_PERIODS}" in e["widened_reason"]
    assert "not widened" in "\n".join(energy_text(e))


def test_stale_counters_give_no_figure_where_the_old_one_printed_zero():
    """An M1 Max-like Mac: the counters update only at power-management events, so none moves during the run."""
    windows, _ = record(package=Counter("stale"), gpu=Counter("stale"))
    e = energy_figures(windows)
    assert not e["available"] and e["plain"] is None and e["ratio"] is None
    assert "did not move in any of" in e["reason"]
    text = "\n".join(energy_text(e))
    assert "J/token" not in text and "unavailable" in text
    assert per_window_mean(windows, "plain") == 0.0   # the control: the figure it would have printed


def test_both_counters_batched_is_unavailable_per_mode():
    windows, _ = record(package=Counter("batched", 2.0, 0.4), gpu=Counter("batched", 2.0, 1.1))
    e = energy_figures(windows)
    assert not e["available"] and e["plain"] is None and "batches" in e["reason"]
    assert e["widened"] is not None   # the whole run is still read, labelled as such


def test_windows_without_counters_predate_the_check():
    windows, _ = record()
    for w in windows:
        del w["energy_j"], w["counter_j"]
    e = energy_figures(windows)
    assert not e["available"] and "predate" in e["reason"]
    assert energy_figures([], "not available: not macOS")["reason"] == "not available: not macOS"


def test_cadence_counts_the_windows_a_counter_moved_in():
    windows, _ = record(cases=2, repeats=2, package=Counter("batched", 2.0, 0.5))
    c = cadence(windows, "package")
    assert c["windows"] == len(windows) and 0 < c["moved"] < c["windows"]
    assert cadence(windows, "gpu")["kind"] == "live"


def _coverage(figure, sims: int = 300) -> float:
    hits = 0
    for seed in range(sims):
        windows, _ = record(cases=6, repeats=3, case_spread=0.3, noise=0.05, seed=seed)
        lo, hi = figure(windows)
        hits += lo <= 0.375 <= hi   # the population's plain J/token: (20 W + 4 W) × 1 s ÷ 64 tokens
    return hits / sims


def test_the_energy_interval_covers_the_population_of_cases():
    """Cases differ in power (±30%) and passes are noisy: the interval by cases covers the population's J per token
    about 95% of the time. The control — each pass an independent unit, the cases' differences ignored — covers far
    less."""
    def by_cases(windows):
        return energy_figures(windows)["plain"]["joules_per_token_ci95"]

    def by_passes(windows):
        ws = [w for w in windows if w["mode"] == "plain"]
        return ratio_interval([[(w["energy_j"]["package"], w["tokens"])] for w in ws])

    assert 0.90 <= _coverage(by_cases) <= 0.99
    assert _coverage(by_passes) < 0.85


def test_the_energy_ratio_interval_covers_the_population_ratio():
    """The ratio's interval pairs a case's two modes (as the speedup's does): it covers the population's ratio
    ((26 + 4) W × 0.6 s) ÷ ((20 + 4) W × 1 s) = 0.75 about 95% of the time. The control: a ratio 10% off (0.825) is
    inside it rarely — the interval is not so wide that it would hold any ratio."""
    def coverage(truth, sims=300):
        hits = 0
        for seed in range(sims):
            windows, _ = record(cases=6, repeats=3, case_spread=0.3, noise=0.05, seed=seed)
            lo, hi = energy_figures(windows)["ratio_ci95"]
            hits += lo <= truth <= hi
        return hits / sims

    assert 0.90 <= coverage(0.75) <= 0.99
    assert coverage(0.825) < 0.2
