"""Data-parallel trials: one trial on several devices with DistributedDataParallel.

A trial with ``devices: N`` (a search dimension, or fixed in the experiment's space) trains
on N processes. Rank 0 is the worker's own process and keeps the trial's bookkeeping
(clocks, evaluations, pruning, capping, tracking); ranks 1..N-1 are started for the trial
with torch.multiprocessing (spawn) and build the task again by name. Backend: ``gloo`` on
CPUs, ``nccl`` on GPUs (rank r on the worker's r-th GPU, tuner/train/devices.py). Every
rank runs the same training loop as a single-process trial (tuner/train/loop.py) with a
``DataParallelRank``.

Batch size: ``batch_size`` is the effective batch of one optimizer step, split evenly
between the processes (each takes ``batch_size // N``; the remainder is dropped), so a
configuration trains the same way whatever N is and ``devices`` changes only the speed.
Samples, the evaluation cadence and the throughput count the samples of all processes;
the result also keeps each process's own count (``rank_samples``).

Control: every step, rank 0 broadcasts one flag, continue or stop, on a gloo group of CPU
tensors (no device sync in the hot loop). At an evaluation, rank 0 alone evaluates its own
replica and decides before that broadcast, so every rank stops at the same step. Starting
the processes and building the task there is setup (``setup_s``), outside the train clock.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from tuner.tasks.base import Task
from tuner.train.devices import trial_devices
from tuner.train.loop import train
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig

BACKENDS = {"cpu": "gloo", "cuda": "nccl"}
# Ranks wait at the next step while rank 0 evaluates; an evaluation never takes this long.
COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=10)
START_POLL = datetime.timedelta(seconds=1)


class HelperFailed(RuntimeError):
    """A rank other than 0 died; the message is its error's last line (a RuntimeError, so an
    out-of-memory there is classified as one, tuner/train/memory.py)."""


class DataParallelRank:
    """One process of a data-parallel trial, for the training loop (tuner/train/loop.py).

    Made after the process group is initialised: it opens the gloo group of the stop flags.
    """

    def __init__(self, rank: int, world: int, device: torch.device, frozen_start: bool = False) -> None:
        if device.type == "cuda":
            torch.cuda.set_device(device)  # NCCL works on the current device: make it this rank's
        self.rank, self.world, self.device = rank, world, device
        self.frozen_start = frozen_start  # a fine-tune whose body starts frozen (freeze_frac > 0)
        self.control = dist.new_group(backend="gloo")  # CPU flags: reading one never waits for a GPU
        self._flag = torch.zeros(1, dtype=torch.int32)

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        # DDP also broadcasts rank 0's weights, though every rank built the same ones (and
        # only rank 0 loaded a pretrained start). DDP syncs only the parameters that need
        # gradients when it is built: a body frozen now and thawed later must be registered
        # too, and is then "unused" until thawed (hence find_unused_parameters, a graph walk
        # per step, for these trials only).
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        if not self.frozen_start:
            return DistributedDataParallel(model, device_ids=device_ids)
        frozen = [p for p in model.parameters() if not p.requires_grad]
        for p in frozen:
            p.requires_grad_(True)
        try:
            return DistributedDataParallel(model, device_ids=device_ids, find_unused_parameters=True)
        finally:
            for p in frozen:
                p.requires_grad_(False)

    def shuffle_device(self, device: torch.device) -> torch.device:
        return torch.device("cpu")  # the very same order on every rank and every GPU model

    def agree_to_stop(self, stop: bool) -> bool:
        if self.rank == 0:
            self._flag[0] = int(stop)
        dist.broadcast(self._flag, src=0, group=self.control)  # every step: the ranks stop at the same one
        return bool(self._flag.item())  # a CPU tensor: no device sync

    def gather_samples(self, mine: int) -> list[int]:
        """Each rank's count of the samples it trained on, in rank order (a collective: all ranks call it)."""
        counts = [torch.zeros(1, dtype=torch.int64) for _ in range(self.world)]
        dist.all_gather(counts, torch.tensor([mine], dtype=torch.int64), group=self.control)
        return [int(c.item()) for c in counts]


