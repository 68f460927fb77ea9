"""`tuner ui`: the address of the study's runs, and SIGTERM or SIGINT stops everything it started."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port
from proc_scan import session_members, wait_until_empty


def start_ui(tmp_path: Path, tracking_uri: str, port: int) -> subprocess.Popen:
    # A session of its own, so that every process `tuner ui` starts can be found by its session id.
    return subprocess.Popen(
        [sys.executable, "-m", "tuner", "ui", "--tracking-uri", tracking_uri, "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_until_serving(proc: subprocess.Popen, port: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the MLflow UI did not start"
            time.sleep(0.5)


# SIGINT takes the same path (tests/test_process_group.py checks both signals): with -m slow only.
@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_signal_leaves_no_process_of_tuner_ui(tmp_path: Path, tracking_uri: str, signum: int) -> None:
    port = free_port()
    proc = start_ui(tmp_path, tracking_uri, port)
    try:
        wait_until_serving(proc, port)
        started = session_members(proc.pid)
        assert len(started) >= 3, started  # tuner ui, mlflow's CLI, its server (and job runners)
        proc.send_signal(signum)  # to `tuner ui` alone, as a service manager or a script sends it
        assert proc.wait(timeout=60) == 128 + signum
        assert wait_until_empty(proc.pid, timeout_s=15) == []
    finally:
        for pid in session_members(proc.pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)
