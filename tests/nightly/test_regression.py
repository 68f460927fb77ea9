"""Tonight against history: regressed only beyond the noise history itself shows."""

from __future__ import annotations

import pytest

from tuner.nightly.regression import MIN_HISTORY, MIN_TOLERANCE, judge, tolerance


def test_too_little_history_gives_no_verdict() -> None:
    verdict = judge(9.0, [1.0] * (MIN_HISTORY - 1))
    assert verdict.status == "no history" and not verdict.regressed
    assert "not judged yet" in verdict.describe()


def test_a_steady_history_uses_the_floor() -> None:
    history = [1.0, 1.0, 1.01, 0.99]
    assert tolerance(history) == MIN_TOLERANCE
    assert judge(1.05, history).status == "ok"
    assert judge(1.2, history).regressed
    assert judge(0.8, history).status == "improved"


def test_a_noisy_history_widens_the_tolerance() -> None:
    history = [1.0, 1.3, 0.8, 1.2, 0.9]  # median 1.0, MAD 0.2: three robust sigmas are 89%
    assert tolerance(history) == pytest.approx(3 * 1.4826 * 0.2, rel=1e-6)
    assert judge(1.5, history).status == "ok"  # +50% is within this history's noise
    assert judge(2.0, history).regressed


def test_nothing_reached_against_a_history_is_a_regression() -> None:
    verdict = judge(None, [1.0, 1.1, 0.9])
    assert verdict.regressed and "nothing reached the target" in verdict.describe()
