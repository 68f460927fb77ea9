"""Deciding runs: at a small budget a close call between the search and the baseline is re-run
on two seeds of both; a clear call either way, or a search with nothing that reached the target, is not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment
from optuna.trial import create_trial
from test_confirmation import LR, search_trial, sqlite_study

from tuner.errors import ConfigError
from tuner.simulate.repeats import Plan, budget_of, run_repeats
from tuner.simulate.simulation import Replay
from tuner.simulate.table import load_table
from tuner.study.experiment.load import Confirm
from tuner.study.experiment.settings import Budget
from tuner.study.record import baseline_attrs
from tuner.study.reruns.confirmation import confirmation_seeds, measured_seeds, missing_runs, settled
from tuner.study.run.experiment_file import load_experiment

REPO = Path(__file__).resolve().parents[3]
DECIDING = Confirm(top_k=1, seeds=2, budget_share=0.0, clear_margin=1.25)


def baseline_run(study: optuna.Study, value: float) -> None:
    """The baseline's first run, on the first confirmation seed."""
    attrs = {**baseline_attrs({"optimizer": "adam", "lr": 0.01}, confirmation_seeds(0, 1)[0]), "outcome": "reached"}
    study.add_trial(create_trial(params={"lr": 0.01}, distributions=LR, value=value, user_attrs=attrs))


def test_a_close_call_is_re_run_on_both_seeds_and_a_clear_win_is_not(tmp_path: Path) -> None:
    study = sqlite_study(tmp_path)
    baseline_run(study, 2.0)
    # Nothing reached the target in the search yet: nothing to decide, nothing kept for it.
    assert settled(study, DECIDING) and missing_runs(study, DECIDING, 0) == []
    assert measured_seeds(study, DECIDING, 0) == confirmation_seeds(0, 1)
    close = search_trial(study, 0.03, 1.7)  # 1.18x faster than the baseline's run: within the margin
    assert not settled(study, DECIDING)
    assert [(t.number, seed) for t, seed in missing_runs(study, DECIDING, 0)] == [(close, s) for s in confirmation_seeds(0, 2)]
    assert measured_seeds(study, DECIDING, 0) == confirmation_seeds(0, 2)  # the baseline's second seed too
    search_trial(study, 0.05, 1.5)  # 1.33x: a clear win
    assert settled(study, DECIDING) and missing_runs(study, DECIDING, 0) == []
    assert measured_seeds(study, DECIDING, 0) == confirmation_seeds(0, 1)
    # A search whose fastest run is 1.25x slower than the baseline's has lost clearly: nothing to decide either.
    (tmp_path / "lost").mkdir()
    lost = sqlite_study(tmp_path / "lost")
    baseline_run(lost, 2.0)
    search_trial(lost, 0.03, 2.4)  # 1.2x slower: close
    assert not settled(lost, DECIDING)
    (tmp_path / "lost2").mkdir()
    lost = sqlite_study(tmp_path / "lost2")
    baseline_run(lost, 2.0)
    search_trial(lost, 0.03, 2.6)  # 1.3x slower: clear
    assert settled(lost, DECIDING) and missing_runs(lost, DECIDING, 0) == []
    # Without a margin (what an experiment file gets unless it sets one), every study confirms.
    always = dataclasses.replace(DECIDING, clear_margin=None)
    assert not settled(study, always) and missing_runs(study, always, 0)


def test_a_margin_must_be_above_one(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "margin.yaml", "confirm:\n  clear_margin: 1\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert "confirm.clear_margin" in str(err.value) and "a number > 1, or null" in str(err.value) and "margin.yaml" in str(err.value)


def simulated(budget: float, repeats: int) -> list:
    """Studies of experiments/mnist1d_gru.yaml as shipped, replayed on its recorded table with one worker."""
    table_path = REPO / "benchmarks/tables/mnist1d_gru.json.gz"
    table = load_table(table_path)
    experiment = load_experiment(REPO / "experiments/mnist1d_gru.yaml")
    experiment = dataclasses.replace(experiment, budget=Budget(timeout_s=budget_of(table, Replay(1), budget)))
    return run_repeats(Plan(experiment, table_path, Replay(1), repeats, 0, None), processes=1)


@pytest.mark.e2e
def test_on_a_recorded_table_the_close_calls_are_decided_and_the_baseline_no_longer_wins_by_luck() -> None:
    """The GRU table's baseline is 15% slower than the best configuration, but one of its two seeds
    is faster than the best's median: a single run of each picked the baseline in most studies."""
    at_ten = simulated(10, 6)
    decided = [s for s in at_ten if s.reruns > 1]
    assert decided and all(s.reruns == 4 for s in decided)  # the baseline twice, the search's best twice
    assert sorted(s.regret for s in at_ten)[len(at_ten) // 2] < 1.05
    # Below 8 trial-lengths a worker the baseline's second run would cost a fifth of the budget: no deciding runs.
    assert all(s.reruns == 1 for s in simulated(5, 3))


def test_below_eight_trial_lengths_a_close_call_is_decided_only_with_the_time_the_search_leaves() -> None:
    """At 7.5 trial-lengths no time is kept for deciding runs; a search that a trial budget ends
    early re-runs its close call rather than export a provisional winner, one that fills the time does not."""
    table_path = REPO / "benchmarks/tables/digits_ceiling.json.gz"
    table = load_table(table_path)
    # The baseline is the table's third best configuration: a winning search run is a close call (regret 1.24 against 1.00-1.27).
    experiment = dataclasses.replace(
        load_experiment(REPO / "experiments/digits_mlp_ceiling.yaml"),
        baseline={"optimizer": "adam", "lr": 0.03, "batch_size": 64, "schedule": "constant", "width": 1.0},
    )
    timeout_s = budget_of(table, Replay(1), 7.5)

    def studies(n_trials: int | None) -> list:
        budgeted = dataclasses.replace(experiment, budget=Budget(n_trials=n_trials, timeout_s=timeout_s))
        return run_repeats(Plan(budgeted, table_path, Replay(1), 6, 0, None), processes=1)

    ended_early = studies(40)
    assert all(s.end_s < timeout_s for s in ended_early)
    assert {s.reruns for s in ended_early} == {1, 4}  # a close call: the best and the baseline on 2 seeds; else the baseline's run alone
    assert all(s.reruns == 1 for s in studies(None))  # the search took the whole budget: nothing left to decide with
