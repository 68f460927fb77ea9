"""A worker whose running trial another worker failed as stale (its heartbeat too old) goes on:
one line instead of Optuna's "Cannot tell a FAIL trial." ending the worker, and the study still
finishes its budget (tuner/study/storage/budget_loop.py: optimize)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment
from optuna.trial import TrialState

from tuner.study.hooks import StudyHooks
from tuner.study.record import finished_search_trials
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study


class FailedElsewhere(StudyHooks):
    """Plays the other worker: fails the chosen trials through a storage of its own while they run."""

    def __init__(self, url: str, numbers: set[int], when: str) -> None:
        self.other = optuna.storages.RDBStorage(url)
        self.numbers, self.when = numbers, when
        self.trial: optuna.Trial | None = None

    def trial_started(self, trial, config) -> None:
        self.trial = trial

    def _fail(self) -> None:
        if self.trial is not None and self.trial.number in self.numbers:
            self.other.set_trial_state_values(self.trial._trial_id, TrialState.FAIL)
            self.numbers.discard(self.trial.number)

    def on_evaluation(self, tt, ev) -> None:
        if self.when == "training":  # its next write to the storage is refused
            self._fail()

    def trial_finished(self, trial, result, value) -> None:
        if self.when == "ended":  # its result written, Optuna's tell refused
            self._fail()


@pytest.mark.parametrize("when", ["training", "ended"])
def test_a_trial_failed_by_another_worker_is_one_line_and_the_budget_still_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], when: str
) -> None:
    path = synthetic_experiment(tmp_path / f"stolen_{when}.yaml", n_trials=3)
    experiment = load_experiment(path)
    study = run_study(experiment, hooks=[FailedElsewhere(experiment.storage, {1}, when)])
    assert len(finished_search_trials(study)) == 3
    assert study.get_trials(deepcopy=False)[1].state is TrialState.FAIL
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "failed by another worker" in line]
    assert lines == [lines[0]] and lines[0].startswith("tuner: trial 1 was failed by another worker"), err
