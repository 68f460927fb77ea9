"""The tracking commands end to end: `tuner run` logs, `tuner doctor` finds gaps, `tuner sync` fills them, `tuner ui` serves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import cli, free_port, synthetic_experiment
from mlflow import MlflowClient

from tuner.cli import main

NO_CONFIRM = "confirm:\n  after_search: false\n"


@pytest.mark.e2e
def test_run_logs_doctor_finds_a_gap_and_sync_fills_it(tmp_path: Path, tracking_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    exp = str(synthetic_experiment(tmp_path / "cli.yaml", NO_CONFIRM, n_trials=2))
    run = cli("run", exp, "--tracking-uri", tracking_uri, "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"tracking in MLflow at {tracking_uri}" in run.stderr
    assert main(["doctor", "cli", "--storage", f"sqlite:///{tmp_path / 'study.db'}", "--tracking-uri", tracking_uri]) == 0  # by study name
    assert capsys.readouterr().out.startswith("ok: study 'cli' and MLflow")

    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("cli").experiment_id], "tags.`tuner.trial_number` = '0'")
    client.delete_run(runs[0].info.run_id)
    assert main(["doctor", exp, "--tracking-uri", tracking_uri]) == 1
    out = capsys.readouterr().out
    assert "disagree (1 gap over 2 ended trials)" in out and "  trial 0 (" in out and ": 0 MLflow runs" in out
    assert f"fill MLflow in with: tuner sync {exp}" in out

    assert main(["sync", exp, "--tracking-uri", tracking_uri, "--no-plots"]) == 0
    assert "runs created 1, completed 0, already complete 1" in capsys.readouterr().out
    assert main(["doctor", exp, "--tracking-uri", tracking_uri]) == 0


def test_sync_and_doctor_say_in_one_line_when_mlflow_is_unreachable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = str(synthetic_experiment(tmp_path / "down.yaml", NO_CONFIRM, n_trials=1))
    assert main(["run", exp, "--no-tracking", "--quiet"]) == 0
    capsys.readouterr()
    dead = f"http://127.0.0.1:{free_port()}"
    for command in ("sync", "doctor"):
        assert main([command, exp, "--tracking-uri", dead]) == 1
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"tuner: error: MLflow at {dead} failed")


def test_no_tracking_writes_no_mlflow_store(tmp_path: Path) -> None:
    exp = str(synthetic_experiment(tmp_path / "quiet.yaml", NO_CONFIRM, n_trials=1))
    assert main(["run", exp, "--no-tracking", "--quiet"]) == 0
    assert not (tmp_path / "mlruns").exists()


@pytest.mark.slow
def test_ui_serves_the_local_store(tmp_path: Path, tracking_uri: str) -> None:
    exp = str(synthetic_experiment(tmp_path / "shown.yaml", NO_CONFIRM, n_trials=1))
    assert cli("run", exp, "--tracking-uri", tracking_uri, "--quiet", cwd=tmp_path).returncode == 0
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", "ui", exp, "--tracking-uri", tracking_uri, "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert f"at http://127.0.0.1:{port}" in proc.stdout.readline()
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/ajax-api/2.0/mlflow/experiments/search?max_results=10", timeout=2
                ) as r:
                    assert b'"shown"' in r.read()
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
