"""The command line: one-line errors with exit code 2, and a study end to end in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import torch
import yaml
from conftest import DEFAULT_SPACE, cli, no_stores_in, slow_experiment, synthetic_experiment, write

from tuner.cli import main
from tuner.study.record import TrialRecord
from tuner.train.trial_config import TrialConfig

# Bad experiments, each with the key its error must name. `run` and `validate` both refuse them.
BAD = {
    "unknown key": ("task: synthetic\nbudgett: {n_trials: 1}\n", "budgett"),
    "wrong type": ("task: synthetic\nobjective: {cap_s: soon}\n", "objective.cap_s"),
    "low >= high": ("task: synthetic\nsearch_space: {lr: {low: 0.1, high: 0.001}}\n", "search_space.lr"),
    "log with low <= 0": ("task: synthetic\nsearch_space: {lr: {low: 0, high: 0.1, log: true}}\n", "search_space.lr.low"),
    "empty choices": ("task: synthetic\nsearch_space: {width: {choices: []}}\n", "search_space.width.choices"),
    "unknown optimizer": ("task: synthetic\nsearch_space: {optimizer: sgd}\n", "search_space.optimizer"),
    "unknown precision": ("task: synthetic\nsearch_space: {precision: {choices: [fp32, int8]}}\n", "search_space.precision.choices[1]"),
    "unknown task": ("task: imagenet\n", "task"),
    "bad task options": ("task: synthetic\ntask_options: {classes: 3, colour: red}\n", "task_options"),
    "missing search space": ("task: synthetic\nsearch_space: {file: missing.yaml}\n", "search_space.file"),
    "yaml syntax": ("task: synthetic\nobjective: [target: 0.9\n", "(yaml)"),
    "bad storage URL": ("task: synthetic\nstorage: http://localhost:5000\n", "storage"),
}
# Found when `run` opens the database or builds the task's data, which `validate` does not do.
BAD_AT_RUN = {
    "storage folder missing": ("task: synthetic\nstorage: sqlite:///no/such/folder/t.db\n", "storage"),
    "task that fails to build": ("task: synthetic\ntask_options: {n_test: 0}\n", "task"),
}
CASES = [pytest.param(c, t, k, id=f"{c}-{name}") for c in ("run", "validate") for name, (t, k) in BAD.items()]
CASES += [pytest.param("run", t, k, id=f"run-{name}") for name, (t, k) in BAD_AT_RUN.items()]


def one_error_line(stderr: str, path: Path, key: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith(f"tuner: error: {path}: {key}: expected "), lines[0]
    assert ", got " in lines[0]
    return lines[0]


@pytest.mark.parametrize("command,text,key", CASES)
def test_bad_experiment_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, text: str, key: str
) -> None:
    path = write(tmp_path / "bad.yaml", text)
    rc = main([command, str(path)])
    captured = capsys.readouterr()
    assert rc == 2
    one_error_line(captured.err, path, key)
    assert "# ok" not in captured.out
    assert no_stores_in(tmp_path)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", [["run"], ["worker"], ["confirm"], ["nightly", "--budget", "60"]])
def test_the_stores_are_checked_before_the_task_is_built(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    # Bad both ways: a task that fails to build and a tracking server nobody answers at. The
    # stores are checked first, in a fraction of a second; building and measuring take seconds.
    from conftest import free_port

    path = synthetic_experiment(tmp_path / "both.yaml", "task_options: {n_test: 0}\n")
    rc = main([command[0], str(path), *command[1:], "--tracking-uri", f"http://127.0.0.1:{free_port()}"])
    line = one_error_line(capsys.readouterr().err, path, "tracking_uri")
    assert rc == 2 and "no answer" in line
    assert no_stores_in(tmp_path) and not (tmp_path / "reports").exists()


def test_missing_experiment_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", "nowhere.yaml"])
    line = one_error_line(capsys.readouterr().err, Path("nowhere.yaml"), "(file)")
    assert rc == 2
    assert line == "tuner: error: nowhere.yaml: (file): expected an existing file, got 'nowhere.yaml'"
    assert no_stores_in(tmp_path)


def test_resume_under_another_target_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = synthetic_experiment(tmp_path / "exp.yaml", n_trials=1)
    assert main(["run", str(path), "--quiet", "--no-tracking"]) == 0
    write(path, path.read_text().replace("target: 0.9", "target: 0.95"))
    capsys.readouterr()
    assert main(["run", str(path), "--quiet", "--no-tracking", "--n-trials", "2"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # The run's banner may come first; the error is the last line, and one line.
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"tuner: error: {path}: objective.target: expected 0.9 as in the existing study 'exp'")
    assert last.endswith(", got 0.95")
    assert len(optuna.load_study(study_name="exp", storage=f"sqlite:///{tmp_path / 'study.db'}").get_trials()) == 1


def test_train_refuses_a_space_that_is_not_fixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = synthetic_experiment(tmp_path / "exp.yaml")
    assert main(["train", str(path)]) == 2
    line = one_error_line(capsys.readouterr().err, path, "search_space.optimizer")
    assert line.endswith("expected a fixed value (tuner train runs one configuration), got 'a range or choices'")
    assert no_stores_in(tmp_path)


def test_validate_prints_the_resolved_experiment_and_trains_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path / "exp.yaml",
        f"""
        task: synthetic
        search_space:
          file: {DEFAULT_SPACE}
          override: {{precision: fp32, batch_size: {{choices: [64, 128]}}}}
          remove: [beta1]
        objective: {{target: 0.85}}
        """,
    )
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    resolved_text, _, space_text = out.partition("# search space as sampled on this machine")
    resolved = yaml.safe_load(resolved_text)
    assert resolved["task"] == "synthetic"
    assert resolved["objective"]["target"] == 0.85
    assert resolved["objective"]["eval_every_samples"] == 2000  # defaults are shown, resolved
    assert resolved["search_space"]["precision"] == "fp32"
    assert "beta1" not in resolved["search_space"]
    lines = {line.split()[0]: line for line in space_text.splitlines() if line and not line.startswith("#")}
    assert "one of 64, 128" in lines["batch_size"]
    assert "fixed fp32" in lines["precision"]
    assert "0.001 .. 0.1 (log)" in lines["lr"]
    assert "when optimizer in ['adam', 'adamw']" in lines["amsgrad"]
    assert "# ok: nothing was trained or stored" in out
    assert no_stores_in(tmp_path)


# -- in fresh processes, as a user runs them --------------------------------------------------


def test_subprocess_error_is_one_line_exit_2_and_creates_no_store(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml", "task: synthetic\nsearch_space:\n  lr: {low: 0.1, high: 0.01}\n")
    proc = cli("run", str(path), cwd=tmp_path)
    assert proc.returncode == 2
    one_error_line(proc.stderr, path, "search_space.lr")
    assert proc.stdout == ""
    assert no_stores_in(tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_device_this_machine_lacks_is_refused_when_the_study_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "gpu.yaml", "task: synthetic\ntrainer: {device: cuda}\n")
    assert main(["run", str(path)]) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err, path, "trainer.device")
    assert line.endswith("expected a device this machine has, got 'cuda (CUDA is not available on this machine)'")
    assert captured.out == ""
    assert no_stores_in(tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_an_experiment_for_a_gpu_validates_on_a_machine_without_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A GPU job is checked on a laptop before it is shipped; the device is checked where the study runs.
    path = write(tmp_path / "gpu.yaml", "task: synthetic\ntrainer: {device: cuda}\nobjective: {cap_s: auto}\n")
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "device: cuda" in out and "cap_s: auto" in out
    assert "# trainer.device cuda is not on this machine (CUDA is not available on this machine)" in out
    assert out.rstrip().endswith("# ok: nothing was trained or stored")
    assert no_stores_in(tmp_path)


def test_nightly_asks_for_a_cap_in_seconds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Each night is a new study: its canary and deadline are sized by the cap before any baseline runs.
    path = write(tmp_path / "auto.yaml", "task: synthetic\nobjective: {cap_s: auto}\n")
    assert main(["nightly", str(path), "--budget", "60"]) == 2
    line = one_error_line(capsys.readouterr().err, path, "objective.cap_s")
    assert line.endswith("expected a number of seconds for tuner nightly (auto is for tuner run), got 'auto'")
    assert no_stores_in(tmp_path)


def test_the_cpu_clock_is_refused_with_two_threads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Two threads share the work and spin while waiting: the calling thread's CPU time is not the time to target.
    path = write(tmp_path / "cpu2.yaml", "task: synthetic\nobjective: {clock: cpu}\ntrainer: {device: cpu, threads: 2}\n")
    assert main(["validate", str(path)]) == 2
    line = one_error_line(capsys.readouterr().err, path, "objective.clock")
    assert line.endswith(
        "expected cpu only on a CPU device with trainer.threads: 1 (else robust, train or wall), got 'cpu on cpu with 2 threads'"
    )
    assert no_stores_in(tmp_path)


def test_python_m_tuner_validate_with_a_user_task_on_pythonpath(tmp_path: Path) -> None:
    write(
        tmp_path / "src" / "my_tasks.py",
        """
        from tuner.tasks.synthetic import synthetic_task


        def small(classes: int = 3):
            return synthetic_task(n_train=300, n_test=100, classes=classes)
        """,
    )
    path = synthetic_experiment(tmp_path / "exp.yaml", "task_options: {classes: 5}\n")
    write(path, path.read_text().replace("task: synthetic", "task: my_tasks:small"))
    proc = cli("validate", str(path), cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "src")})
    assert proc.returncode == 0, proc.stderr
    resolved = yaml.safe_load(proc.stdout.partition("# search space")[0])
    assert (resolved["name"], resolved["task"], resolved["task_options"]) == ("exp", "my_tasks:small", {"classes": 5})
    assert "# ok: nothing was trained or stored" in proc.stdout
    assert no_stores_in(tmp_path)


@pytest.mark.e2e
def test_run_best_train_end_to_end(tmp_path: Path) -> None:
    exp = synthetic_experiment(tmp_path / "e2e.yaml", n_trials=2)
    storage = f"sqlite:///{tmp_path / 'e2e.db'}"
    tuner = str(Path(sys.executable).parent / "tuner")  # the console script

    # MLflow's own end-to-end test lives with the tracking tests; importing it here would triple the time.
    run = cli(
        "run", str(exp), "--storage", storage, "--n-trials", "3", "--seed", "1", "--study-name", "e2e-run", "--no-tracking", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "3 finished trials in study 'e2e-run'" in run.stdout  # the flag beat the file's 2
    assert "best: trial " in run.stdout
    study = optuna.load_study(study_name="e2e-run", storage=storage)
    assert len(study.get_trials()) == 3
    assert not (tmp_path / "study.db").exists()  # --storage beat the file's storage
    assert not (tmp_path / "mlruns").exists()

    best = cli("best", str(exp), "--storage", storage, "--study-name", "e2e-run", "-o", "best.yaml", cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    assert (tmp_path / "best.yaml").is_file()
    exported = yaml.safe_load((tmp_path / "best.yaml").read_text())
    winner = min((t for t in study.get_trials() if t.user_attrs["outcome"] == "reached"), key=lambda t: t.value)
    # Every dimension fixed to the winner's value (those its choices leave unread at their defaults, left out);
    # the task's own hyperparameters (none here) flat beside them.
    assert TrialConfig.from_params(exported["search_space"]) == TrialRecord.of(winner).config
    assert not {"muon_momentum", "devices", "num_workers"} & set(exported["search_space"])
    assert f"best trial {winner.number}" in best.stdout

    train = subprocess.run([tuner, "train", "best.yaml", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert train.returncode == 0, train.stderr
    result = json.loads(train.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "reached"
    assert result["config"] == winner.user_attrs["config"]
    assert result["seed"] == winner.user_attrs["seed"]
    assert result["samples_to_target"] == winner.user_attrs["samples_to_target"]  # the trial, repeated
    assert result["value"] > 0
    assert len(optuna.load_study(study_name="e2e-run", storage=storage).get_trials()) == 3  # train stores nothing


@pytest.mark.slow
def test_a_run_ends_by_its_timeout_counted_from_the_command_start(tmp_path: Path) -> None:
    """`--timeout S` bounds the whole command: its start (imports, preparing, opening MLflow), the
    trials, the summary and MLflow's last writes; it used to overshoot by all but the trials."""
    slow_experiment(tmp_path, 100, 1.0, "tracking_uri: sqlite:///mlruns/mlflow.db\n")
    started = time.monotonic()
    done = cli("run", "slow.yaml", "--timeout", "30", cwd=tmp_path, timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    # A trial past its setup ends at its next step; the interpreter's teardown (2-6 s) comes after the budget.
    assert took <= 30 + 8.0, f"{took:.1f} s for --timeout 30"
    assert "finished trials in study 'slow'" in done.stdout  # the summary, within the deadline too
    trials = optuna.load_study(study_name="slow", storage="sqlite:///study.db").trials
    assert trials and not [t.number for t in trials if t.state is optuna.trial.TrialState.RUNNING]
