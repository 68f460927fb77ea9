"""`tuner worker EXPERIMENT.yaml --storage URL`: one more worker on a study, from any machine.

Every machine runs the same command: the study lives in a database they all reach
(PostgreSQL), the runs in an MLflow tracking server. A worker creates the study if it is
new, runs trials until the study's budget is finished, counted over all workers
(tuner/study/storage/budget.py), and leaves confirmation to `tuner confirm` (one machine, afterwards).
`tuner run --workers N` starts its workers with this command too (the hidden flags).
With ``--replay TABLE`` the trials replay recorded ones in real time instead of training
(tuner/simulate/paced_time.py): a rehearsal of a launch, or a load test of the storage.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from collections.abc import Callable

import optuna
import torch

from tuner import signals
from tuner.cli.run_flags import add_run_flags, run_experiment
from tuner.errors import ConfigError
from tuner.redact import redact
from tuner.simulate.grid_space import table_space
from tuner.simulate.paced_time import PacedTime
from tuner.simulate.replay import ReplayTrainer
from tuner.simulate.simulation import check_table
from tuner.simulate.table import load_table
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.record import FINISHED, records
from tuner.study.run.objective import StudyFailed
from tuner.study.run.overhead import WatchOverhead
from tuner.study.run.prepare import Prepared, prepare
from tuner.study.run.progress import Progress
from tuner.study.run.runnable import max_devices
from tuner.study.run.runner import make_sampler, run_study
from tuner.study.run.workers import die_with_parent
from tuner.study.storage.preflight import check_stores
from tuner.tasks.registry import build_task
from tuner.train.devices import DevicesBusy, claim_gpus
from tuner.train.trial import train_trial

# Workers that may start a new study at the same moment wait this long for each other's
# study id and study run (tuner/track/store.py), so that all of them keep the same ones.
SETTLE_S = 1.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="join a study as one more worker (this machine or another; same storage and tracking URLs)")
    add_run_flags(p, "worker")
    p.add_argument("--threads", type=int, help="torch threads for this worker (default: the experiment's trainer.threads, else 1)")
    p.add_argument(
        "--device",
        help="device for this worker's trials, e.g. cpu or cuda:1 (default: the experiment's; with GPUs, one this worker claims)",
    )
    p.add_argument(
        "--worker-index",
        type=int,
        dest="worker_index",
        help="this worker's number among the study's workers (0, 1, ...; a Job's completion index, a Slurm array task id): "
        "its sampler is seeded apart from the others', reproducibly (default: a random offset)",
    )
    p.add_argument(
        "--replay",
        metavar="TABLE",
        help="train nothing: each trial replays its configuration's recorded trial from TABLE (benchmarks/record_table.py) "
        "in real time, to rehearse a deployment or load-test the storage without accelerators",
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        dest="time_scale",
        help="with --replay: multiply every recorded time (0.1: a 5-s trial lasts 0.5 s); the experiment's cap_s is the scaled one",
    )
    # Set by `tuner run --workers` (tuner/study/run/workers.py) for the workers it starts.
    p.add_argument("--coordinated", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--confirm-queued", action="store_true", dest="confirm_queued", help=argparse.SUPPRESS)
    p.set_defaults(handler=main)


class ReseedSampler(StudyHooks):
    """Workers that start together would draw the same random configurations: each reseeds."""

    def __init__(self, experiment: Experiment, salt: int) -> None:
        self.experiment = experiment
        self.salt = salt

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        study.sampler = make_sampler(self.experiment, len(study.get_trials(deepcopy=False)) + self.salt)


def worker_experiment(args: argparse.Namespace) -> Experiment:
    """The experiment with this worker's flags: a flag beats the file; no confirmation here."""
    experiment = run_experiment(args)
    if args.threads is not None and args.threads < 1:
        raise ConfigError("tuner worker", "--threads", "an integer >= 1", args.threads)
    if args.worker_index is not None and args.worker_index < 0:
        raise ConfigError("tuner worker", "--worker-index", "an integer >= 0", args.worker_index)
    trainer = dataclasses.replace(
        experiment.trainer, threads=args.threads or experiment.trainer.threads, device=args.device or experiment.trainer.device
    )
    return dataclasses.replace(experiment, trainer=trainer, confirm=dataclasses.replace(experiment.confirm, after_search=False))


