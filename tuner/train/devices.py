"""Which devices a worker uses: the device named in the experiment, its share of the CPU
threads, or GPUs it claims for itself.

Workers on one machine never train two trials on one GPU unless asked (``share``): each
worker claims the GPUs it needs by holding an exclusive lock file per GPU (keyed by the
GPU's UUID, so any CUDA_VISIBLE_DEVICES order agrees). The kernel drops a lock when its
process dies, however it dies, so a crashed worker never keeps a GPU. Data-parallel trials
(tuner/train/data_parallel.py) use the worker's GPUs in the order claimed: rank r on the r-th.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from typing import IO

import torch

LOCK_DIR = Path(tempfile.gettempdir()) / "tuner-gpus"

_claimed: list[int] | None = None  # this process's GPUs, in rank order; None: not claimed
_held: list[IO[str]] = []  # open lock files: closing one would free its GPU


class DevicesBusy(Exception):
    """Fewer free GPUs than a worker needs, and sharing was not asked for."""


def resolve_device(setting: str = "auto") -> torch.device:
    """The device named by ``trainer.device``: auto is the GPU when there is one."""
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA is not available on this machine")
    return device


def configure_threads(threads: int) -> None:
    """Set torch's intra-op threads; more threads than cores only slows small models."""
    torch.set_num_threads(threads)


def cpu_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def gpu_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def split_threads(cores: int, n_workers: int) -> list[int]:
    """Torch threads per worker: the cores split evenly, at least one each.

    More threads than cores in all only slow small models down (API-NOTES.md 14), so with
    more workers than cores each gets one thread and the machine is oversubscribed.
    """
    base, extra = divmod(cores, n_workers)
    return [max(1, base + (1 if i < extra else 0)) for i in range(n_workers)]


def worker_threads(configured: int | None, n_workers: int) -> list[int]:
    """Torch threads of each of ``n_workers`` worker processes: ``trainer.threads`` where set, else the cores split."""
    return [configured] * n_workers if configured else split_threads(cpu_cores(), n_workers)


def _gpu_key(index: int) -> str:
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return str(uuid) if uuid is not None else f"index-{index}"


def claim_gpus(count: int, share: bool = False, worker_index: int = 0) -> list[int]:
    """Claim ``count`` GPUs for this process (held until it exits); returns their indices.

    Free GPUs first; when too few are free and ``share`` is set, the rest are taken
    round-robin from all of them (two workers then train on one GPU); else DevicesBusy.
    """
    global _claimed
    total = gpu_count()
    if count > total:
        raise DevicesBusy(f"a trial needs {count} GPUs; this machine has {total}")
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    mine: list[int] = []
    handles: list[IO[str]] = []
    for index in range(total):
        if len(mine) == count:
            break
        handle = open(LOCK_DIR / f"{_gpu_key(index)}.lock", "a+")  # noqa: SIM115 -- held open: closing it frees the GPU
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        handles.append(handle)
        mine.append(index)
    if len(mine) < count and not share:
        for handle in handles:
            handle.close()  # frees them for the others
        raise DevicesBusy(
            f"only {len(mine)} of this machine's {total} GPUs are free (held by other tuner workers, see {LOCK_DIR}) "
            f"and a trial needs {count}; pass --share-devices to train two trials on one GPU"
        )
    _held.extend(handles)
    others = [i for i in range(total) if i not in mine]
    start = worker_index * count
    while len(mine) < count:  # sharing: spread workers over the GPUs
        candidates = others or list(range(total))
        mine.append(candidates[(start + len(mine)) % len(candidates)])
    _claimed = mine
    return mine


def trial_devices(device: torch.device, n: int) -> list[torch.device]:
    """The devices of an ``n``-process trial whose rank 0 runs on ``device``."""
    if device.type != "cuda":
        return [device] * n
    gpus = _claimed if _claimed is not None else list(range(gpu_count()))
    first = device.index if device.index is not None else gpus[0]
    order = [first] + [g for g in gpus if g != first]
    if n > len(order):
        raise ValueError(f"a trial on {n} devices needs {n} GPUs; this worker has {len(order)}")
    return [torch.device("cuda", g) for g in order[:n]]


def available(device: torch.device) -> int:
    """How many processes a data-parallel trial may use here: GPUs, or cores on a CPU."""
    if device.type == "cuda":
        return len(_claimed) if _claimed is not None else gpu_count()
    return cpu_cores()
