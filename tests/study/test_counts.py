"""A study's trial counts (tuner/study/counts.py): by outcome, and the runs that re-run a configuration by kind."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState, create_trial

from tuner.study.counts import LOST, trial_counts
from tuner.study.record import baseline_attrs, confirmation_attrs, race_attrs, retry_attrs, warm_start_attrs


def add(study: optuna.Study, attrs: dict, state: TrialState = TrialState.COMPLETE) -> None:
    outcome = {"outcome": "reached", "reason": "", "target": 0.9} if state is TrialState.COMPLETE else {}
    study.add_trial(create_trial(state=state, value=1.0 if state is TrialState.COMPLETE else None, user_attrs={**outcome, **attrs}))


def test_race_confirmation_and_baseline_runs_are_counted_apart() -> None:
    study = optuna.create_study()
    add(study, {})
    add(study, warm_start_attrs("2026-01-01 #3"))
    add(study, race_attrs(0, 200_000))
    add(study, race_attrs(0, 200_001))
    add(study, confirmation_attrs(0, 100_000))
    add(study, baseline_attrs({"optimizer": "adam"}, 100_000))
    add(study, baseline_attrs({"optimizer": "adam"}, 100_001))
    add(study, {}, TrialState.FAIL)
    add(study, retry_attrs(study.trials[-1], 7))
    counts = trial_counts(study)
    assert counts == {
        "total": 9,
        "by_outcome": {LOST: 1, "reached": 8},
        "race_runs": 2,
        "confirmation_runs": 1,
        "baseline_runs": 2,
        "warm_started": 1,
        "re_runs_after_a_dead_worker": 1,
        "queued_runs": 0,
    }


def test_queued_runs_are_counted_apart_from_the_runs_that_started() -> None:
    study = optuna.create_study()
    add(study, baseline_attrs({"optimizer": "adam"}, 100_000))
    add(study, {})
    study.enqueue_trial({}, user_attrs=baseline_attrs({"optimizer": "adam"}, 100_001))  # the next run starts these
    study.enqueue_trial({}, user_attrs=confirmation_attrs(1, 100_000))
    counts = trial_counts(study)
    assert (counts["baseline_runs"], counts["confirmation_runs"], counts["queued_runs"]) == (1, 0, 2)
    assert counts["by_outcome"] == {"reached": 2, "waiting": 2} and counts["total"] == 4
