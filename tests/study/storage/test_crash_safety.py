"""Crash and signal safety, with real processes and real SQLite files.

SIGKILL mid-trial, then the same command again: the dead worker's trial is failed and
re-run with the same parameters, the study reaches exactly the requested number of
finished trials, and MLflow has one closed child run per trial. The `tuner run` version
is slow (two CLI starts, plots at the end); a worker killing itself mid-trial shows the
same in every test run. SIGTERM mid-trial: the trial is recorded as interrupted, its run
closed, the summary printed, exit 143.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import optuna
import pytest
from conftest import cli, slow_experiment
from mlflow import MlflowClient
from optuna.trial import TrialState

from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.opening import open_study
from tuner.study.run.runner import run_study
from tuner.study.storage.owner import OWNER_KEY
from tuner.track.trial_runs import MlflowTracking

FINAL = {"FINISHED", "KILLED", "FAILED"}


def crash_experiment(folder: Path, n_trials: int, cap_s: float = 1.5) -> Path:
    """The slow study, with a heartbeat short enough to find a killed worker within seconds, and MLflow."""
    return slow_experiment(folder, n_trials, cap_s, "heartbeat: {interval_s: 1, grace_s: 2}\ntracking_uri: sqlite:///mlruns/mlflow.db\n")


def start(folder: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TUNER_CACHE_DIR": str(folder / "cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "tuner", *args], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_running(db: Path, number: int, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    """Until trial ``number`` is RUNNING (read with plain SQL: cheap enough to poll)."""
    wait_for_row(db, "SELECT 1 FROM trials WHERE number = ? AND state = 'RUNNING'", (number,), proc, timeout, f"trial {number} never ran")


def wait_for_row(db: Path, query: str, args: tuple, proc: subprocess.Popen[str], timeout: float, never: str) -> None:
    """Until ``query`` finds a row in the SQLite file ``db``, while ``proc`` runs."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=1) as con:
                    if con.execute(query, args).fetchone():
                        return
            except sqlite3.OperationalError:
                pass  # tables not created yet
        time.sleep(0.1)
    raise AssertionError(never)


