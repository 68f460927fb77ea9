"""Making MLflow agree with the Optuna storage: `tuner sync` fills in, `tuner doctor` checks.

The Optuna storage is the record; MLflow is a view of it. Every trial that ended has
exactly one child run, with the outcome and value that Optuna holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import optuna
from optuna.trial import TrialState

from tuner.study.config_reads import shown_params
from tuner.study.experiment.load import Objective
from tuner.study.record import ENDED, RUNNING, TrialRecord, records
from tuner.study.scoring.censoring import NOT_SCORED, objective_value
from tuner.study.study_record import study_environment, study_experiment, study_objective, tracking_uid
from tuner.track.run_layout import EARLIER_OBJECTIVE, STATUS, curve_points, final_metrics
from tuner.track.store import TrackingStore
from tuner.track.summary import StudyViews, write_summary
from tuner.train.result import Outcome
from tuner.train.trial_config import TrialConfig

# A trial without a recorded result ended with its process (a kill, a crash, a lost machine).
NO_RESULT = "no result was recorded: the process running the trial stopped during it"


@dataclass
class SyncReport:
    created: int = 0
    completed: int = 0
    unchanged: int = 0


def ended_trials(study: optuna.Study) -> list[TrialRecord]:
    """The trials that ended (complete, pruned or failed), by number: each should have one run."""
    return sorted(records(study, ENDED), key=lambda t: t.number)


def recorded_outcome(trial: TrialRecord) -> tuple[Outcome, str]:
    """The trial's outcome and reason, or failed with NO_RESULT when its process died first."""
    if trial.outcome is not None:
        return trial.outcome, trial.reason
    return Outcome.FAILED, NO_RESULT


def trial_value(trial: TrialRecord, objective: Objective | None) -> float | None:
    """The objective value that live tracking logs: censored for misses, none when not scored."""
    if trial.outcome is None or trial.outcome in NOT_SCORED:
        return None
    if trial.state is TrialState.COMPLETE:
        return trial.value
    return objective_value(trial.result, objective)


def _ms(when: datetime | None) -> int | None:
    return int(when.timestamp() * 1000) if when is not None else None


def sync_trials(store: TrackingStore, study: optuna.Study, numbers: set[int] | None = None) -> SyncReport:
    """Create or complete the child runs of ended trials that MLflow missed; idempotent.

    ``numbers``: only these trials (those that had ended when a study started, not the ones
    its own tracking is logging meanwhile).
    """
    objective, names = study_objective(study), store.names
    runs = store.trial_runs()
    report = SyncReport()
    trials = [t for t in ended_trials(study) if numbers is None or t.number in numbers]
    for t in trials:
        found = runs.get(t.number, [])
        if any(r.complete for r in found):
            report.unchanged += 1
            continue
        trial_config = t.config or TrialConfig.from_params(t.params)
        config = trial_config.as_dict()
        if found:  # opened live, then tracking failed: add only the evaluations it lacks
            run_id, done = found[0].run_id, store.logged_steps(found[0].run_id, names.metric)
            report.completed += 1
        else:
            run_id, done = store.start_trial(t.number, config, t, _ms(t.trial.datetime_start)), set()
            report.created += 1
        outcome, reason = recorded_outcome(t)
        end = _ms(t.trial.datetime_complete)
        points = curve_points(t.curve, end, done, names.metric)
        params = {**shown_params(study, trial_config), "seed": t.seed}  # logged again if already there: same values, allowed
        figures = final_metrics(t.result.to_attrs() if t.result is not None else {}, trial_value(t, objective), names)
        store.finish_trial(run_id, outcome, reason, figures, points, params, end_ms=end)
    _sync_best(store, trials, objective)
    return report


