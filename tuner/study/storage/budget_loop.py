"""A worker's loop over the study's trial budget: trials until the storage says the budget is finished.

The storage admits each trial (tuner/study/storage/budget.py); here a worker runs
``study.optimize`` under its limit, waits while the budget is taken by trials running
elsewhere (one may still fail and free its place), carries on past a trial another worker
failed under it, and stops once the database counts the budget finished.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from typing import Any

import optuna
from optuna.storages._heartbeat import is_heartbeat_enabled
from optuna.trial import TrialState

from tuner import signals
from tuner.study.record import QUEUED, TrialRecord, finished_search_trials
from tuner.study.storage.budget import BudgetSpent, Limit, TrialAdmission

POLL_S = 1.0


def budgeted(study: optuna.Study) -> TrialAdmission | None:
    """The study's storage if it admits trials by a limit (under Optuna's cache): a BudgetedStorage or a proxy's client."""
    storage = study._storage  # Optuna wraps an RDBStorage in a private cache layer
    storage = getattr(storage, "_backend", storage)
    return storage if isinstance(storage, TrialAdmission) else None


def poll_wait_s(storage: TrialAdmission, poll_s: float) -> float:
    """How long a worker turned away waits before it asks again.

    A place frees when a running trial fails; a dead worker's trial fails only once its
    heartbeat is older than the grace period, so asking more often than heartbeats are sent
    finds nothing new, and each ask is an admission transaction on the study's row and a
    stale-trial query (64 waiting workers polling every second: 128 statements a second).
    Jittered, so that workers turned away together do not ask together again.
    """
    interval = storage.get_heartbeat_interval() if is_heartbeat_enabled(storage) else None
    return max(poll_s, interval or 0.0) * random.uniform(0.75, 1.25)


def wait(seconds: float, step_s: float = 0.25) -> None:
    """Sleep, but answer a pending SIGINT or SIGTERM within ``step_s``."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        signals.raise_if_pending()
        time.sleep(min(step_s, left))


class SearchDone:
    """Optuna callback: stop once ``n_search`` searched configurations finished and no re-run is queued.

    Queued race runs of the last configurations still run; the storage's admission is what
    keeps several workers exact, this only ends a study whose storage cannot refuse.
    """

    def __init__(self, n_search: int) -> None:
        self.n_search = n_search

    def __call__(self, study: optuna.Study, trial: Any) -> None:
        queued = study.get_trials(deepcopy=False, states=QUEUED)
        # Queued re-runs (races of the last configurations) still run; other queued trials
        # (enqueued configurations, warm starts) are search trials the budget has no room for.
        if len(finished_search_trials(study)) >= self.n_search and not any(TrialRecord.of(t).is_rerun for t in queued):
            study.stop()


def optimize(study: optuna.Study, objective: Callable[[optuna.Trial], Any], **kwargs: Any) -> None:
    """``study.optimize``, carried on past a running trial that another worker failed as stale.

    A worker too busy to send its heartbeat within ``heartbeat.grace_s`` (dozens of workers on
    a few cores, a storage slow to answer) has its running trial failed by another worker,
    which queues its re-run; Optuna then cannot record this worker's result ("Cannot tell a
    FAIL trial.") and ``study.optimize`` raises. The worker says so in one line and goes on.
    ``objective.trial`` is the trial it last started (tuner/study/run/objective.py).
    """
    while True:
        try:
            study.optimize(objective, **kwargs)
            return
        except (ValueError, AssertionError):  # Optuna's tell, then its "Should not reach." for that state
            trial = getattr(objective, "trial", None)
            if trial is None or study._storage.get_trial(trial._trial_id).state is not TrialState.FAIL:
                raise
            print(
                f"tuner: trial {trial.number} was failed by another worker while it ran here: its heartbeat was older than "
                "heartbeat.grace_s (a machine or storage too busy); its re-run is queued. Raise heartbeat.grace_s if this recurs.",
                file=sys.stderr,
            )
            objective.trial = None


def optimize_within_budget(
    study: optuna.Study,
    objective: Callable[[optuna.Trial], float],
    n_total: int | None,
    catch: tuple[type[Exception], ...],
    callbacks: list[Callable[[optuna.Study, Any], None]],
    can_start: Callable[[optuna.Study], bool] | None = None,
    poll_s: float = POLL_S,
) -> None:
    """``study.optimize`` until the study holds ``n_total`` finished searched configurations, from any worker.

    Queued re-runs (races of the last configurations) run too. While the budget is taken by
    search trials running elsewhere, wait: if one fails, its place is free again.
    ``can_start`` (a deadline) ends the wait early. A study without
    heartbeats cannot tell a slow trial from one whose worker died, so there the worker
    stops at once instead of waiting.
    """
    storage = budgeted(study)
    if n_total is None or storage is None:
        optimize(study, objective, catch=catch, callbacks=callbacks)
        return
    storage.set_limit(study._study_id, Limit(counted=n_total))
    try:
        while True:
            try:
                optimize(study, objective, catch=catch, callbacks=callbacks)
                return  # a callback stopped it: the budget is finished, a signal, the deadline
            except BudgetSpent:
                pass
            if storage.finished_searched(study._study_id) >= n_total or not is_heartbeat_enabled(storage):
                return
            if can_start is not None and not can_start(study):
                return
            wait(poll_wait_s(storage, poll_s))
    finally:
        storage.set_limit(study._study_id, None)


def optimize_queued(
    study: optuna.Study,
    objective: Callable[[optuna.Trial], float],
    n_queued: int,
    catch: tuple[type[Exception], ...],
    callbacks: list[Callable[[optuna.Study, Any], None]],
) -> None:
    """Run the study's queued trials and no new ones; stops when the queue is empty.

    Several workers may share one queue: each trial is taken by one of them (Optuna's own
    WAITING -> RUNNING step). ``n_queued`` bounds this call where the storage cannot refuse.
    """
    storage = budgeted(study)
    if storage is None:
        study.optimize(objective, n_trials=n_queued, catch=catch, callbacks=callbacks)
        return
    storage.set_limit(study._study_id, Limit(fresh=False))
    try:
        optimize(study, objective, catch=catch, callbacks=callbacks)
    except BudgetSpent:
        pass  # the queue is empty
    finally:
        storage.set_limit(study._study_id, None)
