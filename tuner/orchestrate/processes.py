"""The worker processes of `tuner run --workers N`: what each is given (its parent's options, with
its share of the machine and of the budget), serialized, never a command line rebuilt from flags."""

from __future__ import annotations

import dataclasses
import sys

from tuner.orchestrate.options import RunOptions, WorkerRole
from tuner.study.run.workers import Spawn, WorkerShare

CHILD = "tuner.orchestrate.child"  # the module a worker process runs: it reads its options on stdin


def child_options(options: RunOptions, share: WorkerShare) -> RunOptions:
    """One worker's options: its parent's, as a worker of the study; quiet (its parent shows the
    progress and the closing lines), its index, threads and time, and the study's worker count for
    the budget rule."""
    role = WorkerRole(index=share.index, threads=share.threads, coordinated=True, confirm_queued=share.confirm)
    timeout_s = share.timeout_s if share.timeout_s is not None else options.overrides.timeout_s
    return RunOptions.for_worker(
        options.experiment,
        role,
        quiet=True,
        overrides=dataclasses.replace(options.overrides, timeout_s=timeout_s),
        study_workers=options.all_workers,
        search=options.search,
        top_k=options.top_k,
        seeds=options.seeds,
        tracking=options.tracking,
        share_devices=options.share_devices,
        source=options.source,
    )


def spawn_for(options: RunOptions) -> Spawn:
    """What starts each worker: this Python running ``CHILD``, and its options as JSON on its stdin."""

    def spawn(share: WorkerShare) -> tuple[list[str], str]:
        return [sys.executable, "-m", CHILD], child_options(options, share).to_json()

    return spawn
