"""A tracking server that stalls mid-study: trials go on, and everything is written once it is back.

The server is a real `mlflow server` (the session's), stopped with SIGSTOP and resumed
with SIGCONT: to its clients it looks like a server that accepts connections and answers
nothing, the slowest a store can be without failing.
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from conftest import slow_experiment, synthetic_experiment
from mlflow import MlflowClient

from tuner.study.hooks import StudyHooks
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.track.sync import doctor
from tuner.track.trial_runs import MlflowTracking

NO_CONFIRM = "confirm:\n  after_search: false\n"
# Long enough that no write fails while the server is stopped (the default is 10 s).
PATIENT = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "120"}


def server_group(url: str) -> int:
    """The process group of the `mlflow server` listening at ``url`` (its CLI, uvicorn, job runner)."""
    port = url.rsplit(":", 1)[1].encode()
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            args = (proc / "cmdline").read_bytes().split(b"\0")
            if b"mlflow" in args and b"server" in args and port in args:
                return os.getpgid(int(proc.name))
    raise AssertionError(f"no mlflow server process for {url}")


@contextlib.contextmanager
def resumed_at_the_end(group: int) -> Iterator[None]:
    """Whatever happens in the test, the shared server runs again afterwards."""
    try:
        yield
    finally:
        os.killpg(group, signal.SIGCONT)


class TimedTracking(MlflowTracking):
    """MlflowTracking that adds up the time its per-trial hooks take on the study's thread while ``paused``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.paused = False
        self.paused_hook_s = 0.0

    def _timed(self, method, *args):
        start = time.perf_counter()
        try:
            return method(*args)
        finally:
            if self.paused:
                self.paused_hook_s += time.perf_counter() - start

    def trial_started(self, trial, config):
        return self._timed(super().trial_started, trial, config)

    def on_evaluation(self, tt, ev):
        return self._timed(super().on_evaluation, tt, ev)

    def trial_finished(self, trial, result, value):
        return self._timed(super().trial_finished, trial, result, value)


class PauseServer(StudyHooks):
    """SIGSTOP to the server as trial ``pause_at`` starts, SIGCONT as trial ``resume_at`` starts."""

    def __init__(self, group: int, tracking: TimedTracking, pause_at: int, resume_at: int) -> None:
        self.group, self.tracking, self.pause_at, self.resume_at = group, tracking, pause_at, resume_at
        self.stopped_at = 0.0
        self.paused_s = 0.0
        self.pending_at_resume = 0

    def trial_started(self, trial: optuna.Trial, config: object) -> None:
        if trial.number == self.pause_at:
            os.killpg(self.group, signal.SIGSTOP)
            self.stopped_at, self.tracking.paused = time.perf_counter(), True
        elif trial.number == self.resume_at:
            self.paused_s = time.perf_counter() - self.stopped_at
            self.pending_at_resume = self.tracking.writer.pending()
            self.tracking.paused = False
            os.killpg(self.group, signal.SIGCONT)


@pytest.mark.e2e
def test_trials_do_not_wait_on_a_stalled_server_and_all_is_written_when_it_is_back(
    tmp_path: Path, mlflow_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in PATIENT.items():
        monkeypatch.setenv(key, value)
    group = server_group(mlflow_server)
    experiment = load_experiment(synthetic_experiment(tmp_path / "stalled.yaml", NO_CONFIRM, n_trials=6)).with_overrides(
        tracking_uri=mlflow_server
    )
    stream = io.StringIO()
    tracking = TimedTracking(mlflow_server, stream=stream)
    pause = PauseServer(group, tracking, pause_at=1, resume_at=4)
    with resumed_at_the_end(group):
        study = run_study(experiment, hooks=[tracking, pause])

    assert stream.getvalue() == "", stream.getvalue()  # nothing failed: the writes waited for the server, the study did not
    assert pause.paused_s > 0
    # Trials 1-3 started and ended while the server answered nothing: their writes were queued
    # (an opening, a closing and the study run's figures each), not made.
    assert pause.pending_at_resume >= 3 * 3, pause.pending_at_resume
    # A synchronous write would have blocked until the server came back, which it does only when
    # trial 4 starts: until the request's timeout, then failed. Queued writes cost next to nothing
    # (the margin is for a loaded machine descheduling the study's thread mid-hook).
    assert tracking.paused_hook_s < 0.5 * pause.paused_s, (tracking.paused_hook_s, pause.paused_s)
    assert len(study.trials) == 6, [t.state for t in study.trials]
    assert doctor(study, mlflow_server) == []  # one closed run per trial, with Optuna's outcome and value
    client = MlflowClient(mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name("stalled").experiment_id], "tags.`tuner.role` = 'trial'")
    for run in runs:
        number = int(run.data.tags["tuner.trial_number"])
        curve = study.trials[number].user_attrs["curve"]
        assert [m.step for m in client.get_metric_history(run.info.run_id, "accuracy")] == curve["samples"]


