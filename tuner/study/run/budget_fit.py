"""Whether a time budget fits the study, said in one line: refused before anything is stored
when it is known to be too short, and, after a run that started no search trial, why not.

A run never ends in silence: the search starts a trial whenever search time is left
(tuner/study/run/reserve.py: SearchDeadline), so a run starts none only when the study
already holds its trials, the baseline's first run took the budget, or the budget was kept
for the confirmation and baseline runs; each is one line naming the budget, the cap and what
would fit.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import optuna

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.record import ENDED, TrialRecord, finished_search_trials, records
from tuner.study.run.plan import trials_wanted
from tuner.study.run.reserve import run_s
from tuner.study.scoring.censoring import NOT_SCORED
from tuner.study.storage.open import STORAGE_ERRORS, optuna_storage

# A budget that leaves one searched trial: the baseline's first run, one search trial, and as
# much again kept for the confirmation and baseline runs (at most half the budget: reserve.py).
FITS_SEARCH = 4


def _cap(experiment: Experiment) -> str:
    cap = experiment.objective.cap_s
    return f"cap_s {cap}" if isinstance(cap, str) else f"cap_s {cap:g} s"


def first_baseline(study: optuna.Study) -> TrialRecord | None:
    """The baseline's first ended run: the study's first trial."""
    return next((r for r in records(study, ENDED) if r.is_baseline), None)


def stored_study(experiment: Experiment) -> optuna.Study | None:
    """The experiment's study if it exists already, opened without creating anything."""
    if experiment.storage.startswith("sqlite:///") and not Path(experiment.storage.removeprefix("sqlite:///")).is_file():
        return None
    try:
        storage = optuna_storage(experiment.storage, experiment.source)
        if experiment.name not in optuna.get_all_study_names(storage=storage):
            return None
        return optuna.load_study(study_name=experiment.name, storage=storage)
    except STORAGE_ERRORS:
        return None  # the store check (tuner/study/storage/preflight.py) says what is wrong with it


def refuse_short_budget(experiment: Experiment) -> None:
    """A time budget shorter than one baseline run of this study, as measured: one line, exit 2, nothing stored."""
    timeout_s = experiment.budget.timeout_s
    study = stored_study(experiment) if timeout_s else None
    baseline = first_baseline(study) if study is not None else None
    if baseline is None or baseline.result is None or baseline.result.outcome in NOT_SCORED:
        return
    took = run_s(baseline)
    if timeout_s is not None and timeout_s < took:
        raise ConfigError(
            experiment.source,
            "budget.timeout_s",
            f"a budget that fits one baseline run ({_cap(experiment)}): more than {took:.0f} s, what its run took here; "
            f"{FITS_SEARCH * took:.0f} s leaves time to search",
            timeout_s,
        )


def idle_line(study: optuna.Study, experiment: Experiment, since: datetime) -> str | None:
    """Why a run that began at ``since`` started no search trial, in one line; None when it started one."""
    started = [r for r in records(study) if r.trial.datetime_start is not None and r.trial.datetime_start >= since]
    if any(r.role == "trial" for r in started):
        return None
    budget, wanted = experiment.budget, trials_wanted(experiment)
    if wanted is not None and len(finished_search_trials(study)) >= wanted:
        return (
            f"no search trial started: the study holds its {wanted} searched configurations already (raise budget.n_trials to search more)"
        )
    if budget.timeout_s is None:
        return "no search trial started: the run stopped before the search"
    baseline = next((r for r in started if r.is_baseline), None)
    head = f"no search trial started in the {budget.timeout_s:g}-s budget ({_cap(experiment)})"
    if baseline is not None and baseline.result is not None and baseline.reached:
        took = run_s(baseline)
        return (
            f"{head}: the baseline's first run took {took:.0f} s and the rest was kept for the confirmation and baseline runs; "
            f"a budget of {FITS_SEARCH * took:.0f} s leaves time to search"
        )
    if baseline is not None:
        return f"{head}: the budget ended the baseline's first run before it reached the target; give it more time (budget.timeout_s)"
    return f"{head}: it was kept for the confirmation and baseline runs still missing; give more time (budget.timeout_s) to search"
