"""The run loop: open (or resume) the study, spend its budget on the search, then confirm.

A run is three parts: ``prepare`` (tuner/study/run/prepare.py) decides what the study will
search on this machine and writes nothing; the trial objective (tuner/study/run/objective.py)
samples, trains, scores and records one trial; this loop opens the study
(tuner/study/run/opening.py), fixes the run's ``Plan`` once (tuner/study/run/plan.py), calls the
hooks in the order ``study_hooks`` declares (tuner/study/run/hook_order.py), and runs its phases
(tuner/study/run/phases.py): the baseline first, the search within the budget, then the
confirmation and baseline runs on what is left of it (a time budget keeps what they need:
tuner/study/run/reserve.py), and a search again in what they left unused.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import optuna

from tuner import signals
from tuner.study.config_reads import ConfigReads
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run import phases
from tuner.study.run.hook_order import HooksInUse
from tuner.study.run.leg import Leg, Loop
from tuner.study.run.opening import open_run
from tuner.study.run.plan import Plan
from tuner.study.run.prepare import Prepared, prepare
from tuner.study.run.progress import Progress
from tuner.study.run.strategy import applied, use_strategy
from tuner.train.result import TrialResult
from tuner.train.trial import train_trial


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
    spent_s: float = 0.0,
) -> optuna.Study:
    """Run (or resume) the experiment's study until its budget is spent; returns the study.

    Then, with ``confirm.after_search``, re-run its best configurations on fresh seeds
    (tuner/study/reruns/confirmation.py); ``search=False`` only confirms, as `tuner confirm` does.
    The study's first writes happen here: a command checks its stores before it calls this.

    ``trainer`` trains each trial and ``now`` is the clock the budget is kept on: training
    and the host clock, or a replay of recorded trials on a virtual clock (tuner/simulate/),
    which runs this very loop. ``storage``: one already open instead of the experiment's.
    ``workers``: how many run this study at once, when known: the budget rule
    (``pruner.name: auto``) counts the trial-lengths of all of them, and the time kept for
    confirmation and baseline runs, which they share, is divided between them.
    ``spent_s``: seconds of ``budget.timeout_s`` already spent, or kept, by the command (its
    start, its preparing, and its closing lines); the deadline counts from here, after preparing.
    """
    prepared = prepared or prepare(experiment)
    in_use = HooksInUse()  # the storage tells them of each trial whose worker died
    study, capped = open_run(experiment, prepared, on_stale=in_use.trial_stale, storage=storage)
    # A resumed study whose baseline has run: pruner.name: auto is resolved for this run's budget now.
    run, strategy_line = applied(study, capped, workers)
    if run is not capped:
        use_strategy(study, run, capped)
    plan = Plan.of(study, run, search)
    if not plan.has_work(study, run):
        phases.sweep_stale_trials(study)
        return study
    timeout_s = experiment.budget.timeout_s
    ends_at = now() + timeout_s - spent_s if timeout_s else None
    baseline_first = phases.queue_baseline_first(study, experiment, plan.search)
    extra = [*(hooks or []), ConfigReads(prepared.task, prepared.space)]
    loop = Loop(study, experiment, prepared, search, progress, extra, trainer, now, ends_at, workers)
    first = loop.leg(run, plan, strategy_line)
    in_use.start(study, experiment, first.stage.hooks)
    try:
        signals.raise_if_pending()
        leg = loop.after_baseline(first) if baseline_first else first
        in_use.start(study, experiment, leg.stage.hooks)
        if leg.strategy_line and progress is not None:
            progress.note(leg.strategy_line)
        signals.raise_if_pending()
        if leg.plan.search:
            phases.search_study(study, loop.objective(leg, leg.stage.deadline), leg.plan.n_search, leg.stage.deadline)
        signals.raise_if_pending()
        if leg.plan.confirm:
            measure(loop, leg)
            more = phases.search_on_deadline(ends_at, leg.run, leg.stage.deadline, workers, now) if leg.plan.search else None
            if more is not None and more.fits_another(study):
                if progress is not None:
                    progress.note(f"{more.left():.0f} s of the budget left after the measurement runs: the search goes on")
                phases.search_study(study, loop.objective(leg, more), leg.plan.n_search, more)
                measure(loop, leg)  # what the search found since
        phases.sweep_stale_trials(study)  # a trial killed since the last one started: its run is closed with the study's hooks
    finally:
        in_use.finish(study)
    return study


def measure(loop: Loop, leg: Leg) -> None:
    """Run the confirmation and baseline runs still missing, within the run's end."""
    left = phases.measure_deadline(loop.ends_at, leg.run.objective.cap_s, loop.now)
    phases.confirm_study(loop.study, leg.run, loop.objective(leg, left), left)
    signals.raise_if_pending()
