"""Making MLflow agree with the Optuna storage: `tuner sync` fills in, `tuner doctor` checks.

The Optuna storage is the record; MLflow is a view of it. Every trial that ended has
exactly one child run, with the outcome and value that Optuna holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.study.objective import NOT_SCORED, objective_value
from tuner.train.result import Outcome, TrialResult
from tuner.track.run_layout import STATUS, curve_points, final_metrics
from tuner.track.tracking import TrackingStore, write_summary
from tuner.train.trial_config import TrialConfig

ENDED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
# A trial without a recorded result ended with its process (a kill, a crash, a lost machine).
NO_RESULT = "no result was recorded: the process running the trial stopped during it"


@dataclass
class SyncReport:
    created: int = 0
    completed: int = 0
    unchanged: int = 0


def ended_trials(study: optuna.Study) -> list[FrozenTrial]:
    return sorted(study.get_trials(deepcopy=False, states=ENDED), key=lambda t: t.number)


def recorded_outcome(trial: FrozenTrial) -> tuple[Outcome, str]:
    if "outcome" in trial.user_attrs:
        return Outcome(trial.user_attrs["outcome"]), trial.user_attrs.get("reason", "")
    return Outcome.FAILED, NO_RESULT


def trial_value(trial: FrozenTrial, objective: dict) -> float | None:
    """The objective value that live tracking logs: censored for misses, none when not scored."""
    outcome, _ = recorded_outcome(trial)
    if "outcome" not in trial.user_attrs or outcome in NOT_SCORED:
        return None
    if trial.state is TrialState.COMPLETE:
        return trial.value
    return objective_value(TrialResult.from_attrs(trial.user_attrs), objective["clock"], objective["cap_s"])


def _ms(when: datetime | None) -> int | None:
    return int(when.timestamp() * 1000) if when is not None else None


def sync_trials(store: TrackingStore, study: optuna.Study) -> SyncReport:
    """Create or complete the child runs of ended trials that MLflow missed; idempotent."""
    objective = study.user_attrs.get("objective", {})
    runs = store.trial_runs()
    report = SyncReport()
    for t in ended_trials(study):
        records = runs.get(t.number, [])
        if any(r.complete for r in records):
            report.unchanged += 1
            continue
        config = t.user_attrs.get("config") or TrialConfig.from_params(t.params).as_dict()
        if records:  # opened live, then tracking failed: add only the evaluations it lacks
            run_id, done = records[0].run_id, store.logged_steps(records[0].run_id, "accuracy")
            report.completed += 1
        else:
            run_id, done = store.start_trial(t.number, config, t.user_attrs, _ms(t.datetime_start)), set()
            report.created += 1
        outcome, reason = recorded_outcome(t)
        end = _ms(t.datetime_complete)
        points = curve_points(t.user_attrs.get("curve", {}), end, done)
        params = {**config, "seed": t.user_attrs.get("seed")}  # logged again if already there: same values, allowed
        store.finish_trial(run_id, outcome, reason, final_metrics(t.user_attrs, trial_value(t, objective)), points, params, end_ms=end)
    _sync_best(store, study, objective)
    return report


def _sync_best(store: TrackingStore, study: optuna.Study, objective: dict) -> None:
    """The parent's per-trial value and best-so-far, for the trial numbers it lacks."""
    have = {key: store.logged_steps(store.parent_id, key) for key in ("trial_objective_s", "best_objective_s")}
    points, best = [], None
    for t in ended_trials(study):
        value, stamp = trial_value(t, objective), _ms(t.datetime_complete)
        if value is not None and t.number not in have["trial_objective_s"]:
            points.append(("trial_objective_s", value, t.number, stamp))
        if value is not None and t.user_attrs.get("outcome") == Outcome.REACHED.value:
            best = value if best is None else min(best, value)
        if best is not None and t.number not in have["best_objective_s"]:
            points.append(("best_objective_s", best, t.number, stamp))
    store.log(store.parent_id, points)


def connect(study: optuna.Study, tracking_uri: str, create: bool = True) -> TrackingStore:
    experiment = study.user_attrs.get("experiment", {})
    return TrackingStore.connect(tracking_uri, study, experiment, study.user_attrs.get("environment", {}), create=create)


def sync(study: optuna.Study, tracking_uri: str, plots: bool = True) -> SyncReport:
    """Fill MLflow in from the Optuna storage, then refresh the study run's summary and plots."""
    store = connect(study, tracking_uri)
    report = sync_trials(store, study)
    write_summary(store, study, study.user_attrs.get("experiment", {}), plots)
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    if not running:  # a worker still at it keeps the study run open
        store.close_parent("FINISHED")
    return report


def doctor(study: optuna.Study, tracking_uri: str) -> list[str]:
    """The gaps between Optuna and MLflow, one line each; empty when they agree."""
    where = f"MLflow experiment {study.study_name!r}"
    if "tuner_uid" not in study.user_attrs:
        return [f"study {study.study_name!r} was never tracked in MLflow"]
    store = connect(study, tracking_uri, create=False)
    if store.parent_id is None:
        return [f"no study run for {study.study_name!r} in {where}"]
    runs = store.trial_runs()
    objective = study.user_attrs.get("objective", {})
    gaps = []
    for t in ended_trials(study):
        records = runs.get(t.number, [])
        outcome, _ = recorded_outcome(t)
        if len(records) != 1:
            gaps.append(
                f"trial {t.number} ({outcome.value}): {len(records)} MLflow runs"
                + (f" ({', '.join(r.run_id for r in records)})" if records else "")
            )
            continue
        r = records[0]
        # Without a recorded result the live run may have been closed as interrupted (Ctrl-C) or by sync as failed.
        allowed = {outcome.value} if "outcome" in t.user_attrs else {Outcome.FAILED.value, Outcome.INTERRUPTED.value}
        if r.outcome not in allowed:
            gaps.append(f"trial {t.number}: outcome {r.outcome or '(none)'} in MLflow, {outcome.value} in Optuna (run {r.run_id})")
            continue
        if r.status != STATUS[Outcome(r.outcome)]:
            gaps.append(f"trial {t.number}: run status {r.status}, expected {STATUS[Outcome(r.outcome)]} for {r.outcome} (run {r.run_id})")
        value = trial_value(t, objective)
        if t.state is TrialState.COMPLETE and value is not None and (r.value is None or not math.isclose(r.value, value, rel_tol=1e-6)):
            gaps.append(f"trial {t.number}: value {r.value} in MLflow, {value} in Optuna (run {r.run_id})")
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    for number, records in sorted(runs.items()):
        trial = trials.get(number)
        for r in records:
            if trial is None:
                gaps.append(f"run {r.run_id}: trial {number} is not in the Optuna study")
            elif not trial.state.is_finished() and r.status != "RUNNING":
                gaps.append(f"run {r.run_id}: closed as {r.status} while trial {number} is still {trial.state.name}")
    return gaps
