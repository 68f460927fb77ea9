"""One run at a time: an exclusive, non-blocking flock on a lock file.

The kernel drops a flock when its process dies, however it dies, so a crash or a kill
never leaves a stale lock behind. The file keeps who holds it, for the refusal message.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class Locked(Exception):
    """Another process holds the lock; ``holder`` says which."""

    def __init__(self, path: Path, holder: str) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"{path} is held by {holder or 'another process'}")


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold ``path`` for the duration; raises Locked at once if another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Locked(path, _holder(handle)) from None
        handle.seek(0)
        handle.truncate()
        since = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {since}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _holder(handle: Any, wait_s: float = 1.0) -> str:
    """Who holds the lock; the holder writes it just after taking the lock, so wait a moment for it."""
    end = time.monotonic() + wait_s
    while True:
        handle.seek(0)
        text = handle.read().strip()
        if text or time.monotonic() >= end:
            return text
        time.sleep(0.02)
