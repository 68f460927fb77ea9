"""Learning-rate schedules: warm-up, then decay to zero at the planned horizon."""

from __future__ import annotations

import math

import pytest

from tuner.train.schedules import decays_to_zero, lr_factor
from tuner.train.trial_config import SCHEDULES, TrialConfig

HORIZON = 10_000


def factor(schedule: str, warmup_frac: float = 0.1):
    return lr_factor(TrialConfig(schedule=schedule, warmup_frac=warmup_frac, horizon_samples=HORIZON))


def test_constant_never_decays() -> None:
    f = factor("constant")
    assert [f(s) for s in (0, 5_000, HORIZON, 10 * HORIZON)] == [1.0] * 4
    assert not decays_to_zero(TrialConfig(schedule="constant"))


@pytest.mark.parametrize("schedule", ["warmup_linear", "warmup_cosine"])
def test_warmup_then_decay_to_zero_at_the_horizon(schedule: str) -> None:
    f = factor(schedule)
    assert f(0) == 0.0
    assert f(500) == pytest.approx(0.5)  # halfway through the 1000-sample warm-up
    assert f(1000) == pytest.approx(1.0)  # the peak, at the end of the warm-up
    values = [f(s) for s in range(1000, HORIZON + 1, 500)]
    assert values == sorted(values, reverse=True)  # never rises after the warm-up
    assert f(HORIZON) == pytest.approx(0.0, abs=1e-12)
    assert f(2 * HORIZON) == pytest.approx(0.0, abs=1e-12)
    assert decays_to_zero(TrialConfig(schedule=schedule))


def test_linear_and_cosine_midpoints() -> None:
    mid = 1000 + (HORIZON - 1000) // 2
    assert factor("warmup_linear")(mid) == pytest.approx(0.5, abs=1e-3)
    assert factor("warmup_cosine")(mid) == pytest.approx(0.5, abs=1e-3)
    quarter = 1000 + (HORIZON - 1000) // 4
    assert factor("warmup_cosine")(quarter) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)), abs=1e-3)


def test_onecycle_starts_low_peaks_after_warmup_and_ends_at_zero() -> None:
    f = factor("onecycle", warmup_frac=0.3)
    assert f(0) == pytest.approx(1 / 25)
    assert f(3000) == pytest.approx(1.0)
    assert f(HORIZON - 1) < 1e-3
    assert f(HORIZON) == 0.0


def test_no_warmup_starts_at_the_peak() -> None:
    assert factor("warmup_linear", warmup_frac=0.0)(0) == pytest.approx(1.0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_schedule_stays_in_zero_to_one(schedule: str) -> None:
    f = factor(schedule)
    assert all(0.0 <= f(s) <= 1.0 for s in range(0, 2 * HORIZON, 97))


def wsd(decay_frac: float, warmup_frac: float = 0.1):
    return lr_factor(TrialConfig(schedule="warmup_stable_decay", warmup_frac=warmup_frac, decay_frac=decay_frac, horizon_samples=HORIZON))


def test_warmup_stable_decay_warms_up_holds_then_cools_down_as_one_minus_sqrt() -> None:
    f = wsd(decay_frac=0.2)  # warm-up to 1000 samples, the full rate to 8000, cooldown to 10000
    assert f(0) == 0.0 and f(500) == pytest.approx(0.5)  # warm-up
    assert [f(s) for s in (1000, 4000, 7999)] == [1.0, 1.0, 1.0]  # the stable plateau
    assert f(8000) == pytest.approx(1.0)  # the cooldown starts at the full rate
    assert f(8500) == pytest.approx(1 - math.sqrt(0.25))  # a quarter of the way: 1 - sqrt(1/4) = 0.5
    assert f(9800) == pytest.approx(1 - math.sqrt(0.9))
    assert f(HORIZON) == 0.0 and f(2 * HORIZON) == 0.0
    assert decays_to_zero(TrialConfig(schedule="warmup_stable_decay"))


def test_a_cooldown_longer_than_the_warmup_leaves_starts_where_the_warmup_ends() -> None:
    f = wsd(decay_frac=1.0, warmup_frac=0.2)
    assert f(1000) == pytest.approx(0.5)  # still warming up
    assert f(2000) == pytest.approx(1.0)  # the peak, and the cooldown starts at once
    assert f(6000) == pytest.approx(1 - math.sqrt(0.5))
    assert wsd(decay_frac=0.5, warmup_frac=1.0)(HORIZON - 1) == pytest.approx(1 - 1 / HORIZON)  # all warm-up, no division by zero
