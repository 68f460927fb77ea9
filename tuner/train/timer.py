"""Time in one place: a host clock that synchronises the device only when asked."""

from __future__ import annotations

import time

import torch


class Timer:
    """``now()`` reads the host clock; ``sync()`` waits for queued device work.

    Only evaluation boundaries call ``sync()``, so the hot loop never waits for the
    device. Tests pass a fake with the same two methods.
    """

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)

    def now(self) -> float:
        return time.perf_counter()

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
