"""A storage outage is waited out (tuner/study/storage/outage.py): a real PostgreSQL restarted
under two `tuner worker`s, and one stopped for longer than ``heartbeat.retry_s``.

The server is this module's own (scripts/postgres.sh in a folder of its own), not the session's:
stopping it must not touch the other tests' studies.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
from conftest import REPO_ROOT, free_port, own_postgres, slow_experiment
from optuna.trial import TrialState

from tuner.study.storage.storage_errors import EXIT_STORAGE_LOST

SCRIPT = str(REPO_ROOT / "scripts" / "postgres.sh")


@dataclass
class Server:
    url: str
    data: Path

    def pg_ctl(self, *args: str) -> None:
        """pg_ctl on this server's data folder, as its owner (root runs it as `postgres`, as postgres.sh does)."""
        binary = shutil.which("pg_ctl") or next(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        cmd = [str(binary), "-D", str(self.data), "-w", "-t", "60", *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        # From the server's folder (`postgres` may not enter the test's), its output to its log, not our pipe.
        subprocess.run(cmd, check=True, capture_output=True, timeout=90, cwd=self.data.parent)

    def restart(self, down_s: float = 3.0) -> None:
        """Stopped (``-m fast``: every connection dropped), down for ``down_s``, started again as it was.

        Down for longer than a few heartbeats, so that every process meets the outage: after an
        instant ``pg_ctl restart`` a process whose next write came once the server was back met
        none, rightly said nothing, and failed a test that counted its lines."""
        # The options it was started with (its port among them), which `pg_ctl start` would not reuse as `restart` does.
        _postgres, *options = shlex.split((self.data / "postmaster.opts").read_text())
        options = [o for o, before in zip(options, ["", *options[:-1]], strict=True) if o != "-D" and before != "-D"]
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped by the test
            self.pg_ctl("stop", "-m", "fast")
        time.sleep(down_s)
        self.pg_ctl("start", "-o", shlex.join(options), "-l", str(self.data.parent / "server.log"))


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with own_postgres("tuner-pg-outage-", "no PostgreSQL of this test's own: scripts/postgres.sh could not start one") as (url, folder):
        yield Server(url, folder / "data")


def worker(experiment: Path, storage: str, folder: Path, index: int, *more: str, command: str = "worker") -> subprocess.Popen[str]:
    """`tuner worker` (or, with ``command="run"``, `tuner run`) on ``storage``, untracked."""
    cmd = [sys.executable, "-m", "tuner", command, str(experiment), "--storage", storage, "--no-tracking", "--quiet", *more]
    if command == "worker":
        cmd += ["--worker-index", str(index)]
    env = {**os.environ, "TUNER_CACHE_DIR": str(folder / "cache")}
    return subprocess.Popen(cmd, cwd=folder, env=env, stderr=subprocess.PIPE, text=True)


def finished(storage: str, name: str) -> int:
    try:
        trials = optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)
    except (KeyError, ValueError):
        return 0  # not created yet
    return sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)


