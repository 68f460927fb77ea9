"""Failures inside training are trial outcomes: the study records them and goes on."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import DEFAULT_SPACE, write
from optuna.trial import TrialState

from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.objective import SAME_FAILURES_TO_STOP, StudyFailed
from tuner.study.run.opening import open_study
from tuner.study.run.runner import run_study

# The width picks how the user's model misbehaves, so enqueued trials choose their failure.
FLAKY = """
from torch import nn

from tuner.tasks.synthetic import synthetic_task

MODES = {0.25: "oom", 0.5: "nan", 0.75: "bug"}


class Flaky(nn.Module):
    def __init__(self, inner, mode):
        super().__init__()
        self.inner, self.mode = inner, mode

    def forward(self, x):
        if self.training and self.mode == "oom":
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        if self.training and self.mode == "bug":
            raise ValueError("shape mismatch in layer 3\\nthe rest of a long message")
        out = self.inner(x)
        return out * float("nan") if self.mode == "nan" else out


def make():
    task = synthetic_task()
    base = task.build_model
    task.build_model = lambda width: Flaky(base(width), MODES.get(width, "ok"))
    return task
"""


@pytest.fixture
def flaky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(tmp_path / "usercode" / "flaky_task.py", FLAKY)
    monkeypatch.syspath_prepend(str(tmp_path / "usercode"))
    override = "{precision: fp32, optimizer: adam, schedule: constant, lr: 0.01, batch_size: 64, width: {choices: [0.25, 0.5, 0.75, 1.0]}}"
    return write(
        tmp_path / "flaky.yaml",
        f"""
        name: flaky
        task: flaky_task:make
        search_space:
          file: {DEFAULT_SPACE}
          override: {override}
        objective: {{target: 0.9, eval_every_samples: 256, cap_s: 2.0}}
        pruner: {{name: none, cap_slack: null}}
        confirm: {{after_search: false}}
        budget: {{n_trials: 10}}
        trainer: {{threads: 1}}
        storage: sqlite:///study.db
        """,
    )


def enqueue(path: Path, widths: list[float]) -> None:
    study = open_study(load_experiment(path))
    for width in widths:
        study.enqueue_trial({"width": width})


def test_oom_divergence_and_a_bug_are_recorded_and_the_study_goes_on(flaky: Path) -> None:
    enqueue(flaky, [0.25, 1.0, 0.5, 0.75, 1.0, 0.25])
    experiment = load_experiment(flaky).with_overrides(n_trials=5)
    run_study(experiment)
    trials = optuna.load_study(study_name="flaky", storage=experiment.storage).trials
    outcomes = [(t.params["width"], t.user_attrs["outcome"], t.state) for t in trials if "race_of" not in t.user_attrs]  # race runs on top
    assert outcomes == [
        (0.25, "oom", TrialState.COMPLETE),  # a result: censored, and the study goes on
        (1.0, "reached", TrialState.COMPLETE),
        (0.5, "diverged", TrialState.COMPLETE),
        (0.75, "failed", TrialState.FAIL),  # says nothing about the configuration: not counted
        (1.0, "reached", TrialState.COMPLETE),
        (0.25, "oom", TrialState.COMPLETE),  # the fifth finished trial
    ]
    by_width = {t.params["width"]: t.user_attrs["reason"] for t in trials}
    assert by_width[0.25] == "out of memory: CUDA out of memory. Tried to allocate 20.00 GiB"
    assert by_width[0.5].startswith("non-finite")
    assert by_width[0.75] == "ValueError: shape mismatch in layer 3"  # the first line only


def test_failures_that_differ_do_not_stop_the_study(flaky: Path) -> None:
    enqueue(flaky, [0.75, 0.25, 0.75, 0.5, 0.75, 1.0])
    run_study(load_experiment(flaky).with_overrides(n_trials=3))
    trials = optuna.load_study(study_name="flaky", storage="sqlite:///study.db").get_trials(states=(TrialState.COMPLETE, TrialState.FAIL))
    searched = [t for t in trials if "race_of" not in t.user_attrs]  # race runs of the one that reached come on top
    assert [t.user_attrs["outcome"] for t in searched] == ["failed", "oom", "failed", "diverged", "failed", "reached"]


def test_every_trial_failing_the_same_way_stops_the_study_with_that_error(flaky: Path) -> None:
    enqueue(flaky, [0.75] * (SAME_FAILURES_TO_STOP + 2))
    with pytest.raises(StudyFailed, match=f"{SAME_FAILURES_TO_STOP} trials in a row failed with: ValueError: shape mismatch in layer 3$"):
        run_study(load_experiment(flaky))
    trials = optuna.load_study(study_name="flaky", storage="sqlite:///study.db").trials
    assert [t.state for t in trials].count(TrialState.FAIL) == SAME_FAILURES_TO_STOP


def test_an_own_loop_that_diverges_every_time_is_a_study_of_results_not_a_failed_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A language model at a high learning rate diverges: a result, scored as a miss, never three failures in a row."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "fixtures" / "own_job"))
    override = "{precision: fp32, optimizer: adam, schedule: constant, batch_size: 64, width: 0.5}"
    path = write(
        tmp_path / "diverging.yaml",
        f"""
        name: diverging
        task: own_job_mod:diverging_loop
        search_space:
          file: {DEFAULT_SPACE}
          override: {override}
        objective: {{metric: loss, target: 0.1, eval_every_samples: 256, cap_s: 5.0}}
        sampler: {{name: random}}
        pruner: {{name: none, cap_slack: null}}
        confirm: {{after_search: false}}
        race: null
        budget: {{n_trials: {SAME_FAILURES_TO_STOP + 1}}}
        trainer: {{threads: 1}}
        storage: sqlite:///{tmp_path / "study.db"}
        """,
    )
    run_study(load_experiment(path))  # no StudyFailed
    trials = optuna.load_study(study_name="diverging", storage=f"sqlite:///{tmp_path / 'study.db'}").trials
    assert [(t.state, t.user_attrs["outcome"]) for t in trials] == [(TrialState.COMPLETE, "diverged")] * (SAME_FAILURES_TO_STOP + 1)
    assert all(t.user_attrs["reason"].startswith("non-finite held-out metric") for t in trials)
    assert all(t.value is not None and t.value >= 5.0 for t in trials)  # censored: at least the cap
