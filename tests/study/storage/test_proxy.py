"""tuner/study/storage/proxy.py and proxy_server.py: a study storage behind `tuner storage-proxy` (grpc://HOST:PORT).

The proxy runs in the test's process (``start_proxy``), the workers in processes of their own;
the `tuner storage-proxy` command itself is started once, for its start, refusal and stop.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
import racer
from conftest import free_port, synthetic_experiment
from optuna.trial import TrialState

from tuner.errors import ConfigError
from tuner.study.experiment.load import Heartbeat
from tuner.study.storage.budget import BudgetSpent, Limit
from tuner.study.storage.budget_loop import budgeted
from tuner.study.storage.existing import load_existing_study
from tuner.study.storage.open import check_storage, open_storage
from tuner.study.storage.proxy import ProxyStorage
from tuner.study.storage.proxy_server import start_proxy

pytest.importorskip("grpc", reason="the grpc extra is not installed")

BEAT = Heartbeat(interval_s=1, grace_s=2, max_retry=1)


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[str]:
    """A storage proxy in front of a SQLite file; yields its grpc:// URL."""
    port = free_port()
    server = start_proxy(f"sqlite:///{tmp_path / 'served.db'}", BEAT, "e.yaml", "127.0.0.1", port, threads=4)
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        server.stop(0).wait()


@pytest.mark.e2e
def test_racing_workers_through_the_proxy_finish_exactly_the_budget(proxy: str, tmp_path: Path) -> None:
    n_total, queued = 20, [0.5 + i / 100 for i in range(4)]
    study = optuna.create_study(study_name="race", storage=open_storage(proxy, BEAT, "e.yaml"))
    for x in queued:  # warm starts: each must run exactly once
        study.enqueue_trial({"x": x})
    procs = [subprocess.Popen([sys.executable, racer.PATH, proxy, "race", str(n_total), str(seed)], cwd=tmp_path) for seed in range(3)]
    assert [p.wait(timeout=180) for p in procs] == [0, 0, 0]
    trials = optuna.load_study(study_name="race", storage=f"sqlite:///{tmp_path / 'served.db'}").get_trials(deepcopy=False)
    states = collections.Counter(t.state for t in trials)
    assert states[TrialState.COMPLETE] + states[TrialState.PRUNED] == n_total, states
    assert states[TrialState.RUNNING] == states[TrialState.WAITING] == 0, states
    assert len({t.number for t in trials}) == len(trials)
    assert all(sum(t.params.get("x") == x for t in trials) == 1 for x in queued)


def test_the_workers_limit_travels_with_its_call(proxy: str) -> None:
    storage = open_storage(proxy, BEAT, "e.yaml")
    study = optuna.create_study(study_name="limits", storage=storage)
    assert budgeted(study) is storage
    storage.set_limit(study._study_id, Limit(counted=1))
    study.ask()  # the one place
    with pytest.raises(BudgetSpent):
        study.ask()
    # Another worker on the same proxy, without a limit, is not held to this one's.
    other = optuna.load_study(study_name="limits", storage=open_storage(proxy, BEAT, "e.yaml"))
    other.ask()
    storage.set_limit(study._study_id, Limit(fresh=False))  # queued trials only
    study.enqueue_trial({})
    with pytest.raises(BudgetSpent):
        study.ask(), study.ask()  # the queued one, then nothing new
    assert collections.Counter(t.state for t in study.trials) == {TrialState.RUNNING: 3}


@pytest.mark.parametrize("through", ["proxy", "database"])
def test_a_worker_killed_before_its_first_heartbeat_still_has_its_trial_rerun(through: str, proxy: str, tmp_path: Path) -> None:
    """A trial starts with a heartbeat (tuner/study/storage/budget.py): one whose worker died before
    Optuna's heartbeat thread beat once is found stale too, instead of staying RUNNING for ever."""
    url = proxy if through == "proxy" else f"sqlite:///{tmp_path / 'served.db'}"
    heard = []
    dead = open_storage(url, BEAT, "e.yaml")
    assert dead.get_heartbeat_interval() == BEAT.interval_s  # through the proxy: the proxy's experiment's
    study = optuna.create_study(study_name="crash", storage=dead)
    trial = study.ask()  # RUNNING, and no heartbeat thread: its worker dies here
    trial.suggest_float("lr", 1e-3, 1e-1, log=True)
    trial.set_user_attr("seed", 7)
    alive = open_storage(url, BEAT, "e.yaml", on_stale=lambda s, t: heard.append(t.number))
    again = optuna.load_study(study_name="crash", storage=alive)
    optuna.storages.fail_stale_trials(again)
    assert again.trials[0].state is TrialState.RUNNING  # within the grace period
    time.sleep(BEAT.grace_s + 1.5)
    optuna.storages.fail_stale_trials(again)  # as Optuna does before each trial
    failed, retry = again.trials
    assert failed.state is TrialState.FAIL and heard == [0]
    assert retry.state is TrialState.WAITING and retry.params == failed.params
    assert retry.user_attrs == {"seed": 7, "retry_of": 0}


