"""The run loop: open (or resume) the study, spend its budget on the search, then confirm.

A run is three parts: ``prepare`` (tuner/study/run/prepare.py) decides what the study will
search on this machine and writes nothing; the trial objective (tuner/study/run/objective.py)
samples, trains, scores and records one trial; this loop opens the study, fixes the run's
``Plan`` once, calls the hooks in the order ``study_hooks`` declares, runs the search within
the budget, then the confirmation and baseline runs on what is left of it (a time budget keeps
what they need: tuner/study/run/reserve.py).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from tuner import signals
from tuner.environment import fingerprint
from tuner.errors import ConfigError
from tuner.redact import redact_data
from tuner.study.config_reads import ConfigReads
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.record import finished_search_trials
from tuner.study.reruns.baseline import baseline_configuration, baseline_due, enqueue_first
from tuner.study.reruns.confirmation import confirmation_due
from tuner.study.reruns.racing import RacingHooks
from tuner.study.run.auto_cap import resolve_cap, seconds_cap, with_cap
from tuner.study.run.batch_ceiling import keep_ceilings
from tuner.study.run.objective import TrialFailed, TrialObjective
from tuner.study.run.prepare import Prepared, prepare
from tuner.study.run.progress import Progress
from tuner.study.run.reserve import MeasureDeadline, SearchDeadline, enqueue_measurements
from tuner.study.run.stage import Stage, stage_of
from tuner.study.run.strategy import applied
from tuner.study.scoring.units import metric_names, unit
from tuner.study.scoring.values import Scorer
from tuner.study.stopping import PruningHooks, make_pruner
from tuner.study.stopping.screen import ScreenHooks
from tuner.study.storage.budget_loop import SearchDone, optimize_queued, optimize_within_budget
from tuner.study.storage.deadline import Deadline
from tuner.study.storage.open import STORAGE_ERRORS, StaleListener, open_storage, storage_error
from tuner.study.study_record import stored_definition, write_definition, write_environment, write_metric_names
from tuner.train.result import TrialResult
from tuner.train.trial import train_trial

DEFAULT_N_TRIALS = 20
# What must match for a resumed study's trials to be comparable.
OBJECTIVE_KEYS = ("task", "task_options", "metric", "direction", "target", "clock", "cap_s", "eval_every_samples", "minimize")
# What a study stored before a key existed meant (values in other units, or one objective
# against several, cannot share a study).
STORED_BEFORE = {"minimize": "time", "metric": "accuracy", "direction": "maximize"}


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
    return {
        "task": experiment.task,
        "task_options": experiment.task_options,
        # A target on another metric than accuracy (maximized) says so; the default is what a study stored before.
        **({"metric": o.metric, "direction": o.direction} if not o.goal.default_metric else {}),
        "target": o.target,
        "clock": o.clock,
        "cap_s": o.cap_s,
        "eval_every_samples": o.eval_every_samples,
        "minimize": o.minimize,
    }


def objective_metric_names(experiment: Experiment) -> list[str]:
    """Optuna's name for each objective: what it is, to which target, in which unit (``time to loss <= 1.6 (s)``)."""
    o = experiment.objective
    return metric_names(o.names, tuple(unit(name, experiment.cost) for name in o.names), o.goal)