def wait_running(db: Path, number: int, proc: subprocess.Popen[str], timeout: float = 90) -> None:
    """Until trial ``number`` is RUNNING (plain SQL: cheap enough to poll)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        if db.exists():  # connecting would create it: the study's own check must find it absent
            with contextlib.suppress(sqlite3.OperationalError), contextlib.closing(sqlite3.connect(db, timeout=1)) as con:
                if con.execute("SELECT 1 FROM trials WHERE number = ? AND state = 'RUNNING'", (number,)).fetchone():
                    return
        time.sleep(0.1)
    raise AssertionError(f"trial {number} never ran")


@contextlib.contextmanager
def tuner_run(folder: Path, experiment: str, mlflow_server: str) -> Iterator[subprocess.Popen[str]]:
    """`tuner run` in a fresh process, tracked on the server; killed if the test leaves it running."""
    env = {**os.environ, **PATIENT, "TUNER_CACHE_DIR": str(folder / "cache")}
    cmd = [sys.executable, "-m", "tuner", "run", experiment, "--tracking-uri", mlflow_server, "--quiet"]
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()


# Slow: a CLI process against a server frozen for seconds; beside another test process the
# client's requests can give up before the freeze ends (passes alone; run with -m slow).
@pytest.mark.slow
def test_sigterm_with_writes_queued_drains_them_before_exiting_and_doctor_passes(tmp_path: Path, mlflow_server: str) -> None:
    slow_experiment(tmp_path, n_trials=20, cap_s=2.5)
    group = server_group(mlflow_server)
    with tuner_run(tmp_path, "slow.yaml", mlflow_server) as proc:
        with resumed_at_the_end(group):
            wait_running(tmp_path / "study.db", 1, proc)
            os.killpg(group, signal.SIGSTOP)
            wait_running(tmp_path / "study.db", 3, proc)  # trials 1 and 2 ended while the server was stopped
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            time.sleep(1.5)
            assert proc.poll() is None  # the trial is recorded; the process waits for MLflow's writes
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err[-2000:]
    assert "MLflow tracking" not in err  # no write was dropped

    study = optuna.load_study(study_name="slow", storage=f"sqlite:///{tmp_path / 'study.db'}")
    ended = [t for t in study.trials if t.state.is_finished()]
    # Trials 0-2 ran to their cap; trial 3 too, or it was interrupted (where the signal landed).
    assert len(ended) >= 4 and {t.user_attrs["outcome"] for t in ended} <= {"timeout", "interrupted"}
    assert doctor(study, mlflow_server) == []  # every ended trial has its closed run, an interrupted one included
    client = MlflowClient(mlflow_server)
    [parent] = client.search_runs([client.get_experiment_by_name("slow").experiment_id], "tags.`tuner.role` = 'parent'")
    assert parent.info.status == "KILLED"


# Slow: a CLI process against a server frozen for seconds; beside another test process the
# client's requests can give up before the freeze ends (passes alone; run with -m slow).
@pytest.mark.slow
def test_the_result_is_printed_before_the_last_writes_are_drained(tmp_path: Path, mlflow_server: str) -> None:
    """The summary, plots and report on the study run are written after the result is out; the process still waits for them."""
    path = synthetic_experiment(tmp_path / "first.yaml", NO_CONFIRM, n_trials=3)
    group = server_group(mlflow_server)
    lines: queue.Queue[str] = queue.Queue()
    with tuner_run(tmp_path, str(path), mlflow_server) as proc:
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
        with resumed_at_the_end(group):
            wait_running(tmp_path / "study.db", 0, proc)  # connected: the study run exists
            os.killpg(group, signal.SIGSTOP)  # from here on no write to MLflow can finish
            seen = []
            while not any(line.startswith("best: trial") for line in seen):
                seen.append(lines.get(timeout=45))  # the drain would wait 60 s for a stopped server
            time.sleep(0.5)
            assert proc.poll() is None  # the result is out; the process waits for MLflow's writes
        err = proc.stderr.read()
        proc.wait(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert "MLflow tracking" not in err  # no write was dropped
    study = optuna.load_study(study_name="first", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert doctor(study, mlflow_server) == []
    client = MlflowClient(mlflow_server)
    [parent] = client.search_runs([client.get_experiment_by_name("first").experiment_id], "tags.`tuner.role` = 'parent'")
    assert parent.info.status == "FINISHED"
    assert {"best.yaml", "plots", "report"} <= {a.path for a in client.list_artifacts(parent.info.run_id)}
