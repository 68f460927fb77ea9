"""Everything a run needs before its study opens, in order: the options and the experiment checked,
a worker's GPU claimed, the stores checked (nothing is written before: tuner/study/storage/preflight.py),
the study prepared (tuner/study/run/prepare.py), or a table to replay read, and the hooks that
track it in MLflow."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tuner.errors import ConfigError
from tuner.orchestrate.options import RunOptions
from tuner.orchestrate.tracking import tracking_hooks
from tuner.orchestrate.worker_role import ReseedSampler, claim_device, replaying, sampler_salt
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run.auto_clock import existing_definition, resolve_clock
from tuner.study.run.budget_fit import refuse_short_budget
from tuner.study.run.prepare import Prepared, prepare
from tuner.study.run.progress import Progress
from tuner.study.run.proxy_study import full_size_study
from tuner.study.run.workers import die_with_parent
from tuner.study.storage.existing import load_existing_study
from tuner.study.storage.preflight import check_stores
from tuner.train.trial import train_trial


@dataclass
class Run:
    """What a run is given once its stores are checked and its study prepared. ``trainer`` and
    ``now``: training on the host's clock, or a replay of a recorded table on the real clock."""

    options: RunOptions
    experiment: Experiment
    prepared: Prepared
    progress: Progress
    hooks: list[StudyHooks] = field(default_factory=list)
    tracking: StudyHooks | None = None  # MLflow's, among the hooks; None without tracking
    trainer: Callable = train_trial
    now: Callable[[], float] = time.perf_counter


def ready(options: RunOptions, experiment: Experiment | None = None) -> Run:
    """The run ``options`` describe, ready to open its study; ConfigError (nothing written) on bad input."""
    experiment = options.applied(experiment) if experiment is not None else options.load()
    options.check()
    if experiment.proxy is not None and options.proxy_at_full_size:
        experiment = full_size_study(experiment)  # its candidates' and the baseline's runs, re-run at the job's size
    if experiment.proxy is not None and (not options.proxy_allowed or options.workers > 1 or not options.search):
        given = f"tuner {options.command}" + (f" --workers {options.workers}" if options.workers > 1 else "")
        raise ConfigError(options.experiment, "proxy", "a study run by tuner run or tuner.run with one worker", given)
    role = options.worker
    if role is not None and role.coordinated:
        die_with_parent()
    if role is not None and role.replay is None:  # a worker's GPU, unless it replays a table
        experiment = claim_device(experiment, options)
    replay = replaying(experiment, role) if role is not None and role.replay is not None else None  # a table that does not fit: refused
    if options.refuse_short_budget:
        refuse_short_budget(experiment)  # a budget this study's baseline is known not to fit: nothing is stored
    check_stores(experiment, tracking=options.tracking)  # before anything is written anywhere, and before seconds of preparing
    if options.resolve_clock:  # (a night's clock follows the nights before it instead: tuner/nightly/night.py)
        # clock: auto, as the study stored it or for this machine and the threads each of its workers gets
        experiment = resolve_clock(experiment, existing_definition(experiment), options.workers)
    if not options.search:
        load_existing_study(experiment.storage, experiment.name, options.experiment)  # confirming creates no study
    prepared, trainer, now = replay or (prepare(experiment), train_trial, time.perf_counter)
    run = Run(options, experiment, prepared, Progress(quiet=options.quiet), trainer=trainer, now=now)
    tracking = tracking_hooks(options, experiment)
    run.hooks += tracking
    run.tracking = tracking[0] if tracking else None
    if role is not None:  # first: the sampler is reseeded before anything samples
        run.hooks.insert(0, ReseedSampler(experiment, sampler_salt(role)))
    return run
