"""The Target value object, and the first crossing of a minimized metric in TimeToTarget (a fake clock)."""

from __future__ import annotations

import math

import pytest
from conftest import FakeTimer

from tuner.train.result import Outcome, TrialResult
from tuner.train.target import Target, as_target, inferred_direction
from tuner.train.time_to_target import TimeToTarget

LOSS = Target(1.6, "loss", "minimize")


def test_reached_better_gap_and_best_follow_the_direction() -> None:
    assert LOSS.reached(1.6) and LOSS.reached(1.2) and not LOSS.reached(1.61) and not LOSS.reached(math.nan)
    assert LOSS.better(2.1, 3.5) and not LOSS.better(3.5, 2.1) and LOSS.better(3.0, None) and not LOSS.better(math.nan, 3.0)
    assert LOSS.gap(2.1) == pytest.approx(0.5) and LOSS.gap(1.0) == 0.0 and LOSS.gap(None) == math.inf
    assert LOSS.best([3.0, math.nan, 2.1, None, 2.5]) == 2.1 and LOSS.best([]) == math.inf
    assert LOSS.running_best([3.0, math.nan, 2.5, 2.8]) == [3.0, 3.0, 2.5, 2.5]
    accuracy = as_target(0.9)
    assert accuracy == Target(0.9, "accuracy", "maximize") and accuracy.reached(0.9) and accuracy.best([0.2, 0.5]) == 0.5
    assert LOSS.describe() == "loss <= 1.6" and accuracy.describe() == "accuracy >= 0.9"


def test_errors_are_lower_is_better_in_either_direction() -> None:
    accuracy = Target(0.9)
    assert accuracy.error(0.7) == pytest.approx(0.3) and accuracy.error(-math.inf) == 1.0  # as 1 - accuracy always was
    assert LOSS.error(2.1) == 2.1 and LOSS.error(math.inf) > LOSS.error(1e9)
    assert LOSS.from_error(LOSS.error(2.1)) == 2.1 and accuracy.from_error(accuracy.error(0.4)) == pytest.approx(0.4)


def test_the_miss_gap_keeps_an_accuracy_linear_and_bounds_any_other_metric() -> None:
    assert Target(0.9).miss_gap(0.6) == pytest.approx(0.3) and Target(0.9).miss_gap(None) == pytest.approx(0.9)
    near, far = LOSS.miss_gap(2.1), LOSS.miss_gap(3.5)
    assert 0 < near < far < 1 and LOSS.miss_gap(1e12) < 1 == LOSS.miss_gap(None)
    assert Target(30.0, "bleu", "maximize").miss_gap(20.0) < Target(30.0, "bleu", "maximize").miss_gap(5.0)


def test_a_name_implies_its_direction_or_none() -> None:
    assert inferred_direction("loss") == inferred_direction("val_loss") == inferred_direction("top1_error") == "minimize"
    assert inferred_direction("accuracy") == inferred_direction("val_acc") == "maximize"
    assert inferred_direction("energy") is None and inferred_direction("glossary") is None
    with pytest.raises(ValueError, match="direction must be one of maximize, minimize"):
        Target(1.0, "loss", "down")


def test_the_first_crossing_of_a_minimized_metric_is_the_first_value_at_or_below_the_target() -> None:
    timer = FakeTimer()
    tt = TimeToTarget(target=LOSS, eval_every_samples=100, cap_s=100.0, clock="train", timer=timer)
    tt.start()
    tt.training_started()
    ended = []
    for loss in (3.4, 2.6, 1.9, 1.6, 1.2):
        timer.advance(1.0)
        assert tt.step(100)
        ended.append(tt.evaluate(loss, loss=loss))
        if ended[-1]:
            break
    r = tt.result()
    assert ended == [False, False, False, True] and r.outcome is Outcome.REACHED
    assert r.samples_to_target == 400 and r.train_s_to_target == pytest.approx(4.0) and r.best_metric == 1.6
    assert r.goal == LOSS and r.to_attrs()["target"] == 1.6 and TrialResult.from_attrs(r.to_attrs()).goal == LOSS
    assert r.reason == "reached 1.6000 <= 1.6 at 400 samples"


def test_a_stored_target_without_a_metric_is_an_accuracy_to_reach() -> None:
    assert Target.stored({"target": 0.8}) == Target(0.8, "accuracy", "maximize")
    assert Target.stored({"target": 1.6, "metric": "loss", "direction": "minimize"}) == Target(1.6, "loss", "minimize")
