"""Run a child command in its own process group, and take every process of it down on a signal.

`tuner ui` starts `mlflow ui`, which starts a web server and job-runner processes of its
own. A signal sent to `tuner ui` alone (SIGTERM from a service manager, SIGINT from a
script) would leave them running, so the child gets a process group of its own, the
signal is forwarded to the whole group, and `run_group` returns only once no process of
the group is left (SIGKILL after a grace period).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from types import FrameType

FORWARDED = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 10.0


def group_alive(pgid: int) -> bool:
    """True while any process of the group exists (zombies of our own child included)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of the group exists but is no longer ours to signal
        return True
    return True


def stop_group(proc: subprocess.Popen, signum: int = signal.SIGTERM, grace_s: float = GRACE_S) -> None:
    """Signal the child's group, wait until every member is gone; SIGKILL what outlives the grace."""
    pgid = proc.pid
    deadline = time.monotonic() + grace_s
    for sig in (signum, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        while time.monotonic() < deadline:
            proc.poll()  # reap our child, so its zombie does not keep the group alive
            if not group_alive(pgid):
                return
            time.sleep(0.05)
        deadline = time.monotonic() + grace_s


def run_group(command: list[str], grace_s: float = GRACE_S) -> int:
    """Run ``command`` in a new process group; forward SIGINT and SIGTERM to all of it.

    Returns the child's exit code, or 128 + the signal's number when a signal stopped it.
    """
    proc = subprocess.Popen(command, process_group=0)  # same session, own group: a terminal's Ctrl-C reaches us only
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        while proc.poll() is None and not received:
            time.sleep(0.1)
        if received:
            stop_group(proc, received[0], grace_s)
        else:
            stop_group(proc, signal.SIGTERM, grace_s)  # the server exited: its helpers go with it
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 + received[0] if received else (proc.returncode or 0)
