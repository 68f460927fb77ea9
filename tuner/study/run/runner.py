# ENGINEER SPLITTING THIS RUNNER: your full instructions are in /tmp/H-A.md. Read that file first and follow it
# (file ownership, no git commits, what to build, how to test); delete this comment when you start.
"""The study: an Optuna study in persistent storage, run with our objective."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import optuna
from optuna.trial import FrozenTrial

from tuner import signals
from tuner.environment import fingerprint
from tuner.errors import ConfigError
from tuner.redact import redact_data
from tuner.study.experiment.baseline_spec import baseline_config
from tuner.study.experiment.load import Experiment, resolve_threads
from tuner.study.hooks import StudyHooks
from tuner.study.record import (
    FINISHED,
    FINISHED_OR_RUNNING,
    TrialRecord,
    finished_search_trials,
    records,
    stored_definition,
    write_definition,
    write_environment,
    write_result,
    write_start,
)
from tuner.study.reruns.baseline import baseline_due, enqueue_baseline, pending_baseline
from tuner.study.reruns.confirmation import confirmation_due, enqueue_confirmation
from tuner.study.reruns.racing import RacingHooks
from tuner.study.run.batch_ceiling import bound_batch
from tuner.study.run.progress import Progress
from tuner.study.run.runnable import runnable_space
from tuner.study.scoring.censoring import NOT_SCORED
from tuner.study.scoring.shape_clock import record_shape_clock
from tuner.study.scoring.values import Scorer, check_minimize
from tuner.study.space.levers import runnable_levers
from tuner.study.space.pipeline import runnable_pipeline
from tuner.study.space.pretrained import attach_pretrained
from tuner.study.space.space import SearchSpace
from tuner.study.stopping import PruningHooks, make_pruner
from tuner.study.stopping.screen import ScreenHooks
from tuner.study.storage.budget import optimize_queued, optimize_within_budget
from tuner.study.storage.deadline import Deadline
from tuner.study.storage.open import STORAGE_ERRORS, StaleListener, open_storage, storage_error
from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import task_hyperparameters
from tuner.tasks.registry import build_task
from tuner.train.devices import configure_threads, resolve_device
from tuner.train.result import Outcome, TrialResult
from tuner.train.screen import ScreenRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

DEFAULT_N_TRIALS = 20
SAME_FAILURES_TO_STOP = 3
# What must match for a resumed study's trials to be comparable.
OBJECTIVE_KEYS = ("task", "task_options", "target", "clock", "cap_s", "eval_every_samples", "minimize")
# What a study stored before a key existed meant (values in other units, or one objective
# against several, cannot share a study).
STORED_BEFORE = {"minimize": "time"}


class TrialFailed(Exception):
    """A trial that ended as failed or interrupted: recorded as FAIL in Optuna."""


class StudyFailed(Exception):
    """Every trial of this run failed the same way; the study stops with that error."""


@dataclass
class Prepared:
    """What a run needs, resolved once: the device, the task, the space this machine can run."""

    device: object
    task: Task
    space: SearchSpace
    notes: list[str]


def prepare(experiment: Experiment) -> Prepared:
    try:
        device = resolve_device(experiment.trainer.device)
    except (ValueError, RuntimeError) as err:
        raise ConfigError(experiment.source, "trainer.device", "a device this machine has", f"{experiment.trainer.device} ({err})") from None
    configure_threads(resolve_threads(experiment.trainer))
    check_cpu_clock(experiment, device)
    space, notes = runnable_space(experiment, device)
    try:
        task = build_task(experiment.task, experiment.task_options)
    except Exception as err:  # a user's task can raise anything: one line, exit 2
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ConfigError(experiment.source, "task", "a task that builds", f"{experiment.task} ({type(err).__name__}: {first})") from None
    check_minimize(experiment, device.type, device.index, task)
    space = space.for_task(task_hyperparameters(task), experiment.source)  # the task's own names, now known
    space, pipeline_notes = runnable_pipeline(space, task, device, experiment.source)  # a loader's knobs: Dataset tasks only
    space, lever_notes = runnable_levers(space, task, experiment.source)  # the built-in loop's levers, where they apply
    pipeline_notes += lever_notes
    space, ceiling_notes = bound_batch(experiment, task, space, device)  # measured once per storage (tuner/study/run/batch_ceiling.py)
    pipeline_notes += ceiling_notes
    if experiment.init_from is not None:  # refused here, before any store is written, when it does not fit
        attach_pretrained(experiment.source, experiment.init_from, task, space)
    return Prepared(device, task, space, notes + pipeline_notes)


def check_cpu_clock(experiment: Experiment, device: object) -> None:
    """The cpu clock counts the training thread's CPU time: the time to target only where that thread does all the work."""
    threads = resolve_threads(experiment.trainer)
    if experiment.objective.clock == "cpu" and (device.type != "cpu" or threads != 1):
        raise ConfigError(experiment.source, "objective.clock", "cpu only on a CPU device with trainer.threads: 1 (else robust, train or wall)",
                          f"cpu on {device.type} with {threads} threads")


