"""The three phases of a run's trials, in the order the runner calls them: the baseline's first
run, the search, and the confirmation and baseline runs on fresh seeds (then, where the search
stopped to keep them time they did not take, the search again and its measurement runs:
``search_on_deadline``); then the sweep of trials whose worker died, before the run ends.

Each runs trials through ``TrialObjective`` until its share of the budget is spent; the runner
(tuner/study/run/runner.py) decides which phases a run has and what reads the cap in each.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable

import optuna

from tuner import signals
from tuner.study.experiment.load import Experiment
from tuner.study.reruns.baseline import enqueue_first, too_easy
from tuner.study.run.objective import TrialFailed, TrialObjective
from tuner.study.run.reserve import MeasureDeadline, Reserve, SearchDeadline, enqueue_measurements, needed_s
from tuner.study.storage.budget_loop import SearchDone, optimize_queued, optimize_within_budget
from tuner.study.storage.deadline import Deadline


def queue_baseline_first(study: optuna.Study, experiment: Experiment, searching: bool) -> bool:
    """The baseline is the study's first trial where the study measures it (or its cap is the
    baseline's): the cap (cap_s: auto), the strategy (pruner.name: auto), capping and the
    incumbent read it. True when its first run is queued for this run to take."""
    measured = experiment.confirm.after_search or experiment.objective.cap_auto
    return searching and measured and enqueue_first(study, experiment)


def baseline_deadline(ends_at: float | None, cap_s: float, now: Callable[[], float] = time.perf_counter) -> Deadline | None:
    """The baseline's first run may take until the run's end; no search trial starts before it."""
    return Deadline(ends_at - now(), cap_s, now) if ends_at is not None else None


def run_queued_first(study: optuna.Study, objective: TrialObjective) -> None:
    """Run the one trial queued first (the baseline); warn, in one line, of a target it reached at its first evaluation."""
    optimize_queued(study, objective, 1, (TrialFailed,), [signals.stop_on_signal])
    if (line := too_easy(study)) is not None:
        print(f"tuner: warning: {line}", file=sys.stderr)


def search_study(study: optuna.Study, objective: TrialObjective, n_search: int | None, deadline: SearchDeadline | None) -> None:
    """Sample and run trials until the study holds ``n_search`` searched configurations (and their
    race runs), a signal, or the deadline; a trial starts whenever search time is left, and
    the deadline ends it (tuner/study/run/reserve.py: SearchDeadline)."""
    if deadline is not None and not deadline.fits_another(study):
        return  # no search time is left
    # Retries of a dead worker's trial are FAIL until re-run, so they are never counted twice.
    callbacks = [SearchDone(n_search)] if n_search is not None else []
    callbacks += [signals.stop_on_signal] + ([deadline] if deadline else [])
    # No search trial starts past n_search, whatever other workers run (tuner/study/storage/budget.py).
    optimize_within_budget(study, objective, n_search, (TrialFailed,), callbacks, deadline.fits_another if deadline else None)


def measure_deadline(ends_at: float | None, cap_s: float, now: Callable[[], float] = time.perf_counter) -> MeasureDeadline | None:
    return MeasureDeadline(ends_at - now(), cap_s, now) if ends_at is not None else None


def search_on_deadline(
    ends_at: float | None,
    experiment: Experiment,
    searched: SearchDeadline | None,
    workers: int = 1,
    now: Callable[[], float] = time.perf_counter,
) -> SearchDeadline | None:
    """The deadline of a search that goes on in the time the measurement runs left, keeping what one
    more configuration's runs need; None when the search did not stop to leave them time.

    The search stops at an estimate: before any trial reached the target it keeps time for the
    top-k configurations it has yet to find, at the longest a run may take. What the runs did not
    take would otherwise be left unspent (a run that found nothing ended at 60% of its budget).
    """
    if ends_at is None or searched is None or not searched.stopped_early:
        return None
    return SearchDeadline(ends_at - now(), experiment.objective.cap_s, Reserve.searching_on(experiment, workers), now)


def sweep_stale_trials(study: optuna.Study) -> None:
    """Fail the study's stale trials now (Optuna does it only before each trial starts), with their re-runs queued.

    Called as a run ends: a run resumed right after a worker was killed, and ended before
    another trial started, would leave the dead worker's trial RUNNING for good.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # what study.optimize calls before each trial
        optuna.storages.fail_stale_trials(study)


def holds_every_run(study: optuna.Study, experiment: Experiment, left_s: float | None, workers: int = 1) -> bool:
    """Whether ``left_s`` seconds (None: no time budget) hold the confirmation and baseline runs
    still missing, shared by ``workers``; always, when time was kept for them (``confirm.keep_time``)."""
    return experiment.confirm.keep_time or left_s is None or left_s >= needed_s(study, experiment) / max(1, workers)


def confirm_study(study: optuna.Study, experiment: Experiment, objective: TrialObjective, deadline: MeasureDeadline | None) -> None:
    """Queue the confirmation and baseline runs still missing, seed by seed, then run every queued one that fits the deadline.

    Runs left queued (the budget ran out, the worker died) wait in the storage for the next
    `tuner run` or `tuner confirm` of this study, like any enqueued trial. With ``confirm.keep_time:
    false`` no time was kept for them: they are queued only when what the search left holds all of
    them, since half a comparison (the winner on a second seed, the baseline on none) decides nothing.
    """
    if not holds_every_run(study, experiment, deadline.left() if deadline is not None else None):
        return
    pending = enqueue_measurements(study, experiment)  # with those left queued by an earlier run
    if pending and (deadline is None or deadline.fits_another(study)):
        callbacks = [signals.stop_on_signal] + ([deadline] if deadline else [])
        optimize_queued(study, objective, pending, (TrialFailed,), callbacks)  # other workers may share the queue
