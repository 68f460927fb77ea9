"""Sixteen `tuner worker` processes through `tuner storage-proxy` on PostgreSQL, four of them killed mid-trial.

What a Kubernetes Job of 16 pods does (deploy/k8s-workers.yaml), on one machine: the proxy
in front of a real PostgreSQL, a real `mlflow server`, and every worker running the same
command with its own index. Four workers die by SIGKILL while training and are started
again, as the Job restarts a failed pod. The study still finishes exactly the searched
configurations asked for, nothing is left running, each killed trial failed once and was
re-run with its parameters (heartbeats through the proxy), and MLflow has one closed child
run per trial under one study run.

Slow: 16 processes importing torch and MLflow on a 2-core machine take most of a minute to
start (about 0.3 GB each).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import optuna
import pytest
from conftest import DEFAULT_SPACE, free_port, write
from optuna.trial import TrialState

from tuner.study.record import CONFIG

pytest.importorskip("grpc", reason="the grpc extra is not installed")

WORKERS, KILLED, N_TRIALS = 16, 4, 32


def experiment(folder: Path, name: str, storage: str) -> Path:
    """Trials that never reach the target and train to a 0.5-s cap (tens of seconds among 16 busy
    workers on 2 cores): long enough to be killed mid-trial."""
    return write(
        folder / "scale.yaml",
        f"""
        name: {name}
        task: synthetic
        task_options: {{noise: 3.0}}
        search_space:
          file: {DEFAULT_SPACE}
          override: {{precision: fp32, batch_size: {{choices: [32, 64]}}}}
        objective: {{target: 0.99, eval_every_samples: 256, cap_s: 0.5}}
        sampler: {{name: random}}
        pruner: {{name: none}}
        confirm: {{after_search: false}}
        race: null
        budget: {{n_trials: {N_TRIALS}}}
        heartbeat: {{interval_s: 1, grace_s: 5}}
        trainer: {{threads: 1}}
        storage: {storage}
        """,
    )


def start_proxy(path: Path, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "tuner", "storage-proxy", str(path), "--port", str(port)]
    proxy = subprocess.Popen(cmd, cwd=path.parent, env=env, stderr=subprocess.PIPE, text=True)
    line = proxy.stderr.readline()
    assert "listening on" in line, line + proxy.stderr.read()
    return proxy


class Worker:
    """A `tuner worker` process, its stderr read on a thread: when it is up (its first line) and what it said."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.up_at: float | None = None  # set once it prepared the study and starts its trials
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            if self.up_at is None and line.startswith("worker on study"):
                self.up_at = time.monotonic()
            self.lines.append(line)

    def finish(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code


def kill_training(storage: optuna.storages.BaseStorage, name: str, workers: list[Worker], n: int, timeout: float) -> list[Worker]:
    """SIGKILL ``n`` workers while each trains a trial; returns them.

    They start at different times (tens of seconds apart on a busy machine), so the moment is
    when every worker that is up trains (as many trials training, configuration stored, as
    workers up, and a worker trains one at a time), at least ``n`` of them up for 3 s.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert all(w.proc.poll() is None for w in workers), ["".join(w.lines[-20:]) for w in workers if w.proc.poll() is not None]
        up = [w for w in workers if w.up_at is not None]
        victims = [w for w in up if time.monotonic() - w.up_at > 3.0][:n]
        try:
            running = optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        except KeyError:
            running = []
        if len(victims) == n and sum(CONFIG in t.user_attrs for t in running) == len(up) == len(running):
            for w in victims:
                w.proc.send_signal(signal.SIGKILL)
            assert [w.finish(30) for w in victims] == [-signal.SIGKILL] * n
            return victims
        time.sleep(0.2)
    raise AssertionError(f"never {n} workers training with every other one")


def children(uri: str, name: str) -> tuple[list, list]:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id], max_results=1000)
    return [r for r in runs if r.data.tags.get("tuner.role") == "parent"], [r for r in runs if r.data.tags.get("tuner.role") == "trial"]


@pytest.mark.slow
def test_sixteen_workers_through_the_proxy_survive_four_kills(tmp_path: Path, postgres_url: str, mlflow_server: str) -> None:
    name = f"scale-{uuid.uuid4().hex[:8]}"  # the server outlives the test
    path = experiment(tmp_path, name, postgres_url)
    env = {**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    port = free_port()
    proxy = start_proxy(path, port, env)
    url = f"grpc://127.0.0.1:{port}"

    def worker(index: int) -> Worker:
        cmd = ["worker", str(path), "--storage", url, "--tracking-uri", mlflow_server, "--worker-index", str(index)]
        return Worker([sys.executable, "-m", "tuner", *cmd], tmp_path, env)

    direct = optuna.storages.RDBStorage(postgres_url)
    started = time.monotonic()
    workers = [worker(i) for i in range(WORKERS)]
    try:
        killed = kill_training(direct, name, workers, KILLED, timeout=300)
        # As the Job restarts a failed pod: the same command, the same index.
        workers = [w for w in workers if w not in killed] + [worker(workers.index(w)) for w in killed]
        codes = [w.finish(timeout=400) for w in workers]
        assert codes == [0] * WORKERS, ["".join(w.lines[-20:]) for w in workers if w.proc.returncode]
    finally:
        for w in workers:
            w.proc.kill()
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=30)
    print(f"{WORKERS} workers, {N_TRIALS} trials, {KILLED} killed: {time.monotonic() - started:.0f} s", file=sys.stderr)

    trials = optuna.load_study(study_name=name, storage=direct).get_trials(deepcopy=False)
    states = collections.Counter(t.state for t in trials)
    assert states[TrialState.COMPLETE] + states[TrialState.PRUNED] == N_TRIALS, states
    assert states[TrialState.RUNNING] == states[TrialState.WAITING] == 0, states
    dead = [t for t in trials if t.state is TrialState.FAIL and "outcome" not in t.user_attrs]
    assert len(dead) == KILLED, [(t.number, t.user_attrs) for t in trials if t.state is TrialState.FAIL]
    for trial in dead:
        [retry] = [t for t in trials if t.user_attrs.get("retry_of") == trial.number]
        assert retry.state in (TrialState.COMPLETE, TrialState.PRUNED) and retry.params == trial.params

    parents, runs = children(mlflow_server, name)
    assert len(parents) == 1
    numbers = collections.Counter(int(r.data.tags["tuner.trial_number"]) for r in runs)
    assert numbers == collections.Counter(t.number for t in trials), numbers
    assert all(r.info.status != "RUNNING" for r in runs)
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    assert sorted(r.info.status for r in runs if int(r.data.tags["tuner.trial_number"]) in {t.number for t in dead}) == ["FAILED"] * KILLED
