"""`tuner run --workers N`: N worker processes on one study, one display, one Ctrl-C.

Each worker is a `tuner worker` process (tuner/cli/worker.py), the same command a machine
that joins the study from elsewhere runs. This module only prepares the study, starts the
workers with their share of the machine, shows their progress, and stops them together:

- The study (its tables, objective, MLflow experiment and study run) is created here once,
  before any worker starts: processes that open one fresh SQLite file at once race
  (API-NOTES.md 1). SQLite holds a few workers as it is (writers wait for the lock, see
  tuner/study/storage/budget.py); WAL mode is not used: tuner/study/storage/open.py locks the database file itself
  at first use, and closing that handle would drop SQLite's own locks on a WAL database.
- CPU threads are split between the workers (tuner/train/devices.py); on GPUs each worker
  claims its own, and two trials share a GPU only with ``--share-devices``.
- The budget is the study's: with ``--n-trials M`` exactly M trials finish (tuner/study/storage/budget.py).
- Workers run in their own sessions, so a terminal's Ctrl-C reaches this process only; it
  forwards each SIGINT or SIGTERM once to every worker, which records its running trial as
  interrupted and closes its run, and then this process exits 130 or 143.
- Confirmation and baseline runs (experiment.confirm.after_search) are queued here once
  after the search, seed by seed (tuner/study/run/reserve.py), and the workers take the runs
  from the queue; a time budget keeps what they need, as estimated when the study starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import optuna

from tuner import signals
from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.reruns.baseline import enqueue_first
from tuner.study.run.auto_cap import seconds_cap
from tuner.study.run.batch_ceiling import keep_ceilings
from tuner.study.run.objective import StudyFailed
from tuner.study.run.prepare import Prepared
from tuner.study.run.reserve import Reserve, enqueue_measurements
from tuner.study.run.runnable import max_devices
from tuner.study.run.runner import open_study, trials_wanted
from tuner.study.run.worker_progress import StudyWatch
from tuner.train.devices import cpu_cores, gpu_count, split_threads

POLL_S = 0.25  # how soon a signal is forwarded and an exit noticed
WATCH_S = 1.0  # how often the display reads the storage
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class WorkerOptions:
    """What `tuner run --workers N` passes on to its workers: the flags the user typed."""

    experiment: str  # the experiment file, as given
    workers: int
    name: str | None = None
    storage: str | None = None
    tracking_uri: str | None = None
    seed: int | None = None
    n_trials: int | None = None
    tracking: bool = True
    share_devices: bool = False
    quiet: bool = False


@dataclass(frozen=True)
class WorkerPlan:
    """What one worker gets: its index (for its sampler seed and GPU choice) and torch threads."""

    index: int
    threads: int


def plan_workers(n: int, experiment: Experiment, prepared: Prepared, share_devices: bool) -> list[WorkerPlan]:
    """Split the machine between ``n`` workers; ConfigError when the GPUs cannot hold them."""
    if prepared.device.type == "cuda":
        per_trial, have = max_devices(prepared.space), gpu_count()
        if n * per_trial > have and not share_devices:
            raise ConfigError(
                "--workers",
                "workers",
                f"at most {have // per_trial} ({have} GPUs, {per_trial} per trial), or --share-devices to put two trials on one GPU",
                n,
            )
    threads = [experiment.trainer.threads] * n if experiment.trainer.threads else split_threads(cpu_cores(), n)
    return [WorkerPlan(i, t) for i, t in enumerate(threads)]


def die_with_parent() -> None:
    """Linux: get SIGTERM (a clean stop) when the process that started this one dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the parent was already gone
            os.kill(os.getpid(), signal.SIGTERM)