def child_runs(folder: Path, study_name: str) -> tuple[list, dict[int, list]]:
    client = MlflowClient(f"sqlite:///{folder}/mlruns/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name(study_name).experiment_id])
    children: dict[int, list] = {}
    for r in runs:
        if r.data.tags.get("tuner.role") == "trial":
            children.setdefault(int(r.data.tags["tuner.trial_number"]), []).append(r)
    return [r for r in runs if r.data.tags.get("tuner.role") == "parent"], children


@pytest.mark.slow
def test_sigkill_mid_trial_then_resume_loses_nothing_and_counts_nothing_twice(tmp_path: Path) -> None:
    crash_experiment(tmp_path, n_trials=2)
    proc = start(tmp_path, "run", "slow.yaml", "--quiet")
    wait_running(tmp_path / "study.db", 1, proc)
    time.sleep(0.5)  # well into trial 1
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    time.sleep(2.5)  # past the heartbeat grace period: the trial is now stale

    again = cli("run", "slow.yaml", "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    trials = optuna.load_study(study_name="slow", storage="sqlite:///study.db").trials
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == 2  # the requested number, no more
    killed = trials[1]
    assert killed.state is TrialState.FAIL and "outcome" not in killed.user_attrs
    [retry] = [t for t in trials if t.user_attrs.get("retry_of") == 1]
    assert retry in finished and retry.params == killed.params
    assert retry.user_attrs["seed"] == killed.user_attrs["seed"]
    assert [t.number for t in trials] == [0, 1, 2]  # nothing else ran: the retry took the second place

    parents, children = child_runs(tmp_path, "slow")
    assert len(parents) == 1 and parents[0].info.status in FINAL
    assert sorted(children) == [0, 1, 2] and all(len(runs) == 1 for runs in children.values())
    assert all(runs[0].info.status in FINAL for runs in children.values())
    assert children[1][0].info.status == "FAILED"


# A worker that kills itself with SIGKILL at the first evaluation of its second trial.
SUICIDAL_WORKER = """
import os, signal, sys
from tuner.study.run.experiment_file import load_experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run.opening import open_study
from tuner.study.run.runner import run_study
from tuner.study.storage.owner import OWNER_KEY
from tuner.track.trial_runs import MlflowTracking

class Die(StudyHooks):
    def on_evaluation(self, tt, ev):
        if self.number == 1:
            os.kill(os.getpid(), signal.SIGKILL)

    def trial_started(self, trial, config):
        self.number = trial.number

experiment = load_experiment("slow.yaml")
run_study(experiment, hooks=[MlflowTracking(sys.argv[1]), Die()])
"""


@pytest.mark.e2e
def test_a_worker_killed_mid_trial_is_rerun_by_the_next_run(tmp_path: Path) -> None:
    """The same guarantee as the CLI test above, with one process less and no plots: fast enough for every run."""
    crash_experiment(tmp_path, n_trials=2, cap_s=0.3)
    uri = f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    worker = subprocess.run(
        [sys.executable, "-c", SUICIDAL_WORKER, uri], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert worker.returncode == -signal.SIGKILL, worker.stderr[-2000:]
    time.sleep(2.5)  # past the heartbeat grace period
    run_study(load_experiment(tmp_path / "slow.yaml"), hooks=[MlflowTracking(uri)])
    trials = optuna.load_study(study_name="slow", storage="sqlite:///study.db").trials
    assert [(t.number, t.state, t.user_attrs.get("retry_of")) for t in trials] == [
        (0, TrialState.COMPLETE, None),
        (1, TrialState.FAIL, None),
        (2, TrialState.COMPLETE, 1),
    ]
    assert trials[2].params == trials[1].params and trials[2].user_attrs["seed"] == trials[1].user_attrs["seed"]
    _, children = child_runs(tmp_path, "slow")
    assert {n: [r.info.status for r in runs] for n, runs in children.items()} == {0: ["KILLED"], 1: ["FAILED"], 2: ["KILLED"]}


def no_running(folder: Path, study_name: str) -> None:
    """Nothing RUNNING in the Optuna study or among its MLflow runs."""
    trials = optuna.load_study(study_name=study_name, storage="sqlite:///study.db").trials
    assert [t.number for t in trials if t.state is TrialState.RUNNING] == []
    parents, children = child_runs(folder, study_name)
    assert [r.info.status for r in parents] == ["FINISHED"]
    assert {n: [r.info.status for r in runs if r.info.status not in FINAL] for n, runs in children.items()} == {n: [] for n in children}


@pytest.mark.slow
def test_sigkill_mid_trial_then_an_immediate_resume_leaves_nothing_running(tmp_path: Path) -> None:
    """Resumed and ended well within heartbeat.grace_s (60 s): the killed trial's process is gone, so it is failed at once."""
    slow_experiment(tmp_path, 3, 2.0, "heartbeat: {interval_s: 10, grace_s: 60}\ntracking_uri: sqlite:///mlruns/mlflow.db\n")
    proc = start(tmp_path, "run", "slow.yaml", "--quiet")
    query = "SELECT 1 FROM tags WHERE key = 'tuner.trial_number' AND value = '1'"
    wait_for_row(tmp_path / "mlruns" / "mlflow.db", query, (), proc, 90, "trial 1's MLflow run was never opened")
    running = "SELECT 1 FROM trials WHERE number >= 1 AND state = 'RUNNING'"
    wait_for_row(tmp_path / "study.db", running, (), proc, 60, "no search trial ran")  # a search trial, not the baseline
    proc.send_signal(signal.SIGKILL)
    killed_at = datetime.now()  # Optuna's trial times are the host's local time
    proc.wait(timeout=30)
    [number] = [
        t.number for t in optuna.load_study(study_name="slow", storage="sqlite:///study.db").trials if t.state is TrialState.RUNNING
    ]

    again = cli("run", "slow.yaml", "--quiet", "--n-trials", "8", cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    trials = optuna.load_study(study_name="slow", storage="sqlite:///study.db").trials
    assert trials[number].state is TrialState.FAIL
    # Within the grace period: the heartbeat alone could not have found it.
    assert (trials[number].datetime_complete - killed_at).total_seconds() < 60
    assert [t.params for t in trials if t.user_attrs.get("retry_of") == number] == [trials[number].params]
    no_running(tmp_path, "slow")
    _, children = child_runs(tmp_path, "slow")
    if number in children:  # its run was opened before the kill (trial 1's was): closed as failed
        [killed] = children[number]
        assert killed.info.status == "FAILED" and killed.data.tags["tuner.train.result"] == "failed"


@pytest.mark.e2e
def test_a_trial_whose_process_is_gone_is_failed_within_the_grace_period(tmp_path: Path) -> None:
    """A worker killed mid-trial, and the next run at once (grace 60 s): the trial is failed, re-run and closed in MLflow."""
    slow_experiment(tmp_path, 2, 0.3, "heartbeat: {interval_s: 10, grace_s: 60}\ntracking_uri: sqlite:///mlruns/mlflow.db\n")
    uri = f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    worker = subprocess.run(
        [sys.executable, "-c", SUICIDAL_WORKER, uri], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert worker.returncode == -signal.SIGKILL, worker.stderr[-2000:]
    run_study(load_experiment(tmp_path / "slow.yaml"), hooks=[MlflowTracking(uri)])
    trials = optuna.load_study(study_name="slow", storage="sqlite:///study.db").trials
    assert [(t.number, t.state, t.user_attrs.get("retry_of")) for t in trials] == [
        (0, TrialState.COMPLETE, None),
        (1, TrialState.FAIL, None),
        (2, TrialState.COMPLETE, 1),
    ]
    no_running(tmp_path, "slow")


def test_a_trial_of_a_live_process_is_not_stale(tmp_path: Path) -> None:
    """The owner check fails only trials whose process is gone: one this process runs, or one of another machine, stays."""
    slow_experiment(tmp_path, 2, 0.3, "heartbeat: {interval_s: 10, grace_s: 60}\n")
    study = open_study(load_experiment(tmp_path / "slow.yaml"))
    mine, elsewhere = study.ask(), study.ask()
    storage = study._storage._backend
    other = {**storage._owner, "namespace": "another machine", "pid": 1, "started": 0}
    storage.set_trial_system_attr(elsewhere._trial_id, OWNER_KEY, other)
    assert storage._owner["pid"] == os.getpid()
    assert storage._get_stale_trial_ids(study._study_id) == []
    gone = {**storage._owner, "started": storage._owner["started"] + 1}  # the pid reused by a later process
    storage.set_trial_system_attr(mine._trial_id, OWNER_KEY, gone)
    assert storage._get_stale_trial_ids(study._study_id) == [mine._trial_id]


@pytest.mark.e2e
def test_sigterm_mid_trial_records_it_closes_its_run_and_exits_143(tmp_path: Path) -> None:
    crash_experiment(tmp_path, n_trials=3, cap_s=60.0)  # trial 0 still runs when MLflow is ready
    proc = start(tmp_path, "run", "slow.yaml", "--quiet")
    wait_running(tmp_path / "study.db", 0, proc)
    # Past MLflow's first use (its tables are made on the writer's thread, seconds on a busy
    # machine): what is asserted below is the closing of open runs, not a race with their opening.
    wait_for_row(
        tmp_path / "mlruns" / "mlflow.db",
        "SELECT 1 FROM tags WHERE key = 'tuner.role' AND value = 'trial'",
        (),
        proc,
        60,
        "trial 0's MLflow run was never opened",
    )
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err[-2000:]
    assert "finished trials in study 'slow'" in out  # the summary
    assert "interrupted by SIGTERM" in err.splitlines()[-1]

    [trial] = optuna.load_study(study_name="slow", storage="sqlite:///study.db").trials
    assert trial.state is TrialState.FAIL
    assert trial.user_attrs["outcome"] == "interrupted" and trial.user_attrs["reason"] == "interrupted by SIGTERM"
    parents, children = child_runs(tmp_path, "slow")
    assert parents[0].info.status == "KILLED", err[-2000:]
    assert [r.info.status for r in children[0]] == ["KILLED"]
    assert children[0][0].data.tags["tuner.train.result"] == "interrupted"
