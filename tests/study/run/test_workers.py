"""Several workers on one study: `tuner run --workers N` (tuner/study/run/workers.py) and `tuner worker`."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import optuna
import pytest
import torch
from conftest import cli, synthetic_experiment
from optuna.trial import TrialState

from tuner.errors import ConfigError
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import Prepared, prepare
from tuner.study.run.workers import plan_workers

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def check_study(storage: str, name: str, n: int) -> list[optuna.trial.FrozenTrial]:
    """Exactly ``n`` finished trials, nothing left running or queued, no number twice."""
    trials = optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)
    states = collections.Counter(t.state for t in trials)
    assert states[TrialState.COMPLETE] + states[TrialState.PRUNED] == n, states
    assert states[TrialState.RUNNING] == states[TrialState.WAITING] == 0, states
    assert len({t.number for t in trials}) == len(trials)
    return [t for t in trials if t.state in FINISHED]


def check_runs(uri: str, name: str, finished: list[optuna.trial.FrozenTrial]) -> None:
    """One study run, and one child run under it per finished trial."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(name)
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("tuner.role") == "parent"]
    children = [r for r in runs if r.data.tags.get("tuner.role") == "trial"]
    assert len(parents) == 1, [p.info.run_id for p in parents]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    numbers = collections.Counter(int(r.data.tags["tuner.trial_number"]) for r in children)
    assert all(count == 1 for count in numbers.values()), numbers
    assert {t.number for t in finished} <= set(numbers)
    assert all(r.info.status != "RUNNING" for r in children)


@pytest.mark.e2e
def test_three_workers_on_sqlite_finish_exactly_the_budget_with_one_run_per_trial(tmp_path: Path, tracking_uri: str) -> None:
    experiment = synthetic_experiment(tmp_path / "three.yaml", n_trials=6)
    result = cli("run", str(experiment), "--workers", "3", "--tracking-uri", tracking_uri, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    finished = check_study(f"sqlite:///{tmp_path / 'study.db'}", "three", 6)
    check_runs(tracking_uri, "three", finished)
    # One display for all the workers: a line per finished trial, from the coordinating process.
    assert sum(line.startswith("trial ") for line in result.stderr.splitlines()) == 6
    assert "3 workers, 1 torch thread(s) each" in result.stderr


@pytest.mark.e2e
def test_two_workers_on_postgres_and_a_tracking_server(tmp_path: Path, postgres_url: str, mlflow_server: str) -> None:
    name = f"pg-{uuid.uuid4().hex[:8]}"  # the server outlives the test
    experiment = synthetic_experiment(tmp_path / "pg.yaml", n_trials=6, name=name)
    cmd = [sys.executable, "-m", "tuner", "worker", str(experiment), "--storage", postgres_url, "--tracking-uri", mlflow_server, "--quiet"]
    env = {**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    # Started together on a study that does not exist yet: as two machines running the same command.
    workers = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [w.communicate(timeout=300)[1] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], errors
    check_runs(mlflow_server, name, check_study(postgres_url, name, 6))


@pytest.mark.e2e
def test_sigterm_stops_every_worker_and_records_their_trials(tmp_path: Path) -> None:
    # A task too noisy to reach 0.9: trials train up to their cap, so the signal finds them training.
    experiment = synthetic_experiment(tmp_path / "stop.yaml", "task_options: {noise: 3.0}\n", n_trials=200)
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    env = {**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.Popen(
        [sys.executable, "-m", "tuner", "run", str(experiment), "--workers", "2", "--no-tracking"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until both workers train
        time.sleep(1.0)
        try:
            trials = optuna.load_study(study_name="stop", storage=storage).get_trials(deepcopy=False)
        except KeyError:
            continue
        if sum(t.state is TrialState.RUNNING for t in trials) >= 2:
            break
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 143, err[-2000:]
    trials = optuna.load_study(study_name="stop", storage=storage).get_trials(deepcopy=False)
    assert not [t.number for t in trials if t.state is TrialState.RUNNING]
    stopped = [t for t in trials if t.state is TrialState.FAIL]
    assert stopped and all(t.user_attrs.get("outcome") == "interrupted" for t in stopped)
    assert "interrupted by SIGTERM" in err


def test_more_workers_than_gpus_needs_share_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tuner.study.run.workers

    experiment = load_experiment(synthetic_experiment(tmp_path / "gpu.yaml"))
    prepared = prepare(experiment)
    on_gpu = Prepared(torch.device("cuda", 0), prepared.task, prepared.space, [])
    monkeypatch.setattr(tuner.study.run.workers, "gpu_count", lambda: 1)
    with pytest.raises(ConfigError, match="share-devices"):
        plan_workers(2, experiment, on_gpu, share_devices=False)
    assert [p.index for p in plan_workers(2, experiment, on_gpu, share_devices=True)] == [0, 1]
    assert [p.threads for p in plan_workers(2, experiment, prepared, share_devices=False)] == [1, 1]  # trainer.threads: 1
