"""`tuner worker EXPERIMENT.yaml --storage URL`: one more worker on a study, from any machine.

Every machine runs the same command: the study lives in a database they all reach
(PostgreSQL), the runs in an MLflow tracking server. A worker creates the study if it is
new, runs trials until the study's budget is finished, counted over all workers
(tuner/study/storage/budget.py), and leaves confirmation to `tuner confirm` (one machine, afterwards).
`tuner run --workers N` starts its workers as this command runs (tuner/orchestrate/child.py).
With ``--replay TABLE`` the trials replay recorded ones in real time instead of training
(tuner/simulate/paced_time.py): a rehearsal of a launch, or a load test of the storage.
"""

from __future__ import annotations

import argparse

from tuner.cli.run_flags import add_run_flags, overrides
from tuner.orchestrate import RunOptions, WorkerRole, orchestrate


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
    p.add_argument(
        "--workers",
        type=int,
        dest="study_workers",
        help="how many workers run this study in all (the budget rule, pruner.name: auto, counts their trial-lengths; default: 1)",
    )
    p.set_defaults(handler=main)


def options_of(args: argparse.Namespace) -> RunOptions:
    """The flags as the orchestrator's options: one worker of the study, confirmation left to `tuner confirm`."""
    role = WorkerRole(index=args.worker_index, threads=args.threads, device=args.device, replay=args.replay, time_scale=args.time_scale)
    return RunOptions.for_worker(
        args.experiment,
        role,
        quiet=args.quiet,
        overrides=overrides(args),
        study_workers=args.study_workers,
        tracking=args.tracking,
        share_devices=args.share_devices,
    )


def main(args: argparse.Namespace) -> int:
    return orchestrate(options_of(args)).code
