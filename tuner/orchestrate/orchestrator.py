"""One way to run a study: ``orchestrate(RunOptions)``.

Every command that runs trials (`tuner run`, `worker`, `confirm`, `nightly`), the worker processes
of `tuner run --workers N` (tuner/orchestrate/child.py) and ``tuner.run`` go through here, in this
order: the options and the experiment are checked, the stores too (nothing is written before:
tuner/study/storage/preflight.py), the study is prepared (tuner/study/run/prepare.py), MLflow
tracking is set up, the signal handlers are installed, and the study runs in this process
(``run_study``) or in worker processes (``run_workers``). A night gives its own order (``body``:
its canary, warm start and report around its study), and its study runs here too. A study that
fails or a signal ends in one line and an exit code; the closing lines follow the result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

import optuna

from tuner import signals
from tuner.nightly.search import StudyRunner
from tuner.orchestrate.lines import closing, finish, first_lines
from tuner.orchestrate.options import RunOptions
from tuner.orchestrate.processes import spawn_for
from tuner.orchestrate.ready import Run, ready
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run.objective import StudyFailed
from tuner.study.run.overhead import WatchOverhead
from tuner.study.run.proxy_study import run_proxy_study
from tuner.study.run.runner import run_study
from tuner.study.run.workers import run_workers
from tuner.study.storage.open import optuna_storage

# `tuner run --timeout S` ends S seconds after the command started (``RunOptions.started``): its
# start (imports, preparing) counts, and this much is kept for its closing lines and MLflow's last
# writes (the study run's summary, plots and report: 2-5 s on a loaded 2-core machine), which then
# wait until the deadline, and at least MIN_DRAIN_S: with 1 s, the README's first command left its
# MLflow study run unfinished on every run of a loaded machine, which costs the user more than a
# few seconds past the budget.
CLOSING_S = 5.0
MIN_DRAIN_S = 10.0


@dataclass
class Ran:
    """How a run ended: its study (None where it stopped before one was read), the process's exit
    code, and the error that ended it (``StudyFailed``, or the KeyboardInterrupt of a signal)."""

    study: optuna.Study | None
    code: int = 0
    error: BaseException | None = None


# A night's own order (tuner/cli/nightly.py), given the run and what runs its study here: returns its
# study, if any, and its exit code.
Body = Callable[[Run, StudyRunner], tuple[optuna.Study | None, int]]


def orchestrate(options: RunOptions, experiment: Experiment | None = None, body: Body | None = None) -> Ran:
    """Run the study ``options`` describe; ``experiment``: one already loaded (``tuner.run``), else the file's.

    Bad input raises ConfigError before anything is written; a study that fails, or a signal,
    ends in one line on stderr (none for ``tuner.run``) and ``Ran.error``.
    """
    run = ready(options, experiment)
    first_lines(run)
    return _run(run, body)


def _run(run: Run, body: Body | None) -> Ran:
    options, study = run.options, None
    since = datetime.now()  # Optuna's trial times are the host's local time
    overhead = WatchOverhead() if options.watch_overhead else None
    timeout_s = run.experiment.budget.timeout_s if options.timeout_from_start else None
    ends_at = (options.started or time.monotonic()) + timeout_s if timeout_s else None
    try:
        with _signals_handled():
            if body is not None:
                study, code = body(run, _runner(run, overhead))
                return Ran(study, code)
            spent_s = timeout_s - (ends_at - time.monotonic()) + CLOSING_S if timeout_s and ends_at else 0.0
            study = _study(run, overhead, spent_s)
            code = closing(run, study, since, overhead)  # the result first...
            if run.tracking is not None and options.drain_tracking:
                # ...then MLflow's last writes; a second signal here drops them, as during a study
                run.tracking.drain(bound_s=None if ends_at is None else max(MIN_DRAIN_S, ends_at - time.monotonic()))
            return Ran(study, code)
    except StudyFailed as err:
        if options.print_errors:
            print(f"tuner: error: {err}", file=sys.stderr)
        return Ran(study, getattr(err, "exit_code", 1), err)
    except KeyboardInterrupt as err:  # SIGINT or SIGTERM: the trial is recorded, the runs closed
        if options.lines == "study" and study is None:  # stopped during the study: its summary so far
            experiment = run.experiment
            stored = optuna.load_study(study_name=experiment.name, storage=optuna_storage(experiment.storage, options.experiment))
            finish(stored, experiment, options)
        if options.resume_hint is not None:
            print(f"tuner: {err or 'interrupted'}{options.resume_hint}", file=sys.stderr)
        return Ran(study, signals.exit_code(err), err)


def _study(run: Run, overhead: WatchOverhead | None, spent_s: float = 0.0) -> optuna.Study:
    options = run.options
    if options.workers > 1:  # several processes (tuner/study/run/workers.py), with one display
        return run_workers(
            run.experiment, run.prepared, run.hooks, spawn_for(options), options.workers, options.share_devices, options.quiet
        )
    if run.experiment.proxy is not None:  # search at the proxy, decide at full size
        return run_proxy_study(run.experiment, progress=run.progress, hooks=run.hooks, now=run.now, spent_s=spent_s)
    role = options.worker
    return run_study(
        run.experiment,
        progress=run.progress,
        prepared=run.prepared,
        hooks=[*run.hooks, *([overhead] if overhead else [])],  # last: it times the sampler the others chose
        search=options.search and not (role is not None and role.confirm_queued),
        trainer=run.trainer,
        now=run.now,
        workers=options.all_workers,
        spent_s=spent_s,
    )


def _runner(run: Run, overhead: WatchOverhead | None) -> StudyRunner:
    """How a body runs its study (a night's own, renamed, on its own deadline): as every command's, its hooks after the run's."""

    def run_here(experiment: Experiment, hooks: list[StudyHooks]) -> optuna.Study:
        return _study(dataclasses.replace(run, experiment=experiment, hooks=[*run.hooks, *hooks]), overhead)

    return run_here


@contextlib.contextmanager
def _signals_handled() -> Iterator[None]:
    """The handlers for the run's lifetime; Python installs them from the main thread only (``tuner.run`` from another runs without)."""
    with signals.handled() if threading.current_thread() is threading.main_thread() else contextlib.nullcontext():
        yield
