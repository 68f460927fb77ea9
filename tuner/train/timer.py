"""Time in one place: a host clock that synchronises the device only when asked."""

from __future__ import annotations

import resource
import time

import torch

from tuner.train.worker_cpu import children_cpu_s

RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)  # Linux only; elsewhere no step counts as interrupted


class Timer:
    """``now()`` reads the host clock, ``cpu_now()`` the trial's CPU time (``thread_now()``
    the training thread's alone); ``sync()`` waits for queued device work.

    Only evaluation boundaries call ``sync()``, so the hot loop never waits for the
    device. Tests pass a fake with the same four methods.
    """

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)

    def now(self) -> float:
        return time.perf_counter()

    def cpu_now(self) -> float:
        """CPU seconds of the calling thread (the training thread's own work, not its waits) and of
        the child processes that work for it: a DataLoader's workers (tuner/train/worker_cpu.py)."""
        return time.thread_time() + children_cpu_s()

    def thread_now(self) -> tuple[float, int]:
        """CPU seconds of the calling thread alone (read every step, where the workers' clocks
        would cost more), and how many times the scheduler has taken its core away."""
        switches = resource.getrusage(RUSAGE_THREAD).ru_nivcsw if RUSAGE_THREAD is not None else 0
        return time.thread_time(), switches

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
