"""SIGINT and SIGTERM: raised inside training, held elsewhere, and the trial is recorded."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment, write
from optuna.trial import TrialState

from tuner import signals
from tuner.study.hooks import StudyHooks
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study


def test_a_signal_outside_training_is_held_until_a_safe_point() -> None:
    with signals.handled():
        os.kill(os.getpid(), signal.SIGTERM)  # Optuna might be writing a trial now: do not raise here
        with pytest.raises(signals.Interrupted) as info:
            signals.raise_if_pending()
    assert info.value.exit_code == 143 and str(info.value) == "interrupted by SIGTERM"
    assert signals.exit_code(KeyboardInterrupt()) == 130


def test_a_signal_inside_training_raises_at_once() -> None:
    with signals.handled(), pytest.raises(signals.Interrupted) as info, signals.interruptible():
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("not reached")
    assert info.value.exit_code == 130


def test_a_second_signal_raises_even_where_the_first_was_held() -> None:
    with signals.handled(), pytest.raises(signals.Interrupted):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)  # a stuck process can still be stopped
        raise AssertionError("not reached")


def test_the_previous_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with signals.handled():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


class SignalAtFirstEvaluation(StudyHooks):
    def __init__(self) -> None:
        self.finished = []

    def on_evaluation(self, tt, ev):
        os.kill(os.getpid(), signal.SIGTERM)

    def trial_finished(self, trial, result, value):
        self.finished.append((trial.number, result.outcome.value, result.reason))


def test_sigterm_mid_trial_records_it_as_interrupted_and_tells_the_hooks(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "e.yaml", n_trials=3)
    noisy = path.read_text().replace("task: synthetic", "task: synthetic\ntask_options: {noise: 3.0}")  # best near 0.66
    experiment = load_experiment(write(path, noisy.replace("target: 0.9", "target: 0.999")))  # no trial ends before it is signalled
    hook = SignalAtFirstEvaluation()
    with signals.handled(), pytest.raises(signals.Interrupted):
        run_study(experiment, hooks=[hook])
    [trial] = optuna.load_study(study_name="e", storage=experiment.storage).trials
    assert trial.state is TrialState.FAIL
    assert trial.user_attrs["outcome"] == "interrupted" and trial.user_attrs["reason"] == "interrupted by SIGTERM"
    assert trial.user_attrs["samples"] > 0  # the result of the training so far, not an empty one
    assert hook.finished == [(0, "interrupted", "interrupted by SIGTERM")]