def make_sampler(experiment: Experiment, offset: int = 0) -> optuna.samplers.BaseSampler:
    """The named sampler, seeded; ``offset`` keeps a resumed study from replaying its draws."""
    seed = experiment.seed + offset
    s = experiment.sampler
    if s.name == "tpe":
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # group=True
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True, n_startup_trials=s.n_startup_trials)
    if s.name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if s.name == "qmc":
        return optuna.samplers.QMCSampler(seed=seed)
    return optuna.samplers.GPSampler(seed=seed, n_startup_trials=s.n_startup_trials)


def objective_definition(experiment: Experiment) -> dict:
    o = experiment.objective
    return {"task": experiment.task, "task_options": experiment.task_options, "target": o.target, "clock": o.clock, "cap_s": o.cap_s, "eval_every_samples": o.eval_every_samples,
            "minimize": o.minimize}


def open_study(experiment: Experiment, on_stale: StaleListener | None = None) -> optuna.Study:
    """Create the study, or load it to resume; refuses a study made for another objective.

    The storage sends heartbeats (experiment.heartbeat); ``on_stale`` hears of each trial
    whose worker died, after it is failed and re-queued.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(experiment.storage, experiment.heartbeat, experiment.source, on_stale)
    try:
        directions = ["minimize"] * len(experiment.objective.names)  # several: a Pareto front (tuner/study/scoring/pareto.py)
        study = optuna.create_study(study_name=experiment.name, storage=storage, directions=directions, load_if_exists=True)
    except STORAGE_ERRORS as err:
        raise storage_error(experiment.source, experiment.storage, err) from None
    stored = stored_definition(study)
    wanted = objective_definition(experiment)
    if stored is None:
        write_definition(study, wanted, redact_data(experiment.to_dict()))  # exported by `tuner best`: no passwords
    else:
        for key in OBJECTIVE_KEYS:
            if stored.get(key, STORED_BEFORE.get(key)) != wanted[key]:
                raise ConfigError(experiment.source, f"objective.{key}" if key not in ("task", "task_options") else key, f"{stored.get(key, STORED_BEFORE.get(key))!r} as in the existing study {experiment.name!r} (or a new --study-name)", wanted[key])
    # Re-load with the sampler seeded past the trials already there.
    n_existing = len(study.get_trials(deepcopy=False))
    return optuna.load_study(study_name=experiment.name, storage=storage, sampler=make_sampler(experiment, n_existing), pruner=make_pruner(experiment.pruner, experiment.objective))


class TrialObjective:
    """The callable Optuna runs per trial: sample, train, record, score."""

    def __init__(self, experiment: Experiment, prepared: Prepared, hooks: list[StudyHooks], deadline: float | None) -> None:
        self.experiment = experiment
        self.prepared = prepared
        self.hooks = hooks
        self.deadline = deadline
        self.failures: list[str] = []
        self.scorer = Scorer(experiment, prepared.task)

    def __call__(self, trial: optuna.Trial) -> float | list[float]:
        queued = TrialRecord.of(trial)
        # A baseline run trains the configuration it was enqueued with, unsampled (tuner/study/reruns/baseline.py).
        config = queued.config if queued.is_baseline and queued.config is not None else TrialConfig.from_params(self.prepared.space.sample(trial))
        # A re-run of a dead worker's trial (tuner/study/storage/open.py) repeats it, seed included.
        original = trial.number if queued.retry_of is None else queued.retry_of
        # A confirmation run is enqueued with its seed.
        seed = queued.seed if queued.seed is not None else self.experiment.seed + original
        write_start(trial, config, seed)
        for hook in self.hooks:
            hook.trial_started(trial, config)
        listeners = [signals.raise_if_pending, *(hook.on_evaluation for hook in self.hooks)]
        try:
            with signals.interruptible():
                result = train_trial(self.prepared.task, config, self.experiment.objective.stop_rule(), self.prepared.device, seed=seed, listeners=listeners, deadline=self.deadline, stop_at=stop_time(self.hooks), screen=screen_rule(self.hooks),
                                     keep=lambda model: [hook.trial_model(trial, model) for hook in self.hooks])  # after the clocks stop
        except KeyboardInterrupt as err:
            # SIGINT or SIGTERM: record the trial as interrupted and close its runs, then stop.
            result = getattr(err, "trial_result", None) or TrialResult(Outcome.INTERRUPTED, str(err) or "interrupted", self.experiment.objective.target)
            self._record(trial, result, None)
            raise
        self.scorer.measure(result, config)
        values = None if result.outcome in NOT_SCORED else self.scorer.values(trial, result, config)
        value = values[0] if values else None  # the hooks show and log the first objective's
        record_shape_clock(trial.study, config, result, resolve_threads(self.experiment.trainer))  # beside the raw clocks
        self._record(trial, result, value)
        if result.outcome is Outcome.PRUNED:
            raise optuna.TrialPruned(result.reason)
        if value is None:
            self._note_failure(result)
            raise TrialFailed(result.reason)
        self.failures.clear()
        return values if self.experiment.objective.several else value

    def _record(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        write_result(trial, result)
        for hook in self.hooks:
            hook.trial_finished(trial, result, value)

    def _note_failure(self, result: TrialResult) -> None:
        if result.outcome is Outcome.FAILED:
            self.failures.append(result.reason)
            if len(self.failures) >= SAME_FAILURES_TO_STOP and len(set(self.failures[-SAME_FAILURES_TO_STOP:])) == 1:
                raise StudyFailed(f"{SAME_FAILURES_TO_STOP} trials in a row failed with: {result.reason}")


def stop_time(hooks: list[StudyHooks]) -> float | None:
    """The earliest time on the objective's clock any hook wants the new trial looked at."""
    times = [t for t in (hook.stop_at() for hook in hooks) if t is not None]
    return min(times, default=None)


