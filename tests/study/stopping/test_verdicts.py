"""The study's stop rules answer verdicts on made-up curves, nothing trained: capping at the
incumbent, equal-time pruning, Optuna's pruners by name and the throughput screen each say
go on, or stop with the outcome, the reason and (for a trial that can no longer win) the
bound its score is floored at; none of them writes into the trainer."""

from __future__ import annotations

import math

import optuna
import pytest
from conftest import FakeTimer
from optuna.trial import create_trial

from tuner.study.experiment.load import Objective, Pruning
from tuner.study.stopping import EqualTimePruner, make_pruner
from tuner.study.stopping.hooks import PruningHooks
from tuner.study.stopping.incumbent import Best, capped
from tuner.train.curve import best_so_far, running_best
from tuner.train.result import Evaluation, Outcome
from tuner.train.screen import ScreenRule, ThroughputScreen
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import GO, Stop

TARGET = 0.9
OBJECTIVE = Objective(target=TARGET, eval_every_samples=100, cap_s=4.0, clock="robust")


def study_of(curves: list[tuple[list[float], list[float]]], pruner: optuna.pruners.BasePruner | None = None) -> optuna.Study:
    """Finished trials with these (times, metrics) curves; each reached when its last metric is at the target."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", pruner=pruner)
    for i, (times, metrics) in enumerate(curves):
        reached = metrics[-1] >= TARGET
        attrs = {
            "outcome": "reached" if reached else "timeout",
            "config": {"lr": 0.01 + i / 1000},
            "reason": "",
            "target": TARGET,
            "curve": {"robust_s": times, "train_s": times, "wall_s": times, "metric": metrics},
        }
        study.add_trial(create_trial(value=times[-1] if reached else 8.0, user_attrs=attrs))
    return study


def made_up(t: float, metric: float) -> Evaluation:
    return Evaluation(100, 10, metric, None, None, t, t, t, t)


def test_capping_goes_on_before_the_incumbent_x_slack_and_stops_with_that_bound() -> None:
    best = Best(1.0, 3)
    assert capped(1.19, best, 1.2, "robust") is GO
    assert capped(5.0, None, 1.2, "robust") is GO  # nothing reached yet: nothing to cap against
    stop = capped(1.2, best, 1.2, "robust")
    assert stop == Stop(
        Outcome.CAPPED,
        "robust clock at 1.200 s passed 1.2 x the best time to target so far, 1.000 s (trial 3): it can no longer win",
        bound_s=pytest.approx(1.2),
    )


def test_equal_time_pruning_answers_go_on_or_pruned_without_a_bound() -> None:
    # Five others reached 0.9 at 1 s, rising linearly from 0.1; this one trails at 0.5 s.
    others = [([0.25, 0.5, 0.75, 1.0], [0.3, 0.5, 0.7, 0.9])] * 5
    pruner = EqualTimePruner(bucket_s=0.1, min_trials=5)
    study = study_of(others, pruner)
    assert pruner.judge(study, 0.5, 0.55).verdict(50.0, "robust") is GO
    stop = pruner.judge(study, 0.5, 0.3).verdict(50.0, "robust")
    assert stop.outcome is Outcome.PRUNED and stop.bound_s is None
    assert stop.reason.startswith("best accuracy 0.3000 at 0.50 s (robust clock) is below 0.5000")


def test_pruning_hooks_answer_with_a_stop_and_write_nothing_into_the_trainer() -> None:
    study = study_of([([0.5, 1.0], [0.5, 0.9])])
    hooks = PruningHooks(Pruning(name="none", cap_slack=1.2), OBJECTIVE, refresh_s=0.0)
    hooks.study_started(study, None)
    hooks.trial_started(study.ask(), TrialConfig())
    timer = FakeTimer()
    tt = TimeToTarget(target=TARGET, eval_every_samples=100, cap_s=4.0, timer=timer)
    fields = dict(vars(tt))
    assert hooks.on_evaluation(tt, made_up(1.1, 0.5)) is GO
    assert hooks.stop_at() == pytest.approx(1.2)  # the question the trainer asks between evaluations
    stop = hooks.on_evaluation(tt, made_up(1.3, 0.6))
    assert stop.outcome is Outcome.CAPPED and stop.bound_s == pytest.approx(1.2)
    assert vars(tt) == fields and not tt.done  # a verdict, not a write: the trainer applies it


def test_optuna_pruners_by_name_answer_pruned_with_the_step() -> None:
    pruning = Pruning(name="median", cap_slack=None, bucket_s=0.1, warmup_s=0.0, min_trials=1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", pruner=make_pruner(pruning, OBJECTIVE))
    for _ in range(3):  # others at 0.1 + 0.9 per second, reported as 1 - best accuracy per 0.1-s bucket
        errors = {0: 1.0} | {k: 1 - min(0.9, 0.1 + 0.09 * k) for k in range(1, 11)}  # nothing evaluated at 0 s
        study.add_trial(create_trial(value=1.0, intermediate_values=errors, user_attrs={"outcome": "reached", "target": TARGET}))
    hooks = PruningHooks(pruning, OBJECTIVE)
    hooks.study_started(study, None)
    hooks.trial_started(study.ask(), TrialConfig())
    assert hooks.on_evaluation(None, made_up(0.05, 0.1)) is GO  # step 0: level with the others
    stop = hooks.on_evaluation(None, made_up(0.25, 0.1))  # step 2: flat while the others rose
    assert stop == Stop(Outcome.PRUNED, "median pruner at step 2 (0.20 s, robust clock): best accuracy so far 0.1000")


def test_the_screen_answers_screened_with_the_bound_it_was_screened_against() -> None:
    screen = ThroughputScreen(ScreenRule(bound_s=1.0, min_samples=2000, warmup_steps=0, steps=2, against="a made-up incumbent"))
    for step, t in enumerate((0.0, 0.065, 0.13)):
        screen.record(step, t)
    stop = screen.verdict(32, 0.0, "robust")
    assert stop.outcome is Outcome.SCREENED and stop.bound_s == 1.0 and "a made-up incumbent" in stop.reason
    fast = ThroughputScreen(ScreenRule(bound_s=1.0, min_samples=2000, warmup_steps=0, steps=2))
    for step, t in enumerate((0.0, 0.001, 0.002)):
        fast.record(step, t)
    assert fast.verdict(32, 0.0, "robust") is GO


def test_the_best_metric_so_far_passes_over_nan_wherever_it_is() -> None:
    assert best_so_far([math.nan, 0.5, 0.3]) == best_so_far([0.5, math.nan, 0.3]) == 0.5
    assert best_so_far([None, math.nan]) == -math.inf and best_so_far([], default=0.0) == 0.0
    assert running_best([0.2, math.nan, 0.1, 0.4]) == [0.2, 0.2, 0.2, 0.4]
    assert running_best([math.nan]) == [-math.inf]
