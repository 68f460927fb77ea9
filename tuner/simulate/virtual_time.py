"""Simulated workers on one virtual clock: the next event first, deterministically.

Each worker is a thread that runs the real study loop (tuner/study/run/runner.py) with a
replay trainer. A worker keeps its own time, which only it moves forward (``advance``);
before it does anything others can see or must have seen (it reads or writes the study at
an evaluation, or as a trial starts and ends) it calls ``sync``, which lets every worker
whose time is earlier run first. One thread runs at a time, the one with the earliest time
(ties: the lowest worker number), so a study of 64 workers runs in one process, in an order
that depends on nothing but the recorded times and the seed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuner.simulate.paced_time import PacedTime


class VirtualTime:
    """The clock and the turns of simulated workers (see the module's docstring)."""

    def __init__(self) -> None:
        self._turn = threading.Condition()
        self._waiting: dict[int, float] = {}  # worker -> the time it waits to run at
        self._running: int | None = None
        self._local = threading.local()
        self.errors: list[BaseException] = []

    def now(self) -> float:
        """The calling worker's time, in virtual seconds (the study's ``now`` and the replay's timer read it)."""
        return self._local.time

    def advance(self, seconds: float) -> None:
        """Move the calling worker's time forward; nobody else runs meanwhile."""
        self._local.time += seconds

    def sync(self) -> None:
        """Let every worker whose time is earlier than the caller's run first."""
        me = self._local.worker
        with self._turn:
            self._waiting[me] = self._local.time
            self._pass_turn()
            self._turn.wait_for(lambda: self._running == me)

    def run(self, workers: list[Callable[[], None]]) -> float:
        """Run the workers from time 0 until each has returned; the time the last one ended.

        An exception in a worker ends that worker; the first is re-raised once all are done.
        """
        self._running = None
        self._waiting = dict.fromkeys(range(len(workers)), 0.0)
        ends: list[float] = []
        threads = [threading.Thread(target=self._worker, args=(i, fn, ends), daemon=True) for i, fn in enumerate(workers)]
        for t in threads:
            t.start()
        with self._turn:
            self._pass_turn()
        for t in threads:
            t.join()
        if self.errors:
            raise self.errors[0]
        return max(ends, default=0.0)

    def _worker(self, number: int, fn: Callable[[], None], ends: list[float]) -> None:
        self._local.worker, self._local.time = number, 0.0
        with self._turn:
            self._turn.wait_for(lambda: self._running == number)
        try:
            fn()
        except BaseException as err:  # noqa: BLE001 - kept and re-raised by run(), once every worker is done
            self.errors.append(err)
        finally:
            ends.append(self._local.time)
            with self._turn:
                self._waiting.pop(number, None)
                self._pass_turn()

    def _pass_turn(self) -> None:
        """Give the turn to the waiting worker with the earliest time (held lock)."""
        if self._waiting:
            self._running = min(self._waiting, key=lambda w: (self._waiting[w], w))
            del self._waiting[self._running]
        else:
            self._running = None
        self._turn.notify_all()


class VirtualTimer:
    """A trial's timer on the virtual clock (``tuner.train.timer.Timer``'s four methods):
    the host clock is the worker's time; the thread's CPU clock is kept by the replay."""

    def __init__(self, time: VirtualTime | PacedTime) -> None:
        self.time = time
        self.cpu = 0.0

    def now(self) -> float:
        return self.time.now()

    def cpu_now(self) -> float:
        return self.cpu

    def thread_now(self) -> tuple[float, int]:
        return self.cpu, 0  # a replayed step is never interrupted: the recording's time is its own

    def sync(self) -> None:
        pass  # no device: the recorded times are the device's already
