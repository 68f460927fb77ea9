"""A background thread for tracking writes, so that a study never waits on its tracking store.

The study's thread queues each write (open a trial's run, a batch of metrics, close a run)
as a small function and goes on; one daemon thread runs them in order. Order is what keeps
a run consistent: a run's metrics and its closing come after its opening, always.

The first write that fails takes the writer offline: it says so once (``on_failure``),
and drops what is queued and what comes later, so that a store that went away costs one
timeout, not one per write. What MLflow missed is filled in from the Optuna storage by
`tuner sync`, or by the next run of the study.

The queue is drained, within a bound, at the end of a study (tuner/track/trial_runs.py),
which is also the path a SIGINT or SIGTERM takes, and at interpreter exit for a writer
whose study never ended cleanly. A second signal during a drain raises on the waiting
thread, as everywhere else (tuner/signals.py): the writes still queued are then lost to
MLflow, not to the study.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

# At interpreter exit, how long a writer whose study did not drain it may take.
EXIT_DRAIN_S = 10.0

FailureListener = Callable[[str, Exception], None]
_STOP = None  # the queue item that ends the thread


class BackgroundWriter:
    """Runs queued writes on one daemon thread, in order; started on the first write."""

    def __init__(self, on_failure: FailureListener, name: str = "tuner-tracking-writer") -> None:
        """``on_failure(what, error)`` is called once, on the writer's thread, by the first failing write."""
        self.on_failure = on_failure
        self.name = name
        self.offline = False
        self.busy_s = 0.0  # time spent in writes, on the writer's thread (benchmarks/tracking_overhead.py)
        self._jobs: queue.Queue[tuple[str, Callable[[], Any]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, what: str, write: Callable[[], Any]) -> None:
        """Queue ``write``; ``what`` names it in the failure message ("closing a trial run")."""
        if self.offline:
            return
        self._start()
        self._jobs.put((what, write))

    def pending(self) -> int:
        """Writes queued or running now."""
        return self._jobs.unfinished_tasks

    def drain(self, timeout_s: float) -> int:
        """Wait until every queued write is done, at most ``timeout_s``; returns how many are left."""
        end = time.monotonic() + timeout_s
        # Queue.join() has no timeout: wait on the condition it uses, in bounded steps.
        with self._jobs.all_tasks_done:
            while self._jobs.unfinished_tasks:
                left = end - time.monotonic()
                if left <= 0:
                    return self._jobs.unfinished_tasks
                self._jobs.all_tasks_done.wait(left)
        return 0

    def close(self, timeout_s: float) -> int:
        """Drain, then end the thread (a later write starts a new one); returns the writes left."""
        left = self.drain(timeout_s)
        with self._lock:
            if self._thread is not None and left == 0:
                self._jobs.put(_STOP)
                self._thread.join(timeout=1.0)
                self._thread = None
                _open.discard(self)
        return left

    def abandon(self) -> None:
        """Give up on what is queued (a drain that ran out of time): drop it, and do not wait at exit."""
        self.offline = True
        _open.discard(self)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
                _open.add(self)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is _STOP:
                    return
                what, write = job
                if not self.offline:
                    start = time.perf_counter()
                    try:
                        write()
                    finally:
                        self.busy_s += time.perf_counter() - start
            except Exception as err:  # noqa: BLE001 - any failure of the store: report once, drop the rest
                self.offline = True
                self.on_failure(what, err)
            finally:
                self._jobs.task_done()


# Writers with a thread, drained at exit: a daemon thread would otherwise die with its queue.
_open: set[BackgroundWriter] = set()


@atexit.register
def _drain_at_exit() -> None:
    for writer in list(_open):
        writer.drain(EXIT_DRAIN_S)
