"""One way to run a study (tuner/orchestrate/): `tuner run` and ``tuner.run`` give the same study, the
options travel to worker processes as JSON, and the budget rule counts every worker of the study."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import DEFAULT_SPACE, cli, synthetic_experiment

import tuner
from tuner.cli import build_parser
from tuner.cli.worker import options_of
from tuner.errors import ConfigError
from tuner.orchestrate import Overrides, RunOptions, WorkerRole, orchestrate
from tuner.orchestrate.processes import CHILD, child_options, spawn_for
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.workers import WorkersFailed, WorkerShare
from tuner.study.storage.storage_errors import EXIT_STORAGE_LOST

TINY = """
name: same
task: synthetic
search_space:
  file: {space}
  override: {{precision: fp32, batch_size: {{choices: [64, 128]}}, lr: {{low: 3.0e-3, high: 3.0e-2}}}}
objective: {{target: 0.9, eval_every_samples: 256, cap_s: 2.0}}
sampler: {{name: random}}
budget: {{n_trials: 3}}
race: null
confirm: {{after_search: false}}
storage: sqlite:///study.db
trainer: {{threads: 1}}
"""


def stored(folder: Path) -> tuple[dict, list[tuple]]:
    """The study's own attributes, and each trial's number, parameters, seed and stored configuration."""
    study = optuna.load_study(study_name="same", storage=f"sqlite:///{folder / 'study.db'}")
    attrs = {k: v for k, v in study.user_attrs.items() if k != "environment"}  # the machine's fingerprint, taken at each run
    trials = [(t.number, t.params, t.user_attrs.get("seed"), t.user_attrs.get("config")) for t in study.get_trials(deepcopy=False)]
    return attrs, trials


def test_tuner_run_and_the_api_give_the_same_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_cli, by_api = tmp_path / "cli", tmp_path / "api"
    for folder in (by_cli, by_api):
        folder.mkdir()
        (folder / "same.yaml").write_text(TINY.format(space=DEFAULT_SPACE))
    result = cli("run", "same.yaml", "--no-tracking", "--seed", "7", cwd=by_cli, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    monkeypatch.chdir(by_api)
    study = tuner.run(load_experiment("same.yaml"), tracking=False, seed=7)
    assert len(study.get_trials(deepcopy=False)) == 3
    cli_attrs, cli_trials = stored(by_cli)
    api_attrs, api_trials = stored(by_api)
    assert cli_attrs == api_attrs
    assert cli_trials == api_trials


def test_the_options_travel_as_json_with_each_workers_share() -> None:
    options = RunOptions(
        "e.yaml", overrides=Overrides(name="s", storage="sqlite:///x.db", seed=3, n_trials=9), workers=4, tracking=False, share_devices=True
    )
    assert RunOptions.from_json(options.to_json()) == options
    child = child_options(options, WorkerShare(index=2, threads=3, timeout_s=40.0, confirm=True))
    assert child.command == "worker" and child.quiet and child.workers == 1
    assert child.study_workers == 4  # the budget rule counts the study's workers, not this one alone
    assert child.worker == WorkerRole(index=2, threads=3, coordinated=True, confirm_queued=True)
    assert child.overrides == Overrides(name="s", storage="sqlite:///x.db", seed=3, n_trials=9, timeout_s=40.0)
    assert child.share_devices and not child.tracking
    command, text = spawn_for(options)(WorkerShare(0, 1, None, confirm=False))
    assert command[1:] == ["-m", CHILD]  # a module of its own, given its options on stdin: no command line to parse
    assert RunOptions.from_json(text).overrides.timeout_s is None


def test_workers_that_all_lost_their_storage_exit_with_its_code() -> None:
    assert WorkersFailed([EXIT_STORAGE_LOST, 0, EXIT_STORAGE_LOST], 3).exit_code == EXIT_STORAGE_LOST
    assert WorkersFailed([EXIT_STORAGE_LOST, 1], 2).exit_code == 1
    assert str(WorkersFailed([0, 75], 2)).startswith("worker 1 exited 75")


def test_a_worker_judges_its_budget_by_the_studys_worker_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The baseline runs first (confirmation on) and sets the trial-length; a worker joining the study
    # then resolves pruner.name: auto for the budget of all the study's workers.
    confirm = "confirm: {after_search: true, top_k: 1, seeds: 1}\n"
    path = synthetic_experiment(tmp_path / "rule.yaml", confirm, n_trials=1)
    assert orchestrate(RunOptions.for_api(str(path), tracking=False, quiet=True)).code == 0
    args = build_parser().parse_args(["worker", str(path), "--workers", "16", "--n-trials", "2", "--timeout", "30", "--no-tracking"])
    capsys.readouterr()
    ran = orchestrate(options_of(args))
    assert ran.code == 0
    assert "pruner: auto = " in (err := capsys.readouterr().err) and ", 16 workers; docs/stopping.md)" in err, err
    bad = build_parser().parse_args(["worker", str(path), "--workers", "0"])
    with pytest.raises(ConfigError, match="--workers"):
        orchestrate(options_of(bad))
