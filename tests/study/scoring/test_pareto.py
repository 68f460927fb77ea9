"""The Pareto front of a study of several objectives, on made-up trials in an in-memory study (nothing trains)."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.study import record, study_record
from tuner.study.record import TrialRecord
from tuner.study.reruns.confirmation import candidates
from tuner.study.scoring.pareto import (
    Point,
    dominates,
    knee,
    non_dominated,
    pareto_candidates,
    pick,
    search_front,
    study_front,
    time_to_beat,
)
from tuner.study.stopping.incumbent import front_incumbent

NAMES = ("time", "model_size")
LR = {"lr": FloatDistribution(1e-4, 1.0, log=True)}


def pareto_study(require: str = "all") -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["minimize", "minimize"])
    study_record.write_definition(
        study, {"minimize": list(NAMES)}, {"objective": {"minimize": list(NAMES)}, "confirm": {"require": require}}
    )
    return study


def add(study: optuna.Study, lr: float, time: float, size: float, outcome: str = "reached", **extra: object) -> int:
    """A finished trial; ``lr`` makes its configuration (two trials with one lr share it)."""
    attrs = {"config": {"optimizer": "adam", "lr": lr}, "outcome": outcome, "reason": "", "target": 0.9, **extra}
    study.add_trial(create_trial(params={"lr": lr}, distributions=LR, values=[time, size], user_attrs=attrs))
    return study.trials[-1].number


def numbers(points: list[Point]) -> list[int]:
    return [p.trial.number for p in points]


def test_dominance_is_strict_on_one_objective_and_weak_on_the_rest() -> None:
    assert dominates((1.0, 2.0), (1.0, 3.0)) and dominates((1.0, 2.0), (2.0, 3.0))
    assert not dominates((1.0, 2.0), (1.0, 2.0))  # equal points stand side by side
    assert not dominates((1.0, 3.0), (2.0, 2.0)) and not dominates((2.0, 2.0), (1.0, 3.0))


def test_the_search_front_keeps_non_dominated_reached_trials_only() -> None:
    study = pareto_study()
    fast = add(study, 0.01, 1.0, 4000)
    small = add(study, 0.02, 3.0, 1000)
    middle = add(study, 0.03, 2.0, 2000)
    add(study, 0.04, 2.5, 2500)  # dominated by the middle one
    add(study, 0.05, 9.0, 500, "timeout")  # smaller than all, but it missed the target
    add(study, 0.06, 0.5, 100, "reached", confirm_of=0, seed=100_000)  # a confirmation run is not a search point
    front = search_front(study)
    assert numbers(front) == [fast, middle, small]  # by time
    for p in front:
        assert not any(dominates(q.values, p.values) for q in front)


def test_a_configuration_drawn_twice_counts_by_its_medians() -> None:
    study = pareto_study()
    first = add(study, 0.01, 1.0, 1000)
    add(study, 0.01, 3.0, 1000)
    add(study, 0.01, 2.0, 1000)
    (point,) = search_front(study)
    assert point.trial.number == first and point.values == (2.0, 1000) and point.seeds == 3


def test_pick_by_objective_knee_or_trial_number() -> None:
    study = pareto_study()
    fast = add(study, 0.01, 1.0, 4000)
    add(study, 0.02, 1.2, 1200)  # near the ideal corner: the knee
    small = add(study, 0.03, 4.0, 1000)
    front = search_front(study)
    assert pick(front, "time", NAMES).trial.number == fast
    assert pick(front, "model_size", NAMES).trial.number == small
    assert pick(front, "knee", NAMES).trial.number == 1 == knee(front).trial.number
    assert pick(front, str(small), NAMES).trial.number == small
    with pytest.raises(ValueError, match=r"time, model_size, knee or a trial number on the front \(0, 1, 2\)"):
        pick(front, "energy", NAMES)
    with pytest.raises(ValueError):
        pick(front, "7", NAMES)  # not on the front


def test_confirmation_spreads_its_candidates_along_the_front() -> None:
    study = pareto_study()
    for i in range(5):  # a front of five points, time rising as size falls
        add(study, 0.01 * (i + 1), 1.0 + i, 5000 - 1000 * i)
    assert [r.number for r in pareto_candidates(study, 3)] == [0, 2, 4]  # both ends and the middle
    assert [r.number for r in candidates(study, 3)] == [0, 2, 4]  # what confirmation.py queues
    assert [r.number for r in pareto_candidates(study, 9)] == [0, 1, 2, 3, 4]
    assert [r.number for r in pareto_candidates(study, 1)] == [knee(search_front(study)).trial.number]


def test_the_confirmed_front_replaces_the_search_front_with_medians_over_seeds() -> None:
    study = pareto_study()
    fast = add(study, 0.01, 1.0, 4000)
    small = add(study, 0.02, 3.0, 1000)
    assert not study_front(study)[0].confirmed
    for seed, t in ((100_000, 1.4), (100_001, 1.6)):
        add(study, 0.01, t, 4000, confirm_of=fast, seed=seed)
    add(study, 0.02, 3.1, 1000, confirm_of=small, seed=100_000)
    add(study, 0.02, 20.0, 1000, "timeout", confirm_of=small, seed=100_001)  # missed on one seed
    front = study_front(study)
    assert numbers(front) == [fast] and front[0].confirmed and front[0].values == (1.5, 4000)  # `all` drops the one that missed
    lenient = pareto_study("majority")
    for trial in study.trials:
        lenient.add_trial(trial)
    assert numbers(study_front(lenient)) == [fast]  # 1 of 2 is no majority either


def test_capping_on_a_front_beats_only_points_no_larger() -> None:
    study = pareto_study()
    add(study, 0.01, 1.0, 4000)
    add(study, 0.02, 3.0, 1000)
    assert time_to_beat(study, {"model_size": 4000}) == (1.0, 0)
    assert time_to_beat(study, {"model_size": 2000}) == (3.0, 1)  # only the small point is as small
    assert time_to_beat(study, {"model_size": 500}) is None  # smaller than every point: it may join the front at any time
    assert time_to_beat(study, {}) is None  # the other objective unknown: nothing caps it
    best = front_incumbent({"model_size": 2000})(study)
    assert (best.value, best.number) == (3.0, 1) and "Pareto front with no larger model_size" in best.what


def test_records_of_several_objectives_carry_values_and_no_single_value() -> None:
    study = pareto_study()
    add(study, 0.01, 1.0, 4000)
    r = TrialRecord.of(study.trials[0])
    assert r.value is None and r.values == (1.0, 4000.0)
    assert record.best_reached(study) is None  # no single best: `tuner best` shows the front
    assert non_dominated([]) == []
    assert study.trials[0].state is TrialState.COMPLETE
