"""Test helper: the processes of a session, read from /proc (field 6 of /proc/PID/stat)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is ``sid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may hold spaces: split after it.
        fields = stat.rsplit(")", 1)[1].split()
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            members.append(int(entry.name))
    return members


def wait_for_members(sid: int, at_least: int, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    members = session_members(sid)
    while len(members) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
        members = session_members(sid)
    return members


def wait_until_empty(sid: int, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    members = session_members(sid)
    while members and time.monotonic() < deadline:
        time.sleep(0.1)
        members = session_members(sid)
    return members


__all__ = ["os", "session_members", "wait_for_members", "wait_until_empty"]
