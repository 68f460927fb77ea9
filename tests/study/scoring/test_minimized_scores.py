"""Censored scores for a minimized metric (a loss against 1.6), on made-up curves: nothing trains."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import create_trial

from tuner.study.experiment.load import Objective
from tuner.study.scoring.censoring import miss_value, objective_value
from tuner.train.result import Evaluation, Outcome, TrialResult

CAP = 6.0
OBJECTIVE = Objective(target=1.6, metric="loss", eval_every_samples=100, cap_s=CAP, clock="train")


def result(outcome: Outcome, losses: list[float], every: float = 0.4, bound_s: float | None = None) -> TrialResult:
    """A trial that evaluated ``losses`` every ``every`` seconds on the train clock."""
    evs = [Evaluation(100 * i, i, m, m, None, every * i, every * i, every * i) for i, m in enumerate(losses, start=1)]
    r = TrialResult(outcome, "", OBJECTIVE.goal, train_s=every * len(losses), steps=len(losses), evaluations=evs, bound_s=bound_s)
    r.best_metric = OBJECTIVE.goal.best(losses)
    if outcome is Outcome.REACHED:
        r.train_s_to_target = every * len(losses)
    return r


def test_the_objective_infers_minimize_for_a_loss() -> None:
    assert OBJECTIVE.direction == "minimize" and OBJECTIVE.stop_rule().target == OBJECTIVE.goal
    assert OBJECTIVE.goal.reached(1.6) and not OBJECTIVE.goal.reached(1.7)


def test_a_miss_nearer_the_target_scores_better_and_every_miss_scores_past_every_reach() -> None:
    near = objective_value(result(Outcome.TIMEOUT, [3.0, 2.1]), OBJECTIVE)
    far = objective_value(result(Outcome.TIMEOUT, [3.9, 3.5]), OBJECTIVE)
    assert CAP < near < far <= 2 * CAP
    assert near == pytest.approx(miss_value(OBJECTIVE.goal, 2.1, CAP))
    # A miss without any evaluation is the farthest; an accuracy keeps its linear gap.
    assert far < miss_value(OBJECTIVE.goal, None, CAP) == 2 * CAP
    assert miss_value(0.9, 0.6, CAP) == pytest.approx(CAP * 1.3)


def test_a_capped_trial_far_from_the_loss_target_scores_behind_every_reached_one_and_its_incumbent() -> None:
    study = optuna.create_study(direction="minimize")
    reached = [result(Outcome.REACHED, [2.4, 1.5], every=t / 2) for t in (1.0, 2.0, 5.0)]
    for r in reached:
        study.add_trial(create_trial(value=objective_value(r, OBJECTIVE), user_attrs={"outcome": "reached"}))
    incumbent = study.best_value
    # Stopped at 1.2 x the incumbent, at a loss of 3.0 and barely falling: it would not have reached 1.6 in the cap.
    capped = result(Outcome.CAPPED, [3.2, 3.1, 3.0], every=0.4, bound_s=1.2 * incumbent)
    value = objective_value(capped, OBJECTIVE)
    study.add_trial(create_trial(value=value, user_attrs={"outcome": "capped"}))
    assert value > max(t.value for t in study.trials if t.user_attrs["outcome"] == "reached") and value > CAP
    assert study.best_value == incumbent
    # One about to reach extrapolates to a time, still never better than the incumbent it was capped at.
    closing = objective_value(result(Outcome.CAPPED, [2.6, 2.0, 1.7], every=0.4, bound_s=1.2 * incumbent), OBJECTIVE)
    assert 1.2 * incumbent <= closing < CAP
    # A single evaluation of a loss says nothing about its rate (no known start): it scores as the miss it would be.
    assert objective_value(result(Outcome.CAPPED, [1.7], bound_s=1.2 * incumbent), OBJECTIVE) > CAP