def test_a_plain_optuna_proxy_serves_reads_and_is_refused_for_workers(tmp_path: Path) -> None:
    from optuna.storages._grpc.server import make_server

    url = f"sqlite:///{tmp_path / 's.db'}"
    optuna.create_study(study_name="plain", storage=url).optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    port = free_port()
    server = make_server(optuna.storages.get_storage(url), "127.0.0.1", port)
    server.start()
    try:
        study = load_existing_study(f"grpc://127.0.0.1:{port}", "plain", "e.yaml")  # `tuner best`, `report`, `doctor`
        assert len(study.trials) == 2
        with pytest.raises(ConfigError, match="a plain Optuna proxy: workers need `tuner storage-proxy`") as err:
            check_storage(f"grpc://127.0.0.1:{port}", "e.yaml")  # a worker's preflight
        assert len(str(err.value).splitlines()) == 1
    finally:
        server.stop(0).wait()


@pytest.mark.parametrize(
    ("url", "says"),
    [("grpc://127.0.0.1:{port}", "no storage proxy answers at 127.0.0.1:{port} within 5 s"), ("grpc://127.0.0.1", "grpc://HOST:PORT")],
)
def test_an_unreachable_or_malformed_proxy_is_one_line(url: str, says: str) -> None:
    port = free_port()
    with pytest.raises(ConfigError) as err:
        check_storage(url.format(port=port), "e.yaml")
    assert says.format(port=port) in str(err.value) and len(str(err.value).splitlines()) == 1


@pytest.mark.e2e
def test_the_command_serves_refuses_a_taken_port_and_stops_on_sigterm(tmp_path: Path) -> None:
    experiment = synthetic_experiment(tmp_path / "e.yaml", "heartbeat: {interval_s: 2, grace_s: 7}\n")
    port = free_port()
    env = {**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "tuner", "storage-proxy", str(experiment), "--port", str(port)]
    proxy = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proxy.stderr.readline()
        assert f"listening on 127.0.0.1:{port} (10 threads, heartbeat every 2 s, grace 7 s)" in line, line
        assert ProxyStorage(f"grpc://127.0.0.1:{port}").get_heartbeat_interval() == 2
        taken = subprocess.run(cmd, check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert taken.returncode == 2
        assert taken.stderr.splitlines() == [
            f"tuner: error: tuner storage-proxy: --host/--port: expected a free port on an address of this machine, got '127.0.0.1:{port}'"
        ]
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(timeout=30) == 143
        assert "interrupted by SIGTERM" in proxy.stderr.read()
    finally:
        proxy.kill()
        proxy.wait()
    assert (tmp_path / "study.db").is_file()  # the experiment's storage, its tables made by the proxy


def test_a_proxy_started_again_takes_the_running_trials_of_the_one_before(tmp_path: Path) -> None:
    """A worker's trial created through one proxy gets its parameters through the next: Optuna's cache
    in the new proxy has not seen it (a KeyError there, NOT_FOUND to the worker, before)."""
    database = f"sqlite:///{tmp_path / 'served.db'}"
    first_port, second_port = free_port(), free_port()
    first = start_proxy(database, BEAT, "e.yaml", "127.0.0.1", first_port, threads=2)
    try:
        study = optuna.create_study(study_name="again", storage=open_storage(f"grpc://127.0.0.1:{first_port}", BEAT, "e.yaml"))
        trial = study.ask()
        trial.suggest_float("x", 0, 1)
    finally:
        first.stop(0).wait()
    second = start_proxy(database, BEAT, "e.yaml", "127.0.0.1", second_port, threads=2)
    try:
        storage = open_storage(f"grpc://127.0.0.1:{second_port}", BEAT, "e.yaml")
        storage.set_trial_param(trial._trial_id, "y", 0.25, optuna.distributions.FloatDistribution(0, 1))
        assert storage.get_trial(trial._trial_id).params == {"x": trial.params["x"], "y": 0.25}
    finally:
        second.stop(0).wait()
