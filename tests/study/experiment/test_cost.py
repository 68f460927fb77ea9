"""Cost to the target and the saving against the baseline."""

from __future__ import annotations

import pytest

from tuner.study.experiment.cost import Cost, saving


def test_cost_is_time_times_devices_times_price() -> None:
    cost = Cost(per_device_hour=2.5, currency="USD")
    assert cost.price(3600, devices=2) == pytest.approx(5.0)
    assert cost.price(36, devices=1) == pytest.approx(0.025)
    assert Cost().price(3600) is None
    assert Cost().device_hours(1800, 4) == pytest.approx(2.0)


def test_saving_per_hundred_runs() -> None:
    s = saving(Cost(per_device_hour=2.5), winner_s=36.0, winner_devices=1, baseline_s=108.0, baseline_devices=1)
    assert s.device_hours == pytest.approx(2.0)  # 72 s x 100 runs
    assert s.amount == pytest.approx(5.0)
    assert "2 device hours (5.00 USD) per 100 training runs" in s.sentence()
    assert saving(Cost(), 10, 2, 10, 1).device_hours < 0  # two devices for the same time: a loss
