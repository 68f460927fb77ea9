"""A run's time budget: a search trial starts whenever search time is left and the deadline ends it;
a queued run (tuner/study/run/reserve.py: MeasureDeadline) starts only when it can finish."""

from __future__ import annotations

import datetime
from pathlib import Path

import optuna
import pytest
from conftest import HARD_OPTIONS, synthetic_experiment, write

from tuner.study.record import TrialRecord, result_attrs
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.run.runner import run_study
from tuner.study.scoring.censoring import miss_value
from tuner.study.storage.deadline import Deadline
from tuner.train.result import Outcome, TrialResult


def capped_experiment(tmp_path: Path, timeout_s: float, cap_s: float) -> Path:
    """Trials that never reach the target, so each runs to its cap."""
    path = synthetic_experiment(
        tmp_path / "capped.yaml", "confirm: {after_search: false}\npruner: {name: none, cap_slack: null}\n", n_trials=1
    )
    text = path.read_text().replace("n_trials: 1", f"timeout_s: {timeout_s}").replace("cap_s: 2.0", f"cap_s: {cap_s}")
    text = text.replace("target: 0.9", "target: 0.99").replace("task: synthetic", f"task: synthetic\ntask_options: {HARD_OPTIONS}")
    return write(path, text)


def test_a_budget_shorter_than_the_cap_starts_a_trial_the_deadline_ends(tmp_path: Path) -> None:
    # A cap is a limit on a trial, never a reason not to start one (it stalled studies at 0 trials).
    experiment = load_experiment(capped_experiment(tmp_path, timeout_s=1.0, cap_s=2.0))
    study = run_study(experiment)
    assert study.trials
    first = TrialRecord.of(study.trials[0])
    assert first.outcome is Outcome.TIMEOUT and first.result.reason == "the search's time ran out during this trial"
    assert first.value == pytest.approx(miss_value(first.result.goal, first.result.best_metric, 2.0))  # censored, as at the cap


def test_trials_start_while_search_time_is_left_and_the_run_ends_in_time(tmp_path: Path) -> None:
    experiment = load_experiment(capped_experiment(tmp_path, timeout_s=4.0, cap_s=0.5))
    prepared = prepare(experiment)  # the budget runs from the study's start, after preparing
    start = datetime.datetime.now()
    study = run_study(experiment, prepared=prepared)
    elapsed = (datetime.datetime.now() - start).total_seconds()
    trials = sorted(study.get_trials(), key=lambda t: t.number)
    assert trials
    # None started past the deadline, give or take what this machine takes to open the study and
    # create a trial (the first trial's start measures it: a second idle, more beside busy processes).
    slack = max(1.0, (trials[0].datetime_start - start).total_seconds())
    assert all((t.datetime_start - start).total_seconds() <= 4.0 + slack for t in trials)
    assert elapsed < 4.0 + slack + 0.5  # and the run ended in time


def test_the_longest_trial_so_far_counts_when_it_exceeded_the_cap() -> None:
    study = optuna.create_study()
    deadline = Deadline(10.0, cap_s=2.0)
    assert deadline.trial_needs(study) == 2.0
    took = TrialResult(Outcome.TIMEOUT, "no target by the cap", 0.9, wall_s=3.5)
    study.add_trial(optuna.trial.create_trial(value=1.0, user_attrs=result_attrs(took)))
    assert deadline.trial_needs(study) == 3.5
    assert Deadline(3.0, cap_s=2.0).fits_another(study) is False