def train_data_parallel(
    task: Task,
    config: TrialConfig,
    device: torch.device,
    seed: int,
    tt: TimeToTarget,
    keep: Callable[[torch.nn.Module], None] | None = None,
) -> list[int]:
    """Train on ``config.devices`` processes until ``tt`` ends the trial; returns each rank's samples.

    ``keep`` sees rank 0's model (unwrapped from DDP) once the trial has ended: every rank
    holds the same weights then. A pretrained start (``task.init_state``) is loaded on rank 0
    only: DDP broadcasts rank 0's weights to the other ranks when it wraps the model.
    """
    if task.spec is None:
        raise ValueError(
            "a data-parallel trial needs a task built by name (tuner.tasks.registry.build_task), so other processes can build it"
        )
    world = config.devices
    devices = trial_devices(device, world)
    threads = max(1, torch.get_num_threads() // world)  # the worker's threads, split between its ranks
    with tempfile.TemporaryDirectory(prefix="tuner-ddp-") as folder:
        store_path = str(Path(folder) / "store")
        helpers = mp.start_processes(
            _helper,
            args=(world, task.spec, config, [str(d) for d in devices], seed, store_path, threads),
            nprocs=world - 1,
            join=False,
            start_method="spawn",
        )
        try:
            with _threads(threads):
                store = dist.FileStore(store_path, world)
                _wait_for_helpers(store, world, helpers)
                dist.init_process_group(BACKENDS[device.type], store=store, rank=0, world_size=world, timeout=COLLECTIVE_TIMEOUT)
                try:
                    return _run_rank(task, config, devices[0], seed, 0, world, tt, keep)
                finally:
                    dist.destroy_process_group()
        except BaseException as err:
            _stop(helpers)
            failure = None if isinstance(err, HelperFailed) else _helper_failure(helpers)
            if failure is not None and isinstance(err, Exception):
                raise HelperFailed(failure) from err  # the real cause (an OOM on rank 1, say), not "connection closed"
            raise
        finally:
            with contextlib.suppress(Exception):  # a helper's own error was reported above, or the trial already ended
                helpers.join(timeout=30)


def _helper(
    index: int, world: int, spec: tuple[str, dict], config: TrialConfig, devices: list[str], seed: int, store_path: str, threads: int
) -> None:
    """Ranks 1..N-1: the same steps on their share of each batch; rank 0 says when to stop."""
    from tuner.tasks.registry import build_task  # the task's own imports happen here, in this process

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; rank 0 decides
    torch.set_num_threads(threads)
    rank = index + 1
    device = torch.device(devices[rank])
    task = build_task(*spec)
    store = dist.FileStore(store_path, world)
    store.set(f"ready{rank}", "1")
    dist.init_process_group(BACKENDS[device.type], store=store, rank=rank, world_size=world, timeout=COLLECTIVE_TIMEOUT)
    try:
        _run_rank(task, config, device, seed, rank, world, None)
    finally:
        dist.destroy_process_group()
    os._exit(0)  # nothing left to flush; torch's interpreter teardown would hold rank 0 for seconds


def _run_rank(
    task: Task,
    config: TrialConfig,
    device: torch.device,
    seed: int,
    rank: int,
    world: int,
    tt: TimeToTarget | None,
    keep: Callable[[torch.nn.Module], None] | None = None,
) -> list[int]:
    """One rank: the trial's training loop on its share of each batch; every rank's samples."""
    parallel = DataParallelRank(rank, world, device, frozen_start=config.freeze_frac > 0)
    mine = train(task, config, device, seed, tt, parallel, keep)
    return parallel.gather_samples(mine)


def _wait_for_helpers(store: Any, world: int, helpers: Any) -> None:
    """Wait for ranks 1..N-1 to start; a rank that died first ends the trial with its error."""
    keys = [f"ready{r}" for r in range(1, world)]
    while True:
        try:
            store.wait(keys, START_POLL)
            return
        except RuntimeError:  # not there yet
            failure = _helper_failure(helpers)
            if failure is not None:
                raise HelperFailed(failure) from None


def _helper_failure(helpers: Any) -> str | None:
    """The last line of the first error a helper rank died with, if one did."""
    for rank, proc in enumerate(helpers.processes, start=1):
        if proc.exitcode not in (None, 0) and proc.exitcode != -signal.SIGTERM:
            try:
                helpers.join(timeout=0)
            except mp.ProcessRaisedException as err:
                lines = [line for line in str(err).strip().splitlines() if line.strip()]
                return f"rank {rank}: {lines[-1] if lines else 'failed'}"
            except mp.ProcessExitedException as err:
                return f"rank {rank}: {err}"
            return f"rank {rank}: exited with code {proc.exitcode}"
    return None


def _stop(helpers: Any) -> None:
    for proc in helpers.processes:
        if proc.is_alive():
            proc.terminate()


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