def _sync_best(store: TrackingStore, trials: list[TrialRecord], objective: Objective | None) -> None:
    """The parent's per-trial value and best-so-far, for the trial numbers it lacks."""
    names = store.names
    # A trial's value logged under the earlier name (before the value carried its unit) is not logged again.
    have = {
        key: set().union(*(store.logged_steps(store.parent_id, k) for k in {key, f"{kind}_{EARLIER_OBJECTIVE}"}))
        for kind, key in (("trial", names.trial_objective), ("best", names.best_objective))
    }
    points, best = [], None
    for t in trials:
        value, stamp = trial_value(t, objective), _ms(t.trial.datetime_complete)
        if value is not None and t.number not in have[names.trial_objective]:
            points.append((names.trial_objective, value, t.number, stamp))
        if value is not None and t.reached:
            best = value if best is None else min(best, value)
        if best is not None and t.number not in have[names.best_objective]:
            points.append((names.best_objective, best, t.number, stamp))
    store.log(store.parent_id, points)


def connect(study: optuna.Study, tracking_uri: str, create: bool = True) -> TrackingStore:
    """The study's store, from what the study recorded of its experiment and environment."""
    return TrackingStore.connect(tracking_uri, study, study_experiment(study), study_environment(study), create=create)


def sync(study: optuna.Study, tracking_uri: str, views: StudyViews | None = None, plots: bool = True) -> SyncReport:
    """Fill MLflow in from the Optuna storage, then refresh the study run's summary and, with the
    report's ``views`` (tuner/report/study_run.py), its plots, report and energy figures."""
    store = connect(study, tracking_uri)
    report = sync_trials(store, study)
    write_summary(store, study, study_experiment(study), views, plots)
    running = study.get_trials(deepcopy=False, states=RUNNING)
    if not running:  # a worker still at it keeps the study run open
        store.close_parent("FINISHED")
    return report


def doctor(study: optuna.Study, tracking_uri: str) -> list[str]:
    """The gaps between Optuna and MLflow, one line each; empty when they agree."""
    where = f"MLflow experiment {study.study_name!r}"
    if tracking_uid(study) is None:
        return [f"study {study.study_name!r} was never tracked in MLflow"]
    store = connect(study, tracking_uri, create=False)
    if store.parent_id is None:
        return [f"no study run for {study.study_name!r} in {where}"]
    runs = store.trial_runs()
    objective = study_objective(study)
    gaps = []
    for t in ended_trials(study):
        found = runs.get(t.number, [])
        outcome, _ = recorded_outcome(t)
        if len(found) != 1:
            gaps.append(
                f"trial {t.number} ({outcome.value}): {len(found)} MLflow runs"
                + (f" ({', '.join(r.run_id for r in found)})" if found else "")
            )
            continue
        r = found[0]
        # Without a recorded result the live run may have been closed as interrupted (Ctrl-C) or by sync as failed.
        allowed = {outcome.value} if t.outcome is not None else {Outcome.FAILED.value, Outcome.INTERRUPTED.value}
        if r.outcome not in allowed:
            gaps.append(f"trial {t.number}: outcome {r.outcome or '(none)'} in MLflow, {outcome.value} in Optuna (run {r.run_id})")
            continue
        if r.status != STATUS[Outcome(r.outcome)]:
            gaps.append(f"trial {t.number}: run status {r.status}, expected {STATUS[Outcome(r.outcome)]} for {r.outcome} (run {r.run_id})")
        value = trial_value(t, objective)
        if t.state is TrialState.COMPLETE and value is not None and (r.value is None or not math.isclose(r.value, value, rel_tol=1e-6)):
            gaps.append(f"trial {t.number}: value {r.value} in MLflow, {value} in Optuna (run {r.run_id})")
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    for number, found in sorted(runs.items()):
        trial = trials.get(number)
        for r in found:
            if trial is None:
                gaps.append(f"run {r.run_id}: trial {number} is not in the Optuna study")
            elif not trial.state.is_finished() and r.status != "RUNNING":
                gaps.append(f"run {r.run_id}: closed as {r.status} while trial {number} is still {trial.state.name}")
    return gaps
