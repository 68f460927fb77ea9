"""CPU seconds of the trial's worker processes: a Dataset task's DataLoader workers.

The cpu clock (tuner/train/clocks.py) counts CPU time, which holds on a busy machine where
the host clock does not; but a loader with ``num_workers`` decodes and augments in other
processes, and the training thread's own time does not see that work: the data pipeline's
levers would look free. So the clock adds the CPU time of this process's children:

- live ones: every ``multiprocessing`` child (DataLoader's workers are started so), read
  from its process CPU clock (Linux: nanoseconds, threads included);
- ended ones: a non-persistent loader's workers end with each epoch, and DataLoader joins
  them in the training thread; the kernel then adds a child's CPU time to this process's
  children's time (``os.times()``), which is read instead.

Only differences between two readings are used (the train clock's intervals), so children
started and ended outside training (evaluation's loaders, a benchmark's busy processes)
do not count. Elsewhere than Linux, live children are not read (their time counts once they end).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

CPUCLOCK_SCHED = 2  # linux/posix-timers.h: a process's CPU clock id is (~pid << 3) | CPUCLOCK_SCHED


def process_cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid`` (all its threads); 0.0 once it has been reaped, or where unreadable."""
    if sys.platform != "linux":
        return 0.0
    try:
        # clock_getcpuclockid(pid) without ctypes: the kernel's fixed encoding of a process's CPU clock.
        return time.clock_gettime((~pid << 3) | CPUCLOCK_SCHED)
    except OSError:  # reaped meanwhile: its time is in the children's time now
        return 0.0


def children_cpu_s() -> float:
    """CPU seconds of this process's child processes: the live ``multiprocessing`` ones and every ended one it reaped."""
    # Live children first: active_children() reaps those that ended, moving their time to os.times() read after.
    live = sum(process_cpu_s(p.pid) for p in multiprocessing.active_children() if p.pid is not None)
    ended = os.times()
    return live + ended.children_user + ended.children_system
