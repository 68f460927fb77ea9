"""The censoring rule: a reached trial beats every miss; among misses, closer is better."""

from __future__ import annotations

import itertools

import pytest

from tuner.study.experiment.load import Objective
from tuner.study.scoring.censoring import NOT_SCORED, objective_value
from tuner.train.result import Evaluation, Outcome, TrialResult

CAP = 10.0
TARGET = 0.9
ON = {clock: Objective(target=TARGET, cap_s=CAP, clock=clock) for clock in ("robust", "train", "wall")}


def reached(robust: float, train: float | None = None, wall: float | None = None) -> TrialResult:
    return TrialResult(
        Outcome.REACHED,
        "reached",
        TARGET,
        robust_s_to_target=robust,
        train_s_to_target=train if train is not None else robust,
        wall_s_to_target=wall if wall is not None else robust,
        best_metric=0.91,
        samples_to_target=1000,
    )


def miss(best: float | None, outcome: Outcome = Outcome.TIMEOUT) -> TrialResult:
    return TrialResult(outcome, "missed", TARGET, best_metric=best)


def test_reached_scores_its_time_on_the_chosen_clock() -> None:
    r = reached(robust=2.0, train=2.5, wall=4.0)
    assert objective_value(r, ON["robust"]) == 2.0
    assert objective_value(r, ON["train"]) == 2.5
    assert objective_value(r, ON["wall"]) == 4.0


def test_reached_past_the_cap_is_clamped_to_the_cap() -> None:
    # A crossing can be seen at the first evaluation after the cap; it still reached.
    assert objective_value(reached(robust=CAP * 1.3), ON["robust"]) == CAP


def test_miss_formula() -> None:
    assert objective_value(miss(0.7), ON["robust"]) == pytest.approx(CAP * (1 + (TARGET - 0.7)))
    assert objective_value(miss(0.0), ON["robust"]) == pytest.approx(CAP * (1 + TARGET))


def test_every_reached_trial_beats_every_miss() -> None:
    hits = [reached(t) for t in (0.01, 1.0, CAP * 0.999, CAP, CAP * 5)]
    misses = [
        miss(b, o)
        for b, o in itertools.product(
            (None, 0.0, 0.5, 0.8999, TARGET - 1e-9), (Outcome.TIMEOUT, Outcome.DIVERGED, Outcome.PRUNED, Outcome.OOM)
        )
    ]
    worst_hit = max(objective_value(r, ON["robust"]) for r in hits)
    best_miss = min(objective_value(r, ON["robust"]) for r in misses)
    assert worst_hit <= CAP < best_miss


def test_closer_miss_beats_farther_miss() -> None:
    values = [objective_value(miss(b), ON["robust"]) for b in (0.89, 0.8, 0.5, 0.1)]
    assert values == sorted(values)
    assert len(set(values)) == len(values)


def test_miss_with_no_evaluation_scores_as_zero_accuracy() -> None:
    # OOM at the first step: nothing was ever evaluated.
    none = objective_value(miss(None, Outcome.OOM), ON["robust"])
    assert none == objective_value(miss(0.0), ON["robust"])
    assert none > objective_value(miss(0.1), ON["robust"])


def test_miss_with_a_nan_metric_is_not_mistaken_for_a_hit() -> None:
    assert objective_value(miss(float("nan")), ON["robust"]) == objective_value(miss(None), ON["robust"]) > CAP


def test_miss_does_not_depend_on_the_clock() -> None:
    assert len({objective_value(miss(0.5), ON[clock]) for clock in ("robust", "train", "wall")}) == 1


def test_failed_and_interrupted_are_not_scored() -> None:
    # They say nothing about the configuration: the study records them as FAIL, unscored.
    assert set(NOT_SCORED) == {Outcome.FAILED, Outcome.INTERRUPTED}


def test_capped_scores_a_lower_bound_between_the_incumbent_and_the_misses() -> None:
    # Stopped at 3 s of robust time (30 steps x 0.1 s) because the incumbent needed 2.5 s, on
    # its way up (0.8 at 3 s, rising 0.1 per second): at least 3 s, ranked after faster hits
    # and before every miss; read back from a record (no curve kept) it extrapolates from its best.
    evs = [
        Evaluation(1000, 10, 0.7, None, None, 1.0, 1.2, 1.0),
        Evaluation(2000, 20, 0.7, None, None, 2.0, 2.6, 2.0),
        Evaluation(3000, 30, 0.8, None, None, 3.0, 3.4, 3.0),
    ]
    capped = TrialResult(
        Outcome.CAPPED,
        "passed the incumbent",
        TARGET,
        train_s=3.4,
        wall_s=4.0,
        steps=30,
        median_step_s=0.1,
        best_metric=0.8,
        evaluations=evs,
        bound_s=2.5 * 1.2,
    )
    assert objective_value(capped, ON["robust"]) == pytest.approx(3.0 + 0.1 / 0.1)
    assert objective_value(reached(2.5), ON["robust"]) < objective_value(capped, ON["robust"]) < objective_value(miss(0.8999), ON["robust"])
    stored = TrialResult(
        Outcome.CAPPED, "passed the incumbent", TARGET, train_s=3.4, wall_s=4.0, steps=30, median_step_s=0.1, best_metric=0.8, bound_s=3.0
    )
    assert objective_value(stored, ON["robust"]) == pytest.approx(3.0 + 0.1 * 3.0 / 0.8)


