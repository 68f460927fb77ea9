"""Which process runs a trial, so that a trial whose process is gone is failed at once.

Heartbeats find a dead worker only after ``heartbeat.grace_s`` of silence: a run resumed
sooner, and ended sooner, left its killed trial RUNNING for good. A worker on the same
machine can know better: the trial records its process (pid and the kernel's start time of
that process, since a pid alone is reused) and the process namespace it lives in; a worker
that shares that namespace and finds no process with that pid and start time knows the
trial's owner is gone. Workers elsewhere (another host, another container) cannot tell, and
keep to the heartbeat.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path
from typing import Any

# The trial system attribute that holds the owner, written in the transaction that starts the trial.
OWNER_KEY = "tuner:owner"


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def start_ticks(pid: int) -> int | None:
    """The kernel's start time of process ``pid`` (clock ticks since boot); None when no such process runs."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None  # killed, not yet reaped by its parent: gone all the same
    return int(fields[19])


def process_age_s() -> float:
    """Seconds since this process started (its interpreter's start and imports included); 0 where /proc cannot tell."""
    started, uptime = start_ticks(os.getpid()), _read("/proc/uptime")
    if started is None or uptime is None:
        return 0.0
    return max(0.0, float(uptime.split()[0]) - started / os.sysconf("SC_CLK_TCK"))


@cache
def namespace() -> str | None:
    """This boot of this machine and this process namespace: where a pid means the same process."""
    boot, pid_ns = _read("/proc/sys/kernel/random/boot_id"), _readlink("/proc/self/ns/pid")
    return f"{boot}/{pid_ns}" if boot and pid_ns else None


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def this_process() -> dict[str, Any] | None:
    """The owner record of a trial this process starts; None where /proc cannot tell (then heartbeats only)."""
    started, where = start_ticks(os.getpid()), namespace()
    if started is None or where is None:
        return None
    return {"host": socket.gethostname(), "namespace": where, "pid": os.getpid(), "started": started}


def is_gone(owner: Any) -> bool:
    """True when the trial's owner shares this namespace and its process no longer runs; False when unknown."""
    try:
        if owner["namespace"] != namespace():
            return False
        return start_ticks(int(owner["pid"])) != int(owner["started"])
    except (ValueError, KeyError, TypeError):
        return False  # written by something else: leave it to the heartbeat
