"""Time in one place: a host clock that synchronises the device only when asked."""

from __future__ import annotations

import time

import torch

from tuner.train.worker_cpu import children_cpu_s


class Timer:
    """``now()`` reads the host clock, ``cpu_now()`` the trial's CPU time; ``sync()`` waits
    for queued device work.

    Only evaluation boundaries call ``sync()``, so the hot loop never waits for the
    device. Tests pass a fake with the same three methods.
    """

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)

    def now(self) -> float:
        return time.perf_counter()

    def cpu_now(self) -> float:
        """CPU seconds of the calling thread (the training thread's own work, not its waits) and of
        the child processes that work for it: a DataLoader's workers (tuner/train/worker_cpu.py)."""
        return time.thread_time() + children_cpu_s()

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
