"""The censoring rule: a reached trial beats every miss; among misses, closer is better."""

from __future__ import annotations

import itertools

import pytest

from tuner.study.objective import NOT_SCORED, objective_value
from tuner.train.result import Outcome, TrialResult

CAP = 10.0
TARGET = 0.9


def reached(robust: float, train: float | None = None, wall: float | None = None) -> TrialResult:
    return TrialResult(
        Outcome.REACHED, "reached", TARGET, robust_s_to_target=robust, train_s_to_target=train if train is not None else robust,
        wall_s_to_target=wall if wall is not None else robust, best_metric=0.91, samples_to_target=1000,
    )


def miss(best: float | None, outcome: Outcome = Outcome.TIMEOUT) -> TrialResult:
    return TrialResult(outcome, "missed", TARGET, best_metric=best)


def test_reached_scores_its_time_on_the_chosen_clock() -> None:
    r = reached(robust=2.0, train=2.5, wall=4.0)
    assert objective_value(r, "robust", CAP) == 2.0
    assert objective_value(r, "train", CAP) == 2.5
    assert objective_value(r, "wall", CAP) == 4.0


def test_reached_past_the_cap_is_clamped_to_the_cap() -> None:
    # A crossing can be seen at the first evaluation after the cap; it still reached.
    assert objective_value(reached(robust=CAP * 1.3), "robust", CAP) == CAP


def test_miss_formula() -> None:
    assert objective_value(miss(0.7), "robust", CAP) == pytest.approx(CAP * (1 + (TARGET - 0.7)))
    assert objective_value(miss(0.0), "robust", CAP) == pytest.approx(CAP * (1 + TARGET))


def test_every_reached_trial_beats_every_miss() -> None:
    hits = [reached(t) for t in (0.01, 1.0, CAP * 0.999, CAP, CAP * 5)]
    misses = [miss(b, o) for b, o in itertools.product((None, 0.0, 0.5, 0.8999, TARGET - 1e-9), (Outcome.TIMEOUT, Outcome.DIVERGED, Outcome.PRUNED, Outcome.OOM))]
    worst_hit = max(objective_value(r, "robust", CAP) for r in hits)
    best_miss = min(objective_value(r, "robust", CAP) for r in misses)
    assert worst_hit <= CAP < best_miss


def test_closer_miss_beats_farther_miss() -> None:
    values = [objective_value(miss(b), "robust", CAP) for b in (0.89, 0.8, 0.5, 0.1)]
    assert values == sorted(values)
    assert len(set(values)) == len(values)


def test_miss_with_no_evaluation_scores_as_zero_accuracy() -> None:
    # OOM at the first step: nothing was ever evaluated.
    none = objective_value(miss(None, Outcome.OOM), "robust", CAP)
    assert none == objective_value(miss(0.0), "robust", CAP)
    assert none > objective_value(miss(0.1), "robust", CAP)


def test_miss_with_a_nan_metric_is_not_mistaken_for_a_hit() -> None:
    assert objective_value(miss(float("nan")), "robust", CAP) == objective_value(miss(None), "robust", CAP) > CAP


def test_miss_does_not_depend_on_the_clock() -> None:
    assert len({objective_value(miss(0.5), clock, CAP) for clock in ("robust", "train", "wall")}) == 1


def test_failed_and_interrupted_are_not_scored() -> None:
    # They say nothing about the configuration: the study records them as FAIL, unscored.
    assert set(NOT_SCORED) == {Outcome.FAILED, Outcome.INTERRUPTED}


def test_capped_scores_its_clock_at_the_stop_between_hits_and_misses() -> None:
    # Stopped at 3 s of robust time (30 steps x 0.1 s) because the incumbent needed 2.5 s:
    # its time to target is at least 3 s, which ranks it after faster hits but before every miss.
    capped = TrialResult(Outcome.CAPPED, "passed the incumbent", TARGET, train_s=3.4, wall_s=4.0, steps=30, median_step_s=0.1, best_metric=0.8)
    assert objective_value(capped, "robust", CAP) == pytest.approx(3.0)
    assert objective_value(capped, "train", CAP) == pytest.approx(3.4)
    assert objective_value(reached(2.5), "robust", CAP) < objective_value(capped, "robust", CAP) < objective_value(miss(0.8999), "robust", CAP)
