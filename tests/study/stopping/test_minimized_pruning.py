"""Equal-time pruning of a minimized metric (a loss), on made-up curves in in-memory studies."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState, create_trial

from tuner.study.experiment.load import Objective, Pruning
from tuner.study.stopping import EqualTimePruner, bucket_errors, make_pruner
from tuner.study.stopping.hooks import PruningHooks
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.target import Target
from tuner.train.trial_config import TrialConfig

LOSS = Target(1.6, "loss", "minimize")
OBJECTIVE = Objective(target=1.6, metric="loss", eval_every_samples=100, cap_s=4.0, clock="robust")
PRUNING = Pruning(warmup_s=0.3, bucket_s=0.1, min_trials=5, cap_slack=None)


def falling(rate: float, n: int = 40) -> tuple[list[float], list[float]]:
    """An evaluation every 0.1 s, the loss falling from 4.0 by ``rate`` per second (never below 1.0)."""
    times = [round(0.1 * (i + 1), 6) for i in range(n)]
    return times, [max(1.0, 4.0 - rate * t) for t in times]


def add_reached(study: optuna.Study, times: list[float], losses: list[float]) -> None:
    end = next(i + 1 for i, m in enumerate(losses) if m <= 1.6)
    times, losses = times[:end], losses[:end]
    values = dict(enumerate(bucket_errors(times, losses, 0.1, 0, 40, LOSS)))
    attrs = {"outcome": "reached", "curve": {"robust_s": times, "train_s": times, "wall_s": times, "metric": losses}}
    study.add_trial(create_trial(value=times[-1], user_attrs=attrs, intermediate_values=values))


def study_with_references() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="made-up", direction="minimize")
    for i in range(5):  # losses at 0.5 s: 2.75 to 2.71; all reach 1.6 near 1 s
        add_reached(study, *falling(2.5 + 0.02 * i))
    return study


def test_equal_time_prunes_the_trial_whose_loss_is_worst_at_the_same_time() -> None:
    study = study_with_references()
    pruner = EqualTimePruner(bucket_s=0.1, warmup_s=0.3, min_trials=5, target=LOSS)
    behind = pruner.judge(study, 0.5, 3.2)
    assert behind.prune and behind.reference == pytest.approx(2.73, abs=0.01)
    assert behind.reason(50, "robust").startswith("best loss 3.2000 at 0.50 s (robust clock) is above 2.7")
    assert not pruner.judge(study, 0.5, 2.2).prune  # a lower loss at the same time is ahead
    # Read back from what Optuna's interface sees: the loss itself, lower is better.
    trial = study.ask()
    for k, v in enumerate(bucket_errors([0.1, 0.3, 0.5], [3.9, 3.5, 3.2], 0.1, 0, 5, LOSS)):
        trial.report(v, k)
    assert pruner.prune(study, study._storage.get_trial(trial._trial_id))


def test_the_hooks_prune_a_slow_loss_and_let_a_fast_one_reach() -> None:
    study = study_with_references()
    study.pruner = make_pruner(PRUNING, OBJECTIVE)
    assert isinstance(study.pruner, EqualTimePruner) and study.pruner.target == OBJECTIVE.goal
    hooks = PruningHooks(PRUNING, OBJECTIVE, refresh_s=0.0)
    hooks.study_started(study, None)
    outcomes = []
    for rate in (0.5, 4.0):  # a loss falling at a fifth of the others' rate, then one falling faster
        trial = study.ask()
        hooks.trial_started(trial, TrialConfig())
        outcome = Outcome.TIMEOUT
        for i, (t, m) in enumerate(zip(*falling(rate)), start=1):
            if LOSS.reached(m):
                outcome = Outcome.REACHED
                break
            stop = hooks.on_evaluation(None, Evaluation(100 * i, i, m, m, None, t, t, t))
            if stop is not None:
                outcome = stop.outcome
                break
        outcomes.append(outcome)
        hooks.trial_finished(trial, TrialResult(outcome, "", Target(1.6, "loss", "minimize")), None)
        pruned = outcome is Outcome.PRUNED
        study.tell(trial, None if pruned else t, state=TrialState.PRUNED if pruned else TrialState.COMPLETE)
    assert outcomes == [Outcome.PRUNED, Outcome.REACHED]
