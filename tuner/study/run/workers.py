"""`tuner run --workers N`: N worker processes on one study, one display, one Ctrl-C.

Each worker is a process that runs the study as `tuner worker` does (tuner/orchestrate/child.py),
given its options serialized, not a command line. This module opens the study once, starts
the workers with their share of the machine and of the budget, shows their progress, and
stops them together; what a worker runs is ``run_study`` (tuner/study/run/runner.py):

- The study (its tables, objective, MLflow experiment and study run) is created here once,
  before any worker starts: processes that open one fresh SQLite file at once race
  (API-NOTES.md 1). SQLite holds a few workers as it is (writers wait for the lock, see
  tuner/study/storage/budget.py); WAL mode is not used: tuner/study/storage/open.py locks the database file itself
  at first use, and closing that handle would drop SQLite's own locks on a WAL database.
- CPU threads are split between the workers (tuner/train/devices.py); on GPUs each worker
  claims its own, and two trials share a GPU only with ``--share-devices``.
- The budget is the study's: with ``--n-trials M`` exactly M trials finish (tuner/study/storage/budget.py),
  and the budget rule (``pruner.name: auto``) counts the trial-lengths of all N workers.
- Workers run in their own sessions, so a terminal's Ctrl-C reaches this process only; it
  forwards each SIGINT or SIGTERM once to every worker, which records its running trial as
  interrupted and closes its run, and then this process exits 130 or 143.
- Confirmation and baseline runs (experiment.confirm.after_search) are queued here once
  after the search, seed by seed (tuner/study/run/reserve.py), and the workers take the runs
  from the queue; a time budget keeps what they need, as estimated when the study starts.
- Workers that all exit ``EXIT_STORAGE_LOST`` (their storage stayed unreachable) make this
  process exit with that code too, which launchers start the run again on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from tuner import signals
from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run.objective import StudyFailed
from tuner.study.run.opening import open_run
from tuner.study.run.phases import holds_every_run, queue_baseline_first
from tuner.study.run.plan import trials_wanted
from tuner.study.run.prepare import Prepared
from tuner.study.run.reserve import enqueue_measurements
from tuner.study.run.runnable import max_devices
from tuner.study.run.stage import reserve_of, search_seconds
from tuner.study.run.worker_progress import StudyWatch
from tuner.study.storage.storage_errors import EXIT_STORAGE_LOST
from tuner.train.devices import gpu_count, worker_threads

POLL_S = 0.25  # how soon a signal is forwarded and an exit noticed
WATCH_S = 1.0  # how often the display reads the storage
PR_SET_PDEATHSIG = 1


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
    return [WorkerPlan(i, t) for i, t in enumerate(worker_threads(experiment.trainer.threads, n))]


def die_with_parent() -> None:
    """Linux: get SIGTERM (a clean stop) when the process that started this one dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the parent was already gone
            os.kill(os.getpid(), signal.SIGTERM)


@dataclass(frozen=True)
class WorkerShare:
    """What one worker process is given: its index and threads (``WorkerPlan``), the seconds it may
    take (None: no time budget), and whether it runs only the queued confirmation and baseline runs."""

    index: int
    threads: int
    timeout_s: float | None
    confirm: bool


# What starts a worker: the command of its process and what it reads on stdin (tuner/orchestrate/processes.py).
Spawn = Callable[[WorkerShare], tuple[list[str], str]]


class WorkersFailed(StudyFailed):
    """A worker stopped with an error; ``exit_code`` is the storage-lost code when every failed worker exited with it."""

    def __init__(self, codes: list[int], n: int) -> None:
        failed = [(i % n, code) for i, code in enumerate(codes) if code]
        super().__init__(
            ", ".join(f"worker {i} exited {code}" for i, code in failed) + " (its error is above); the finished trials are kept"
        )
        self.exit_code = EXIT_STORAGE_LOST if all(code == EXIT_STORAGE_LOST for _, code in failed) else 1


class Coordinator:
    """Starts the workers of one phase, shows their progress, forwards signals, collects exit codes."""

    def __init__(self, study: optuna.Study, watch: StudyWatch) -> None:
        self.study = study
        self.watch = watch
        self.interrupted: KeyboardInterrupt | None = None

    def run(self, spawn: Spawn, shares: list[WorkerShare]) -> list[int]:
        # Own sessions: the terminal's Ctrl-C reaches only this process, which forwards it once.
        # Their stdout is MLflow's "View run at" chatter (a tracking server); errors go to stderr.
        procs = []
        for share in shares:
            command, options = spawn(share)
            proc = subprocess.Popen(command, start_new_session=True, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
            proc.stdin.write(options)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
            procs.append(proc)
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


def run_workers(
    experiment: Experiment,
    prepared: Prepared,
    hooks: list[StudyHooks],
    spawn: Spawn,
    n: int,
    share_devices: bool = False,
    quiet: bool = False,
) -> optuna.Study:
    """Run the study on ``n`` worker processes that ``spawn`` starts; returns it as run_study does.

    Raises ``WorkersFailed`` (a StudyFailed) when a worker stopped with an error (its trials all
    failing the same way, say), and the KeyboardInterrupt of a signal once every worker has stopped.
    """
    plans = plan_workers(n, experiment, prepared, share_devices)
    study, experiment = open_run(experiment, prepared)  # created once, here, before any worker opens it; the workers read its ceilings
    queue_baseline_first(study, experiment, searching=True)  # queued once: the study's first trial, which one worker takes
    n_total = trials_wanted(experiment)
    ends_at = time.monotonic() + experiment.budget.timeout_s if experiment.budget.timeout_s else None
    confirm = experiment.confirm.after_search
    search_s = search_seconds(experiment, study, reserve_of(experiment, confirm, len(plans)))  # keeps what the reruns need
    threads = sorted({p.threads for p in plans})
    print(f"{len(plans)} workers, {'/'.join(map(str, threads))} torch thread(s) each, on {prepared.device}", file=sys.stderr)
    coordinator = Coordinator(study, StudyWatch(study, n_total, quiet=quiet))
    for hook in hooks:
        hook.study_started(study, experiment)  # the MLflow study run is made here, once
    try:
        codes = coordinator.run(spawn, [WorkerShare(p.index, p.threads, search_s, confirm=False) for p in plans])
        left = ends_at - time.monotonic() if ends_at is not None else None
        fits = left is None or (left >= experiment.objective.cap_s and holds_every_run(study, experiment, left, len(plans)))
        if confirm and coordinator.interrupted is None and not any(codes) and fits:
            pending = enqueue_measurements(study, experiment)  # queued once; each run is taken by one worker
            if pending:
                codes += coordinator.run(spawn, [WorkerShare(p.index, p.threads, left, confirm=True) for p in plans[:pending]])
        coordinator.watch.close()
        if coordinator.interrupted is not None:
            raise coordinator.interrupted
        if any(codes):
            raise WorkersFailed(codes, len(plans))
    finally:
        for hook in hooks:
            hook.study_finished(study)
    return study
