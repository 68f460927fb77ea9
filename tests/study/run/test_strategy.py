"""``pruner.name: auto`` in a real study (tuner/study/run/strategy.py): the baseline runs first, its
length sets the budget in trial-lengths, and the budget rule's strategy runs the rest of the study."""

from __future__ import annotations

import io
from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment

from tuner.study.record import records
from tuner.study.reruns.confirmation import candidates
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.progress import Progress
from tuner.study.run.runner import run_study
from tuner.study.run.strategy import baseline_wall_s
from tuner.study.stopping.budget_rule import RULE
from tuner.study.stopping.equal_time import EqualTimePruner

# The default pruner (auto), with confirmation and racing on as the shipped experiments have them.
CONFIRM = "confirm: {after_search: true, top_k: 1, seeds: 2}\n"


@pytest.mark.e2e
def test_a_budget_of_a_few_trial_lengths_runs_successive_halving_and_no_confirmation(tmp_path: Path) -> None:
    # A target out of reach: every trial, the baseline too, runs to its 0.5-s cap on the wall clock (which bounds it
    # under any load), so a 10-s budget is at most 20 trial-lengths (a trial-length is the baseline's whole run).
    out_of_reach = "objective: {target: 0.99, eval_every_samples: 256, cap_s: 0.5, clock: wall}\n"
    extra = CONFIRM + "task_options: {noise: 3.0}\n" + out_of_reach + "budget: {timeout_s: 10}\n"
    experiment = load_experiment(synthetic_experiment(tmp_path / "small.yaml", extra, race=True))
    shown = io.StringIO()
    study = run_study(experiment, progress=Progress(stream=shown))
    trials = records(study)
    assert trials[0].is_baseline
    lengths = 10 / baseline_wall_s(study)
    assert lengths <= RULE.small_budget
    [line] = [line for line in shown.getvalue().splitlines() if line.startswith("pruner: auto = ")]
    assert line.startswith("pruner: auto = successive halving on time") and line.endswith(
        f"(budget of {lengths:.1f} trial-lengths, 1 worker; docs/stopping.md)"
    )
    assert isinstance(study.pruner, optuna.pruners.SuccessiveHalvingPruner)
    # No race runs, and nothing to decide between the search and the baseline: no trial reached the target.
    assert not any(r.is_confirmation or r.race_of is not None for r in trials)
    assert sum(r.is_baseline for r in trials) == 1  # nor the baseline's second seed
    assert sum(r.role == "trial" for r in trials) >= 2  # the search has the whole budget
    # Resumed with a budget as short: the baseline has run, so the rule applies before the first trial.
    shown = io.StringIO()
    again = run_study(experiment, progress=Progress(stream=shown))
    assert shown.getvalue().startswith("pruner: auto = successive halving on time")
    assert f"(budget of {lengths:.1f} trial-lengths" in shown.getvalue().splitlines()[0]
    assert isinstance(again.pruner, optuna.pruners.SuccessiveHalvingPruner)
    assert not any(r.is_confirmation or r.race_of is not None for r in records(again))


def test_without_a_time_budget_the_study_keeps_equal_time_pruning_and_confirms(tmp_path: Path) -> None:
    experiment = load_experiment(synthetic_experiment(tmp_path / "large.yaml", CONFIRM, n_trials=2))
    shown = io.StringIO()
    study = run_study(experiment, progress=Progress(stream=shown))
    assert "pruner: auto = equal-time pruning with capping, screening, racing and confirmation (no time budget" in shown.getvalue()
    assert isinstance(study.pruner, EqualTimePruner)
    trials = records(study)
    assert trials[0].is_baseline
    # Every top configuration is confirmed (none may reach the target when the baseline's time caps them all).
    assert {r.confirm_of for r in trials if r.is_confirmation} == {t.number for t in candidates(study, experiment.confirm.top_k)}
    assert sum(r.is_baseline for r in trials) == 2  # the baseline's second seed