def test_a_loop_of_ones_own_passes_clock_and_cap_by_keyword() -> None:
    # The form README.md shows for a user's own training loop, without an experiment.
    for r in (reached(2.0, train=2.5), miss(0.7)):
        assert objective_value(r, clock="train", cap_s=CAP) == objective_value(r, ON["train"])
    with pytest.raises(TypeError):
        objective_value(miss(0.7), clock="robust")


# -- trials stopped at the incumbent ------------------------------------------------------------
def curve(times: list[float], metrics: list[float]) -> list[Evaluation]:
    return [Evaluation(100 * (i + 1), 10 * (i + 1), m, None, None, t, t, t) for i, (t, m) in enumerate(zip(times, metrics))]


def capped(times: list[float], metrics: list[float], bound: float) -> TrialResult:
    """A trial capped at its last evaluation against ``bound`` (incumbent x slack), robust = train here."""
    t = times[-1]
    return TrialResult(
        Outcome.CAPPED,
        "capped",
        TARGET,
        train_s=t,
        wall_s=t,
        steps=10 * len(times),
        median_step_s=t / (10 * len(times)),
        best_metric=max(metrics),
        evaluations=curve(times, metrics),
        bound_s=bound,
    )


def test_a_capped_trial_far_from_the_target_scores_worse_than_every_reached_trial() -> None:
    # Trial 73 of the issue: capped at 21% held-out accuracy when the incumbent needed 0.756 s.
    # Its extrapolated time passes the experiment's 6-s cap: it scores as the miss it is.
    default = Objective(target=TARGET, cap_s=6.0, clock="robust")
    low = capped([0.3, 0.6, 0.92], [0.12, 0.17, 0.21], bound=0.756 * 1.2)
    hits = [reached(t) for t in (0.756, 0.952, 0.980, 3.0, 6.0, 9.0)]
    assert objective_value(low, default) == pytest.approx(6.0 * (1 + TARGET - 0.21))
    assert objective_value(low, default) > max(objective_value(r, default) for r in hits)


def test_a_capped_trial_never_scores_better_than_the_incumbent_it_was_capped_against() -> None:
    incumbent = 0.756
    for metrics in ([0.5, 0.8, 0.89], [0.85, 0.88, 0.899], [0.2, 0.5, 0.87]):
        value = objective_value(capped([0.3, 0.6, 0.92], metrics, bound=incumbent * 1.2), ON["robust"])
        assert value >= incumbent * 1.2 > incumbent


def test_among_capped_trials_the_one_closer_to_the_target_scores_better() -> None:
    times = [0.3, 0.6, 0.92]
    values = [objective_value(capped(times, [m * 0.5, m * 0.9, m], bound=0.9), ON["robust"]) for m in (0.89, 0.85, 0.79, 0.5)]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_a_capped_trial_about_to_reach_scores_its_extrapolated_time() -> None:
    # Best accuracy rose 0.80 -> 0.88 over the second half (0.5 s): 0.02 more at 0.16/s is 0.125 s.
    value = objective_value(capped([0.5, 0.75, 1.0], [0.80, 0.84, 0.88], bound=0.9), ON["robust"])
    assert value == pytest.approx(1.0 + 0.02 * 0.5 / 0.08)


def test_a_capped_trial_whose_curve_is_flat_scores_as_a_miss() -> None:
    flat = capped([0.3, 0.6, 0.9], [0.85, 0.85, 0.85], bound=0.9)
    assert objective_value(flat, ON["robust"]) == pytest.approx(objective_value(miss(0.85), ON["robust"]))


def test_a_capped_trial_with_one_evaluation_extrapolates_from_the_origin() -> None:
    # 0.45 in 1 s from nothing: 0.9 needs at least 1 s more.
    assert objective_value(capped([1.0], [0.45], bound=1.0), ON["robust"]) == pytest.approx(2.0)
