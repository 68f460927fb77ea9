"""run_group: a signal to the parent takes the child's whole process group down."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from proc_scan import session_members, wait_for_members, wait_until_empty

DRIVER = "import sys; from tuner.process_group import run_group; sys.exit(run_group(sys.argv[1:], grace_s=5))"
# A child that starts helpers of its own, as `mlflow ui` does, and ignores nothing.
CHILD = ["sh", "-c", "sleep 300 & sleep 300 & wait"]


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_every_process(signum: int) -> None:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, *CHILD], start_new_session=True)
    try:
        members = wait_for_members(driver.pid, at_least=4, timeout_s=20)  # driver, sh, two sleeps
        assert len(members) >= 4, members
        driver.send_signal(signum)
        assert driver.wait(timeout=20) == 128 + signum
        assert wait_until_empty(driver.pid, timeout_s=10) == []
    finally:
        for pid in session_members(driver.pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)


def test_child_exit_takes_its_helpers_down() -> None:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, "sh", "-c", "sleep 300 & exit 3"], start_new_session=True)
    assert driver.wait(timeout=20) == 3
    assert wait_until_empty(driver.pid, timeout_s=10) == []