def worker_command(options: WorkerOptions, plan: WorkerPlan, timeout_s: float | None, confirm: bool) -> list[str]:
    """The `tuner worker` command line for one worker: the user's own flags, then its share."""
    cmd = [
        sys.executable,
        "-m",
        "tuner",
        "worker",
        options.experiment,
        "--quiet",
        "--coordinated",
        "--worker-index",
        str(plan.index),
        "--threads",
        str(plan.threads),
    ]
    for flag, value in (
        ("--study-name", options.name),
        ("--storage", options.storage),
        ("--tracking-uri", options.tracking_uri),
        ("--seed", options.seed),
        ("--n-trials", options.n_trials),
        ("--timeout", timeout_s),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    cmd += [] if options.tracking else ["--no-tracking"]
    cmd += ["--share-devices"] if options.share_devices else []
    cmd += ["--confirm-queued"] if confirm else []
    return cmd


class Coordinator:
    """Starts the workers of one phase, shows their progress, forwards signals, collects exit codes."""

    def __init__(self, study: optuna.Study, watch: StudyWatch) -> None:
        self.study = study
        self.watch = watch
        self.interrupted: KeyboardInterrupt | None = None

    def run(self, commands: list[list[str]]) -> list[int]:
        # Own sessions: the terminal's Ctrl-C reaches only this process, which forwards it once.
        # Their stdout is MLflow's "View run at" chatter (a tracking server); errors go to stderr.
        procs = [subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL) for cmd in commands]
        watched = 0.0
        while any(p.poll() is None for p in procs):
            try:
                signals.raise_if_pending()
                if time.monotonic() - watched >= WATCH_S:
                    watched = time.monotonic()
                    self.watch.poll()
                time.sleep(POLL_S)
            except KeyboardInterrupt as err:
                self.interrupted = self.interrupted or err
                for p in procs:
                    if p.poll() is None:  # a second signal is forwarded too: the workers then stop at once
                        p.send_signal(getattr(err, "signum", signal.SIGINT))
        self.watch.poll()
        return [p.returncode for p in procs]


def run_workers(options: WorkerOptions, experiment: Experiment, prepared: Prepared, hooks: list[StudyHooks]) -> optuna.Study:
    """Run the study on ``options.workers`` worker processes; returns it as run_study does.

    Raises StudyFailed when a worker stopped with an error (its trials all failing the same
    way, say), and the KeyboardInterrupt of a signal once every worker has stopped.
    """
    plans = plan_workers(options.workers, experiment, prepared, options.share_devices)
    study = open_study(experiment)  # created once, here, before any worker opens it
    keep_ceilings(experiment, prepared.to_keep)  # so that the workers read the ceiling, not measure it again
    budget = experiment.budget
    if experiment.confirm.after_search or experiment.objective.cap_auto:
        enqueue_first(study, experiment)  # queued once: the study's first trial, which one worker takes
    experiment = seconds_cap(study, experiment)  # what the reserve reads
    n_total = trials_wanted(experiment)
    ends_at = time.monotonic() + budget.timeout_s if budget.timeout_s else None
    confirm = experiment.confirm
    search_s = budget.timeout_s
    if budget.timeout_s and confirm.after_search:  # what the confirmation and baseline runs need, as far as the study tells now
        search_s -= Reserve(experiment, budget.timeout_s).seconds(study)
    threads = sorted({p.threads for p in plans})
    print(f"{len(plans)} workers, {'/'.join(map(str, threads))} torch thread(s) each, on {prepared.device}", file=sys.stderr)
    coordinator = Coordinator(study, StudyWatch(study, n_total, quiet=options.quiet))
    for hook in hooks:
        hook.study_started(study, experiment)  # the MLflow study run is made here, once
    try:
        codes = coordinator.run([worker_command(options, p, search_s, confirm=False) for p in plans])
        left = ends_at - time.monotonic() if ends_at is not None else None
        if (
            confirm.after_search
            and coordinator.interrupted is None
            and not any(codes)
            and (left is None or left >= experiment.objective.cap_s)
        ):
            pending = enqueue_measurements(study, experiment)  # queued once; each run is taken by one worker
            if pending:
                codes += coordinator.run([worker_command(options, p, left, confirm=True) for p in plans[:pending]])
        coordinator.watch.close()
        if coordinator.interrupted is not None:
            raise coordinator.interrupted
        failed = [f"worker {i % len(plans)} exited {code}" for i, code in enumerate(codes) if code]
        if failed:
            raise StudyFailed(", ".join(failed) + " (its error is above); the finished trials are kept")
    finally:
        for hook in hooks:
            hook.study_finished(study)
    return study
