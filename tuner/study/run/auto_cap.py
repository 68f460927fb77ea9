"""``objective.cap_s: auto``: the per-trial cap as a multiple of the baseline's measured time to target.

The baseline is the study's first trial (tuner/study/reruns/baseline.py: ``enqueue_first``), so its time is
known before any search trial starts: the cap then fits the machine the study runs on, where
a number written for a CPU stalls a GPU's study and one written for a GPU cuts a CPU's trials.

Resolved in one place, ``resolve_cap``, which the runner calls once the baseline's first run
has ended; the seconds are stored on the study (tuner/study/study_record.py: RESOLVED_CAP), so
that a resumed study, another worker and every reader of the study (the report, `tuner best`)
use the same cap, while the study's definition keeps ``auto`` (a resume compares it as stored).
"""

from __future__ import annotations

import dataclasses

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.experiment.settings import AUTO_FALLBACK_S, CAP_MULTIPLE, Objective
from tuner.study.record import ENDED, records
from tuner.study.scoring.censoring import NOT_SCORED, run_seconds
from tuner.study.study_record import resolved_cap, write_resolved_cap


def baseline_seconds(study: optuna.Study, objective: Objective) -> float | None:
    """The baseline's first scored run: its time to target on the objective's clock, or, when it
    missed (its horizon or sample limit), the time it ran; None before one ended with a score."""
    for r in records(study, ENDED):
        result = r.result
        if r.is_baseline and result is not None and result.outcome not in NOT_SCORED:
            return run_seconds(result, objective)
    return None


def resolve_cap(study: optuna.Study, experiment: Experiment) -> float | None:
    """The cap in seconds: the number the experiment gives, else ``CAP_MULTIPLE`` x the baseline's
    time (stored on the study the first time); None while the baseline has no scored run."""
    objective = experiment.objective
    if not objective.cap_auto:
        return float(objective.cap_s)
    stored = resolved_cap(study)
    if stored is not None:
        return stored
    seconds = baseline_seconds(study, objective)
    if seconds is None or seconds <= 0:
        return None
    write_resolved_cap(study, CAP_MULTIPLE * seconds)
    return CAP_MULTIPLE * seconds


def provisional_cap(left_s: float | None) -> float:
    """The cap before the baseline has a time: the baseline runs until the run's deadline, or
    for ``AUTO_FALLBACK_S`` without a time budget."""
    return left_s if left_s is not None and left_s > 0 else AUTO_FALLBACK_S


def with_cap(experiment: Experiment, seconds: float) -> Experiment:
    """The experiment with its cap in seconds: what the trainer, the scorer, the stop rules and the deadlines read."""
    return dataclasses.replace(experiment, objective=dataclasses.replace(experiment.objective, cap_s=seconds))


def seconds_cap(study: optuna.Study, experiment: Experiment) -> Experiment:
    """The experiment with its cap in seconds: resolved, else provisional (the baseline has not run yet)."""
    seconds = resolve_cap(study, experiment)
    return with_cap(experiment, seconds if seconds is not None else provisional_cap(experiment.budget.timeout_s))


def cap_note(experiment: Experiment, seconds: float | None) -> str | None:
    """The one line `tuner run` prints about an automatic cap."""
    if not experiment.objective.cap_auto:
        return None
    if seconds is None:
        return "cap_s: auto: the baseline runs first, and the cap is set from its time to target"
    return f"cap_s: auto = {seconds:.3g} s ({CAP_MULTIPLE:g} x the baseline's time to target)"
