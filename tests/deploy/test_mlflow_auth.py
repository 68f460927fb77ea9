"""MLflow's basic authentication as deploy/k8s-workers.yaml runs it: a real `mlflow server --app-name
basic-auth` whose admin user comes from the environment, refusing a client without the user and
serving a `tuner run` whose environment has it (MLFLOW_TRACKING_USERNAME/_PASSWORD, as the Job's pods).

Slow: the server takes 10-15 s to start on the 2-core VM, and the run as long again.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import cli, free_port, synthetic_experiment

USER, PASSWORD = "tuner", "a-password-from-the-secret"


@pytest.mark.slow
def test_a_basic_auth_server_refuses_a_client_without_the_user_and_logs_a_run_with_it(
    tmp_path: Path, _empty_mlflow_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("flask_wtf", reason="MLflow's basic auth needs the auth extra (pip install 'mlflow[auth]')")
    shutil.copy(_empty_mlflow_db, tmp_path / "mlflow.db")
    port = free_port()
    env = {
        **os.environ,
        "MLFLOW_AUTH_ADMIN_USERNAME": USER,
        "MLFLOW_AUTH_ADMIN_PASSWORD": PASSWORD,
        "MLFLOW_FLASK_SERVER_SECRET_KEY": "a-random-key",
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    cmd += ["--default-artifact-root", str(tmp_path / "artifacts"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115  # closed below
    server = subprocess.Popen(
        [*cmd, "--app-name", "basic-auth"], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(uri + "/health", timeout=2):  # /health asks for no user: probes reach it
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()[-3000:]
                time.sleep(0.5)
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException

        monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
        monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
        with pytest.raises(MlflowException, match="401|[Uu]nauthori"):
            MlflowClient(uri).search_experiments()

        experiment = synthetic_experiment(tmp_path / "auth.yaml", n_trials=2)
        creds = {"MLFLOW_TRACKING_USERNAME": USER, "MLFLOW_TRACKING_PASSWORD": PASSWORD}
        run = cli("run", str(experiment), "--tracking-uri", uri, cwd=tmp_path, env=creds, timeout=300)
        assert run.returncode == 0 and "failed" not in run.stderr.lower(), run.stderr[-3000:]
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", USER)
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)
        client = MlflowClient(uri)
        runs = client.search_runs([client.get_experiment_by_name("auth").experiment_id], "tags.`tuner.role` = 'trial'")
        assert len(runs) == 2
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