def wait_for(condition, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


@pytest.mark.e2e
def test_a_worker_and_tuner_run_wait_out_a_postgres_restart_and_finish_the_exact_budget(tmp_path: Path, server: Server) -> None:
    # Trials train to a 0.5-s cap; a beat every second, so each process meets the outage while it trains.
    heartbeat = "heartbeat: {interval_s: 1, grace_s: 20, retry_s: 60}\nrace: null\n"
    experiment = slow_experiment(tmp_path, n_trials=12, cap_s=0.5, extra=heartbeat)
    workers = [worker(experiment, server.url, tmp_path, 0), worker(experiment, server.url, tmp_path, 1, command="run")]
    try:
        wait_for(lambda: finished(server.url, "slow") >= 4)
        server.restart()  # a maintenance restart: every connection dropped, the server down for a moment
        errors = [w.communicate(timeout=180)[1] for w in workers]
    finally:
        for w in workers:
            w.kill() if w.poll() is None else None
    assert [w.returncode for w in workers] == [0, 0], "\n=====\n".join(errors)
    for err in errors:
        assert "Traceback" not in err and "UnboundLocalError" not in err and "Caught an error" not in err, err
        assert err.count(" unreachable (") == err.count(" is back after ") == 1, err  # one line each
        assert "tuner:***@" in err and ":tuner@" not in err, err  # the password masked
    states = [t.state for t in optuna.load_study(study_name="slow", storage=server.url).get_trials(deepcopy=False)]
    assert TrialState.RUNNING not in states and TrialState.WAITING not in states, states
    assert finished(server.url, "slow") == 12, states  # race and confirmation off: every finished trial is a searched one


@pytest.mark.e2e
def test_an_outage_past_retry_s_exits_with_one_line_and_the_retryable_code(tmp_path: Path, server: Server) -> None:
    heartbeat = "heartbeat: {interval_s: 1, grace_s: 20, retry_s: 2}\nrace: null\n"
    experiment = slow_experiment(tmp_path, n_trials=200, cap_s=0.5, extra=heartbeat)
    one = worker(experiment, server.url, tmp_path, 0, "--study-name", "lost")
    try:
        wait_for(lambda: finished(server.url, "lost") >= 1)
        server.pg_ctl("stop", "-m", "fast")
        _, err = one.communicate(timeout=120)
    finally:
        one.kill() if one.poll() is None else None
        server.restart()  # started with the options it had (postmaster.opts)
    assert one.returncode == EXIT_STORAGE_LOST, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("tuner: error: storage postgresql://tuner:***@127.0.0.1:"), err
    assert f"exiting {EXIT_STORAGE_LOST}" in last and "retry_s" in last


@pytest.mark.e2e
def test_tuner_run_exits_with_the_retryable_code_when_its_workers_lost_the_storage(tmp_path: Path, server: Server) -> None:
    # `tuner run --workers 2`: each worker exits EXIT_STORAGE_LOST, and so does the run, which a launcher starts again.
    heartbeat = "heartbeat: {interval_s: 1, grace_s: 20, retry_s: 2}\nrace: null\n"
    experiment = slow_experiment(tmp_path, n_trials=200, cap_s=0.5, extra=heartbeat)
    run = worker(experiment, server.url, tmp_path, 0, "--study-name", "lost-run", "--workers", "2", command="run")
    try:
        wait_for(lambda: finished(server.url, "lost-run") >= 1)
        server.pg_ctl("stop", "-m", "fast")
        _, err = run.communicate(timeout=120)
    finally:
        run.kill() if run.poll() is None else None
        server.restart()
    assert run.returncode == EXIT_STORAGE_LOST, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("tuner: error: worker "), err


def start_proxy(experiment: Path, port: int, folder: Path) -> subprocess.Popen[str]:
    """`tuner storage-proxy` in a process of its own; returns once it listens."""
    cmd = [sys.executable, "-m", "tuner", "storage-proxy", str(experiment), "--port", str(port), "--threads", "4"]
    proxy = subprocess.Popen(cmd, cwd=folder, stderr=subprocess.PIPE, text=True, start_new_session=True)
    line = proxy.stderr.readline()  # "storage proxy for ... listening on ..." once it serves
    assert "listening on" in line, line + proxy.stderr.read()
    return proxy


@pytest.mark.e2e
def test_workers_wait_out_their_proxy_killed_and_started_again(tmp_path: Path) -> None:
    pytest.importorskip("grpc", reason="the grpc extra is not installed")
    heartbeat = "heartbeat: {interval_s: 1, grace_s: 20, retry_s: 60}\nrace: null\n"
    experiment = slow_experiment(tmp_path, n_trials=12, cap_s=0.5, extra=heartbeat)
    database, port = f"sqlite:///{tmp_path / 'study.db'}", free_port()
    proxy = start_proxy(experiment, port, tmp_path)
    workers = [worker(experiment, f"grpc://127.0.0.1:{port}", tmp_path, i) for i in range(2)]
    try:
        wait_for(lambda: finished(database, "slow") >= 4)
        proxy.kill()  # SIGKILL: no goodbye to the workers' calls under way
        proxy.wait()
        time.sleep(2)
        proxy = start_proxy(experiment, port, tmp_path)  # on the same port, as a restarted pod behind its Service
        errors = [w.communicate(timeout=180)[1] for w in workers]
    finally:
        for w in workers:
            w.kill() if w.poll() is None else None
        proxy.kill()
        proxy.wait()
    assert [w.returncode for w in workers] == [0, 0], "\n=====\n".join(errors)
    for err in errors:
        assert "Traceback" not in err and "UnboundLocalError" not in err, err
        assert err.count(f"storage grpc://127.0.0.1:{port} unreachable (UNAVAILABLE: ") == err.count(" is back after ") == 1, err
    states = [t.state for t in optuna.load_study(study_name="slow", storage=database).get_trials(deepcopy=False)]
    assert TrialState.RUNNING not in states and TrialState.WAITING not in states, states
    assert finished(database, "slow") == 12, states


@pytest.mark.e2e
def test_a_proxy_waits_out_its_own_database_restarted_and_its_workers_go_on(tmp_path: Path, server: Server) -> None:
    pytest.importorskip("grpc", reason="the grpc extra is not installed")
    heartbeat = "heartbeat: {interval_s: 1, grace_s: 20, retry_s: 60}\nrace: null\n"
    experiment = slow_experiment(tmp_path, n_trials=8, cap_s=0.5, extra=heartbeat)
    port = free_port()
    cmd = [sys.executable, "-m", "tuner", "storage-proxy", str(experiment), "--storage", server.url, "--port", str(port), "--threads", "4"]
    proxy = subprocess.Popen(cmd, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        assert "listening on" in proxy.stderr.readline()
        workers = [worker(experiment, f"grpc://127.0.0.1:{port}", tmp_path, i, "--study-name", "behind") for i in range(2)]
        try:
            wait_for(lambda: finished(server.url, "behind") >= 3)
            server.restart()
            errors = [w.communicate(timeout=180)[1] for w in workers]
        finally:
            for w in workers:
                w.kill() if w.poll() is None else None
    finally:
        proxy.send_signal(signal.SIGTERM)
        said = proxy.communicate(timeout=30)[1]
    assert [w.returncode for w in workers] == [0, 0], "\n=====\n".join(errors)
    assert "Traceback" not in "".join(errors), errors
    # The proxy waited for its database; its workers' calls waited for it, none failed.
    assert said.count(" unreachable (") == said.count(" is back after ") == 1 and "Traceback" not in said, said
    states = [t.state for t in optuna.load_study(study_name="behind", storage=server.url).get_trials(deepcopy=False)]
    assert TrialState.RUNNING not in states and TrialState.WAITING not in states, states
    assert finished(server.url, "behind") == 8, states
