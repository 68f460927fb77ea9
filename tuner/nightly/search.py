"""Tonight's search and confirmation, in the time the night's deadline leaves them."""

from __future__ import annotations

from collections.abc import Callable

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.record import finished_search_trials
from tuner.study.run.objective import StudyFailed
from tuner.study.storage.deadline import Deadline

# Runs a study as every command runs one (the orchestrator's, tuner/orchestrate/orchestrator.py:
# with the run's progress, prepared study and hooks), with these hooks after the run's.
StudyRunner = Callable[[Experiment, list[StudyHooks]], optuna.Study]


def search_tonight(experiment: Experiment, deadline: Deadline, run_study: StudyRunner, hooks: list[StudyHooks]) -> str:
    """Run the night's study for what the deadline leaves; returns how the search ended, in words."""
    if deadline.left() < experiment.objective.cap_s:
        return "the budget left no time for a trial"
    try:
        done = run_study(experiment.with_overrides(timeout_s=deadline.left()), hooks)
    except StudyFailed as err:
        return f"failed: {err}"
    wanted = experiment.budget.n_trials
    finished = len(finished_search_trials(done))
    return (
        f"all {wanted} trials finished"
        if wanted and finished >= wanted
        else f"the time budget ran out after {finished} finished search trials"
    )
