"""The README's table of exit codes: the codes that are cheap to reach, command by command."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BROKEN_FORWARD_TASK, free_port, synthetic_experiment, write

from tuner.cli import main

# In-process (tuner.cli.main, what `python -m tuner` calls): the codes, without a
# process start per command. The end-to-end subprocess runs are in the other CLI tests.


def test_bad_input_is_2_for_every_command_that_reads_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path / "bad.yaml", "objective:\n  target: 90\n")
    for command in ("run", "validate", "best", "report", "confirm", "train", "sync", "doctor", "ui"):
        extra = ["--no-tracking"] if command in ("run", "confirm") else []
        assert main([command, str(bad), *extra]) == 2, command
        assert "objective.target" in capsys.readouterr().err


def test_unknown_study_is_2_and_json_reports_print_nothing_else(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = synthetic_experiment(tmp_path / "none.yaml")
    for command in (["best", "--json"], ["report", "--format", "json"]):
        assert main([command[0], str(exp), *command[1:]]) == 2
        assert capsys.readouterr().out == ""


def test_valid_file_is_0_and_every_trial_failing_is_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = synthetic_experiment(tmp_path / "ok.yaml", n_trials=4)
    assert main(["validate", str(exp)]) == 0
    write(tmp_path / "broken_task_mod.py", BROKEN_FORWARD_TASK)
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = write(
        tmp_path / "broken.yaml",
        exp.read_text().replace("task: synthetic", "task: broken_task_mod:make").replace("name: ok", "name: broken"),
    )
    assert main(["run", str(broken), "--no-tracking", "--quiet"]) == 1
    assert "3 trials in a row failed" in capsys.readouterr().err


def test_unreachable_mlflow_is_1_for_sync_and_doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exp = synthetic_experiment(tmp_path / "one.yaml", n_trials=1)
    assert main(["run", str(exp), "--no-tracking", "--quiet"]) == 0
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    down = f"http://127.0.0.1:{free_port()}"
    for command in ("sync", "doctor"):
        assert main([command, str(exp), "--tracking-uri", down]) == 1, command
