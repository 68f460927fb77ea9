"""Racing and confirmation of a minimized metric: the runs that reached a loss target, counted
by the direction. Each run's outcome is decided by TimeToTarget on a made-up loss curve (a fake
clock); the runs are stored in an in-memory study as the runner stores them."""

from __future__ import annotations

import optuna
from conftest import FakeTimer
from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from tuner.study.record import CONFIG, CONFIRM_OF, RACE_OF, SEED, TrialRecord, records, result_attrs
from tuner.study.reruns.confirmation import confirmed
from tuner.study.reruns.racing import configurations
from tuner.train.result import TrialResult
from tuner.train.target import Target
from tuner.train.time_to_target import TimeToTarget

LOSS = Target(1.6, "loss", "minimize")
CAP = 10.0
LR = {"lr": FloatDistribution(1e-3, 1e-1, log=True)}


def run(losses: list[float]) -> TrialResult:
    """A trial evaluated once a second with these held-out losses, stopped at the first at or below 1.6."""
    timer = FakeTimer()
    tt = TimeToTarget(target=LOSS, eval_every_samples=100, cap_s=CAP, clock="train", max_samples=100 * len(losses), timer=timer)
    tt.start()
    tt.training_started()
    for loss in losses:
        timer.advance(1.0)
        tt.step(100)
        if tt.evaluate(loss, loss=loss):
            break
    return tt.result()


def add(study: optuna.Study, lr: float, losses: list[float], **marks: int) -> int:
    r = run(losses)
    value = r.train_s_to_target if r.reached else CAP * (1 + LOSS.miss_gap(r.best_metric))
    attrs = {**result_attrs(r), CONFIG: {"optimizer": "adam", "lr": lr}, SEED: len(study.trials), **marks}
    study.add_trial(create_trial(params={"lr": lr}, distributions=LR, value=value, user_attrs=attrs))
    return study.trials[-1].number


def test_confirmation_counts_the_seeds_that_reached_the_loss_target() -> None:
    study = optuna.create_study(direction="minimize")
    original = add(study, 0.01, [3.0, 2.0, 1.5])
    add(study, 0.01, [3.1, 1.9, 1.6], **{CONFIRM_OF: original})  # at the target: reached
    add(study, 0.01, [2.9, 1.8, 1.55], **{CONFIRM_OF: original})
    add(study, 0.01, [3.2, 2.2, 1.7, 1.65], **{CONFIRM_OF: original})  # never at or below 1.6: missed
    assert [r.outcome.value for r in records(study)] == ["reached", "reached", "reached", "timeout"]
    (strict,) = confirmed(study, "all")
    (lenient,) = confirmed(study, "majority")
    assert (strict.reached, strict.n, strict.eligible) == (2, 3, False)
    assert lenient.eligible and lenient.median == 3.0


def test_racing_counts_a_configuration_reached_by_its_lower_losses() -> None:
    study = optuna.create_study(direction="minimize")
    first = add(study, 0.02, [2.5, 1.4])
    add(study, 0.02, [2.6, 1.8, 1.5], **{RACE_OF: first})
    add(study, 0.02, [2.7, 2.4, 2.2, 2.1], **{RACE_OF: first})  # a miss: counted in the median, not as a reach
    add(study, 0.005, [3.5, 3.4, 3.3])  # another configuration that never reached 1.6: not listed
    (raced,) = configurations(records(study))
    assert raced.raced and raced.reached == 2 and len(raced.values) == 3 and raced.fastest.number == first
    assert TrialRecord.of(study.trials[first]).result.goal == LOSS  # the stored result says what it aimed at