def screen_rule(hooks: list[StudyHooks]) -> ScreenRule | None:
    """The pre-screen a hook hands the new trial (tuner/study/stopping/screen.py); None: not screened."""
    return next((rule for rule in (hook.screen_rule() for hook in hooks) if rule is not None), None)


def run_study(experiment: Experiment, progress: Progress | None = None, prepared: Prepared | None = None, hooks: list[StudyHooks] | None = None, search: bool = True) -> optuna.Study:
    """Run (or resume) the experiment's study until its budget is spent; returns the study.

    Then, with ``confirm.after_search``, re-run its best configurations on fresh seeds
    (tuner/study/reruns/confirmation.py); ``search=False`` only confirms, as `tuner confirm` does.
    """
    # Pruning goes last: a hook that ends a trial keeps the ones after it from seeing that evaluation.
    # Racing goes before pruning, which must stay last; it queues re-runs when a trial ends.
    # No racing on a Pareto front: its margin is relative to one incumbent time, and a front has none.
    racing = RacingHooks(experiment.race if not experiment.objective.several else None, experiment.seed)
    screening = ScreenHooks(experiment.screen, experiment.pruner, experiment.objective)
    prepared = prepared or prepare(experiment)
    known = Scorer(experiment, prepared.task).known if experiment.objective.several else None  # capping on a front
    hooks = [progress or Progress(quiet=True), *(hooks or []), racing, screening, PruningHooks(experiment.pruner, experiment.objective, known=known)]

    def trial_stale(study: optuna.Study, trial: FrozenTrial) -> None:
        for hook in hooks:
            hook.trial_stale(study, trial)

    study = open_study(experiment, on_stale=trial_stale)
    write_environment(study, fingerprint())  # the report's fingerprint, with or without tracking
    budget = experiment.budget
    n_total = budget.n_trials
    if n_total is None and budget.timeout_s is None:
        n_total = DEFAULT_N_TRIALS
    # n_trials counts search trials; confirmation runs already in the study come on top.
    remaining = None if n_total is None else n_total - len(finished_search_trials(study))
    if n_total is not None:
        n_total += sum(r.is_measurement for r in records(study, FINISHED_OR_RUNNING))
    confirm = experiment.confirm.after_search or not search
    search = search and (remaining is None or remaining > 0)
    if not search and not (confirm and (confirmation_due(study, experiment.confirm, experiment.seed) or _baseline_due(study, experiment))):
        return study
    ends_at = time.perf_counter() + budget.timeout_s if budget.timeout_s else None
    # A time budget keeps its share for confirmation; the search stops early enough to leave it.
    share = experiment.confirm.budget_share if confirm else 0.0
    deadline = Deadline(budget.timeout_s * (1 - share), experiment.objective.cap_s) if budget.timeout_s else None
    # Retries of a dead worker's trial are FAIL until re-run, so they are never counted twice.
    callbacks = [optuna.study.MaxTrialsCallback(n_total, states=FINISHED)] if n_total is not None else []
    callbacks += [signals.stop_on_signal] + ([deadline] if deadline else [])
    racing.n_total = n_total
    for hook in hooks:
        hook.study_started(study, experiment)
    try:
        signals.raise_if_pending()
        if search and (deadline is None or deadline.fits_another(study)):
            objective = TrialObjective(experiment, prepared, hooks, deadline.at if deadline else None)
            # No trial starts past n_total, whatever other workers run (tuner/study/storage/budget.py).
            optimize_within_budget(study, objective, n_total, (TrialFailed,), callbacks, deadline.fits_another if deadline else None)
        signals.raise_if_pending()
        if confirm:
            left = Deadline(ends_at - time.perf_counter(), experiment.objective.cap_s) if ends_at is not None else None
            confirm_study(study, experiment, prepared, hooks, left)
            signals.raise_if_pending()
    finally:
        for hook in hooks:
            hook.study_finished(study)
    return study


def _baseline_due(study: optuna.Study, experiment: Experiment) -> bool:
    return baseline_due(study, baseline_config(experiment.baseline), experiment.seed, experiment.confirm.seeds)


def confirm_study(study: optuna.Study, experiment: Experiment, prepared: Prepared, hooks: list[StudyHooks], deadline: Deadline | None) -> None:
    """Queue the confirmation runs still missing, then run every queued one that fits the deadline.

    Runs left queued (the budget ran out, the worker died) wait in the storage for the next
    `tuner run` or `tuner confirm` of this study, like any enqueued trial.
    """
    pending = enqueue_confirmation(study, experiment.confirm, experiment.seed)
    enqueue_baseline(study, baseline_config(experiment.baseline), experiment.seed, experiment.confirm.seeds)
    pending += pending_baseline(study)  # queued now, or left queued by an earlier run
    if pending and (deadline is None or deadline.fits_another(study)):
        objective = TrialObjective(experiment, prepared, hooks, deadline.at if deadline else None)
        callbacks = [signals.stop_on_signal] + ([deadline] if deadline else [])
        optimize_queued(study, objective, pending, (TrialFailed,), callbacks)  # other workers may share the queue