def open_study(
    experiment: Experiment, on_stale: StaleListener | None = None, storage: optuna.storages.BaseStorage | None = None
) -> optuna.Study:
    """Create the study, or load it to resume; refuses a study made for another objective.

    The storage sends heartbeats (experiment.heartbeat); ``on_stale`` hears of each trial
    whose worker died, after it is failed and re-queued. ``storage``: one already open (a
    simulation's in-memory storage, tuner/simulate/) instead of the experiment's.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage or open_storage(experiment.storage, experiment.heartbeat, experiment.source, on_stale)
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
            if stored.get(key, STORED_BEFORE.get(key)) != wanted.get(key, STORED_BEFORE.get(key)):
                raise ConfigError(
                    experiment.source,
                    f"objective.{key}" if key not in ("task", "task_options") else key,
                    f"{stored.get(key, STORED_BEFORE.get(key))!r} as in the existing study {experiment.name!r} (or a new --study-name)",
                    wanted.get(key, STORED_BEFORE.get(key)),
                )
    write_metric_names(study, objective_metric_names(experiment))  # a study an earlier version made gets them too
    # Re-load with the sampler seeded past the trials already there.
    n_existing = len(study.get_trials(deepcopy=False))
    return optuna.load_study(
        study_name=experiment.name,
        storage=storage,
        sampler=make_sampler(experiment, n_existing),
        pruner=make_pruner(experiment.pruner, seconds_cap(study, experiment).objective),
    )


def trials_wanted(experiment: Experiment) -> int | None:
    """The search trials the study should hold: ``budget.n_trials``, none with only a time budget, else the default."""
    budget = experiment.budget
    return DEFAULT_N_TRIALS if budget.n_trials is None and budget.timeout_s is None else budget.n_trials


@dataclass(frozen=True)
class Plan:
    """What this run does, fixed once when the study is open.

    ``n_search`` counts the searched configurations the study should hold (None: a time
    budget only); race, confirmation and baseline runs come on top. ``search`` is False
    once the searched configurations are all there.
    """

    n_search: int | None
    search: bool
    confirm: bool

    @classmethod
    def of(cls, study: optuna.Study, experiment: Experiment, search: bool) -> Plan:
        wanted = trials_wanted(experiment)
        confirm = experiment.confirm.after_search or not search
        if wanted is None:
            return cls(None, search, confirm)
        return cls(wanted, search and wanted > len(finished_search_trials(study)), confirm)

    def has_work(self, study: optuna.Study, experiment: Experiment) -> bool:
        """Search trials to run, or confirmation or baseline runs missing."""
        reruns_due = confirmation_due(study, experiment.confirm, experiment.seed) or _baseline_due(study, experiment)
        return self.search or (self.confirm and reruns_due)


def study_hooks(
    experiment: Experiment,
    scorer: Scorer,
    search_s: float | None,
    progress: Progress | None,
    extra: list[StudyHooks],
    now: Callable[[], float] = time.perf_counter,
) -> list[StudyHooks]:
    """The study's hooks in the order every event reaches them.

    1. progress, first, so the display shows each trial as it starts and ends;
    2. the caller's own (tracking), so a trial's run is open before anything can end it;
    3. racing, which queues re-runs when a search trial ends close to the incumbent (none on
       a Pareto front: its margin is relative to one incumbent time, and a front has none),
       within its share of the search's ``search_s`` seconds under a time budget;
    4. screening, which hands a new trial its throughput pre-screen;
    5. pruning and capping, last: a hook that ends a trial keeps the ones after it from
       seeing that evaluation.
    """
    racing = RacingHooks(experiment.race if not experiment.objective.several else None, experiment.seed, search_s)
    screening = ScreenHooks(experiment.screen, experiment.pruner, experiment.objective)
    known = scorer.known if experiment.objective.several else None  # capping on a front
    pruning = PruningHooks(experiment.pruner, experiment.objective, known=known, clock=now)
    return [progress or Progress(quiet=True), *extra, racing, screening, pruning]


def run_study(
    experiment: Experiment,
    progress: Progress | None = None,
    prepared: Prepared | None = None,
    hooks: list[StudyHooks] | None = None,
    search: bool = True,
    trainer: Callable[..., TrialResult] = train_trial,
    now: Callable[[], float] = time.perf_counter,
    storage: optuna.storages.BaseStorage | None = None,
    workers: int = 1,
) -> optuna.Study:
    """Run (or resume) the experiment's study until its budget is spent; returns the study.

    Then, with ``confirm.after_search``, re-run its best configurations on fresh seeds
    (tuner/study/reruns/confirmation.py); ``search=False`` only confirms, as `tuner confirm` does.
    The study's first writes happen here: a command checks its stores before it calls this.

    ``trainer`` trains each trial and ``now`` is the clock the budget is kept on: training
    and the host clock, or a replay of recorded trials on a virtual clock (tuner/simulate/),
    which runs this very loop. ``storage``: one already open instead of the experiment's.
    ``workers``: how many run this study at once, when known; the time kept for confirmation
    and baseline runs, which they share, is divided between them.
    """
    prepared = prepared or prepare(experiment)
    # Filled once the plan is known; the storage tells each of them of a trial whose worker died.
    ordered: list[StudyHooks] = []
    study = open_study(experiment, on_stale=lambda s, trial: [hook.trial_stale(s, trial) for hook in ordered], storage=storage)
    keep_ceilings(experiment, prepared.to_keep)  # measured while preparing, kept now that the stores are in use
    write_environment(study, fingerprint())  # the report's fingerprint, with or without tracking
    # A resumed study whose baseline has run: pruner.name: auto is resolved for this run's budget now.
    capped = seconds_cap(study, experiment)
    run, strategy_line = applied(study, capped, workers)
    if run is not capped:
        use_strategy(study, run, capped)
    plan = Plan.of(study, run, search)
    if not plan.has_work(study, run):
        return study
    timeout_s = experiment.budget.timeout_s
    ends_at = now() + timeout_s if timeout_s else None
    # The baseline is the study's first trial, where the study measures it (or its cap is the baseline's):
    # the cap (cap_s: auto), the strategy (pruner.name: auto), capping and the incumbent read it.
    measured = experiment.confirm.after_search or experiment.objective.cap_auto
    baseline_first = plan.search and measured and enqueue_first(study, experiment)
    extra = [*(hooks or []), ConfigReads(prepared.task, prepared.space)]

    def staged(run: Experiment) -> Stage:
        make_hooks = lambda r, sc, s_s: study_hooks(r, sc, s_s, progress, extra, now)
        return stage_of(run, study, prepared, plan.confirm, ends_at, workers, make_hooks, now)  # the plan as it stands then

    stage = staged(run)
    ordered += stage.hooks
    for hook in ordered:
        hook.study_started(study, experiment)
    try:
        signals.raise_if_pending()
        if baseline_first:  # it may run until the run's end; no search trial starts before it
            left = Deadline(ends_at - now(), run.objective.cap_s, now) if ends_at is not None else None
            optimize_queued(
                study, TrialObjective(run, prepared, ordered, stage.scorer, left, trainer), 1, (TrialFailed,), [signals.stop_on_signal]
            )
            cap_s = resolve_cap(study, experiment)
            capped = with_cap(experiment, cap_s) if cap_s is not None and cap_s != run.objective.cap_s else run
            resolved, strategy_line = applied(study, capped, workers)
            if resolved is not run:  # cap_s: auto or pruner.name: auto, now known: what reads them is made again
                use_strategy(study, resolved, run)
                run = resolved
                plan = dataclasses.replace(plan, confirm=run.confirm.after_search or not search)
                stage = staged(run)
                for hook in stage.hooks:
                    if hook not in ordered:
                        hook.study_started(study, experiment)
                ordered[:] = stage.hooks
        if strategy_line and progress is not None:
            progress.note(strategy_line)
        signals.raise_if_pending()
        if plan.search:
            search_study(
                study, TrialObjective(run, prepared, ordered, stage.scorer, stage.deadline, trainer), plan.n_search, stage.deadline
            )
        signals.raise_if_pending()
        if plan.confirm:
            left = MeasureDeadline(ends_at - now(), run.objective.cap_s, now) if ends_at is not None else None
            confirm_study(study, run, TrialObjective(run, prepared, ordered, stage.scorer, left, trainer), left)
            signals.raise_if_pending()
    finally:
        for hook in ordered:
            hook.study_finished(study)
    return study


def use_strategy(study: optuna.Study, run: Experiment, before: Experiment) -> None:
    """The study's pruner, and its sampler where its settings changed, made from ``run``: its cap or its strategy resolved."""
    study.pruner = make_pruner(run.pruner, run.objective)
    if run.sampler != before.sampler:  # the small-budget strategy models after fewer random trials
        study.sampler = make_sampler(run, len(study.get_trials(deepcopy=False)))


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


def _baseline_due(study: optuna.Study, experiment: Experiment) -> bool:
    return baseline_due(study, baseline_configuration(experiment), experiment.seed, experiment.confirm.seeds)


def confirm_study(study: optuna.Study, experiment: Experiment, objective: TrialObjective, deadline: MeasureDeadline | None) -> None:
    """Queue the confirmation and baseline runs still missing, seed by seed, then run every queued one that fits the deadline.

    Runs left queued (the budget ran out, the worker died) wait in the storage for the next
    `tuner run` or `tuner confirm` of this study, like any enqueued trial.
    """
    pending = enqueue_measurements(study, experiment)  # with those left queued by an earlier run
    if pending and (deadline is None or deadline.fits_another(study)):
        callbacks = [signals.stop_on_signal] + ([deadline] if deadline else [])
        optimize_queued(study, objective, pending, (TrialFailed,), callbacks)  # other workers may share the queue