def claim_device(experiment: Experiment, args: argparse.Namespace) -> Experiment:
    """On GPUs, claim this worker's own (as many as a trial may use) unless a device was named."""
    if args.device is not None or experiment.trainer.device not in ("auto", "cuda") or not torch.cuda.is_available():
        return experiment
    try:
        gpus = claim_gpus(max_devices(experiment.search_space), args.share_devices, args.worker_index or 0)
    except DevicesBusy as err:
        raise ConfigError("tuner worker", "--device", "a free GPU (or --share-devices)", str(err)) from None
    return dataclasses.replace(experiment, trainer=dataclasses.replace(experiment.trainer, device=f"cuda:{gpus[0]}"))


def replaying(experiment: Experiment, args: argparse.Namespace) -> tuple[Prepared, ReplayTrainer, Callable[[], float]]:
    """With --replay: the table's space and a trainer that replays the table on the real clock (tuner/simulate/paced_time.py)."""
    if args.time_scale <= 0:
        raise ConfigError("tuner worker", "--time-scale", "a number > 0", args.time_scale)
    try:
        table = load_table(args.replay)
    except ValueError as err:
        raise ConfigError("tuner worker", "--replay", "a table of recorded trials", str(err)) from None
    check_table(experiment, table, args.time_scale)
    task = build_task(experiment.task, experiment.task_options)
    prepared = Prepared(torch.device("cpu"), task, table_space(table, experiment.search_space), notes=[])
    paced = PacedTime()
    return prepared, ReplayTrainer(table, paced, args.time_scale), paced.now


def main(args: argparse.Namespace) -> int:
    if args.coordinated:
        die_with_parent()
    experiment = worker_experiment(args)
    if args.replay is None and args.time_scale != 1.0:
        raise ConfigError("tuner worker", "--time-scale", "only with --replay", args.time_scale)
    if args.replay is None:
        experiment = claim_device(experiment, args)
    replay = replaying(experiment, args) if args.replay is not None else None  # a table that does not fit: refused before any write
    check_stores(experiment, tracking=args.tracking)  # before seconds of preparing
    prepared, trainer, now = replay or (prepare(experiment), train_trial, time.perf_counter)
    salt = (args.worker_index + 1) * 1_000_003 if args.worker_index is not None else random.randrange(1, 2**30)
    overhead = WatchOverhead()
    hooks: list[StudyHooks] = [ReseedSampler(experiment, salt)]
    if args.tracking:
        from tuner.track.trial_runs import MlflowTracking  # importing mlflow takes seconds: only when tracking

        hooks.append(
            MlflowTracking(
                experiment.tracking_uri,
                source=redact(args.experiment),
                summary=not args.coordinated,
                settle_s=0.0 if args.coordinated else SETTLE_S,
                shared=not args.coordinated,  # the worker that ends the study's last trial writes its summary
            )
        )
    if not args.quiet:
        print(
            f"worker on study {experiment.name!r} at {redact(experiment.storage)}, device {prepared.device}, "
            f"{torch.get_num_threads()} thread(s)",
            file=sys.stderr,
        )
    try:
        with signals.handled():
            study = run_study(
                experiment,
                progress=Progress(quiet=args.quiet),
                prepared=prepared,
                hooks=[*hooks, overhead],  # last: it times the sampler the others chose
                search=not args.confirm_queued,
                trainer=trainer,
                now=now,
            )
    except StudyFailed as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:
        if not args.quiet:
            print(f"tuner: {err or 'interrupted'}; the running trial is recorded as interrupted.", file=sys.stderr)
        return signals.exit_code(err)
    if not args.quiet:
        print(f"worker done: study {experiment.name!r} has {len(records(study, FINISHED))} finished trials", file=sys.stderr)
        print(f"worker overhead: {overhead.line()}", file=sys.stderr)
    return 0
