"""The replay's clock in a real process: recorded time passes as real time.

`tuner worker --replay` (tuner/cli/worker.py) runs a real worker on a real storage whose
trials replay recorded ones (tuner/simulate/replay.py) instead of training: a rehearsal of a
deployment, or a load test of the storage, with no accelerator. Its trials must last what
the recording says (scaled), on a clock other processes share, so that heartbeats, a
SIGKILL mid-trial and a study's time budget mean what they mean in production.

``PacedTime`` has ``VirtualTime``'s ``now``, ``advance`` and ``sync``: ``advance`` moves
the replay's time on without sleeping (thousands of steps per trial), and ``sync``, called
where the replay reads or writes the study, sleeps until the real clock catches up. Where
the real clock is ahead (the storage, the sampler, a busy machine), the replay's time jumps
to it: a trial's times include the overhead the study's calls cost it, as a real trial's do.
"""

from __future__ import annotations

import time


class PacedTime:
    """The replay's time on the host's monotonic clock (see the module's docstring); one thread."""

    def __init__(self) -> None:
        self._time = time.monotonic()

    def now(self) -> float:
        return self._time

    def advance(self, seconds: float) -> None:
        self._time += seconds

    def sync(self) -> None:
        """Sleep until the real clock reaches the replay's time, or move the replay's time up to it."""
        ahead = self._time - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
        self._time = max(self._time, time.monotonic())
