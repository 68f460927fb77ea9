"""The budget rule picks its strategy by trial-lengths and workers; `auto` resolves to it, a named pruner stays."""

from __future__ import annotations

import dataclasses

import optuna
import pytest
from test_pruning import OBJECTIVE, drive, hooks_for, linear, study_with

from tuner.study.experiment.load import Experiment, Pruning
from tuner.study.stopping import make_pruner
from tuner.study.stopping.budget_rule import LARGE, SMALL, apply, choose, trial_lengths


@pytest.mark.parametrize(
    ("lengths", "workers", "expected"),
    [(5, 1, SMALL), (10, 1, SMALL), (20, 4, SMALL), (50, 1, LARGE), (100, 4, LARGE), (50, 16, SMALL), (200, 16, LARGE), (None, 1, LARGE)],
)
def test_the_rule_picks_by_trial_lengths_and_workers(lengths: float | None, workers: int, expected) -> None:
    assert choose(lengths, workers) == expected


def test_a_budget_in_trial_lengths_counts_every_workers_compute() -> None:
    assert trial_lengths(100.0, 4, 5.0) == 80.0
    assert trial_lengths(None, 4, 5.0) is None and trial_lengths(100.0, 1, None) is None


def test_auto_resolves_to_the_strategy_and_a_named_pruner_is_left_as_written() -> None:
    auto = Experiment(source="e.yaml", name="e", task="synthetic", pruner=Pruning(name="auto", cap_slack=1.3))
    small = apply(auto, choose(5, 1), 5)
    # Successive halving with its first rung one time bucket in, capping as set, no re-runs or screen, an early model.
    assert (small.pruner.name, small.pruner.cap_slack, small.pruner.warmup_s, small.race, small.screen, small.confirm.keep_time) == (
        "successive_halving",
        1.3,
        auto.pruner.bucket_for(auto.objective.cap_s),
        None,
        None,
        False,  # deciding runs only with the time the search leaves
    )
    assert small.sampler.n_startup_trials == 3 and apply(auto, choose(28, 1), 28).sampler.n_startup_trials == 7
    # From 8 trial-lengths a worker, a close call between the search and the baseline is re-run on 2 seeds.
    deciding = apply(auto, choose(10, 1), 10).confirm
    fields = ("after_search", "top_k", "seeds", "budget_share", "clear_margin", "keep_time")
    assert tuple(getattr(deciding, f) for f in fields) == (True, 1, 2, 0.0, 1.25, True)
    # Below 8 a worker, the same runs, but no time is kept for them: they run if the search leaves it.
    assert tuple(getattr(apply(auto, choose(20, 4), 20, workers=4).confirm, f) for f in fields) == (True, 1, 2, 0.0, 1.25, False)
    assert tuple(getattr(small.confirm, f) for f in fields) == (True, 1, 2, 0.0, 1.25, False)
    off = dataclasses.replace(auto, confirm=dataclasses.replace(auto.confirm, after_search=False))
    assert not apply(off, choose(10, 1), 10).confirm.after_search  # an experiment that turns it off is obeyed
    large = apply(auto, choose(100, 1))
    assert (large.pruner.name, large.pruner.cap_slack, large.race, large.screen) == ("equal_time", 1.3, auto.race, auto.screen)
    named = dataclasses.replace(auto, pruner=Pruning(name="median"))
    assert apply(named, choose(10, 1)) is named


def test_successive_halving_on_time_stops_a_slow_trial_at_a_rung_in_seconds() -> None:
    """What `auto` runs at a small budget: rungs are time buckets, so a trial is judged by what it reached by a time."""
    small = apply(
        Experiment(source="e.yaml", name="e", task="synthetic", objective=OBJECTIVE, pruner=Pruning(name="auto", bucket_s=0.1)),
        choose(10, 1),
    )
    pruning = dataclasses.replace(small.pruner, warmup_s=0.1)
    study = study_with(make_pruner(pruning, OBJECTIVE))
    assert isinstance(study.pruner, optuna.pruners.SuccessiveHalvingPruner)
    hooks = hooks_for(study, pruning)
    for i in range(6):
        drive(study, hooks, *linear(0.8 + 0.02 * i, 0.1))
    # Good per evaluation but slow per second: at 0.3 s it has 0.2 where the others have 0.3-0.4.
    assert drive(study, hooks, *linear(0.3, 0.1, start=0.1)) == "pruned"
    assert "successive_halving pruner at step" in study.trials[-1].user_attrs["reason"]
