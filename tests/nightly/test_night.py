"""`tuner nightly`: one night per study, a lock, warm start, the canary and the morning report."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from conftest import DEFAULT_SPACE, write
from mlflow import MlflowClient
from optuna.trial import TrialState

from tuner import signals
from tuner.cli import main
from tuner.cli.nightly import parse_budget
from tuner.errors import ConfigError
from tuner.nightly.history import nights
from tuner.nightly.lock import exclusive
from tuner.nightly.night import EXIT_LOCKED, EXIT_REGRESSED, NightOptions, lock_path, run_night
from tuner.nightly.warm_start import within
from tuner.study.hooks import StudyHooks
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.run.runner import run_study
from tuner.study.space.space import parse_space

# A user task whose training steps can be slowed from outside, for a canary made slower on purpose.
SLOWABLE = """
import os
import time

from torch import nn

from tuner.tasks.synthetic import synthetic_task


class Slowed(nn.Module):
    def __init__(self, inner, delay):
        super().__init__()
        self.inner, self.delay = inner, delay

    def forward(self, x):
        if self.training and self.delay:
            time.sleep(self.delay)  # every training step, none of the (untimed) evaluations
        return self.inner(x)


def make():
    task = synthetic_task()
    base, delay = task.build_model, float(os.environ.get("SLOW_STEP_S", "0"))
    task.build_model = lambda width: Slowed(base(width), delay)
    return task
"""


def nightly_experiment(folder: Path, task: str = "synthetic", extra: str = "") -> Path:
    return write(
        folder / "nightly.yaml",
        f"""
        name: exp
        task: {task}
        search_space:
          file: {DEFAULT_SPACE}
          override: {{precision: fp32, optimizer: adam, schedule: constant, width: 1.0, batch_size: 64, lr: {{choices: [0.01, 0.03]}}}}
          remove: [beta1, beta2, amsgrad]
        objective: {{target: 0.9, eval_every_samples: 256, cap_s: 2.0, clock: robust}}  # a slowed canary sleeps: no CPU time
        sampler: {{name: random}}
        budget: {{n_trials: 2}}
        trainer: {{threads: 1}}
        storage: sqlite:///study.db
        """
        + (extra or "confirm: {after_search: false}\n"),
    )


# Pruning named, not auto: the budget rule would drop the confirmation runs of a budget that is
# a few trial-lengths, and how many it is moves with the machine's load (docs/stopping.md).
CONFIRM = "confirm: {top_k: 1, seeds: 3, after_search: true, budget_share: 0.25}\n        pruner: {name: equal_time}\n"


def night(date: str, *flags: str) -> int:
    return main(["nightly", "nightly.yaml", "--budget", "2m", "--night", date, "--no-tracking", "--quiet", "--canary-seeds", "3", *flags])


def report(folder: Path, date: str) -> tuple[dict, str]:
    base = folder / "reports" / "exp" / date
    return json.loads((base / "report.json").read_text()), (base / "report.md").read_text()


@pytest.mark.parametrize("text,seconds", [("2h", 7200), ("90m", 5400), ("1h30m", 5400), ("45s", 45), ("600", 600), ("1.5h", 5400)])
def test_budgets(text: str, seconds: float) -> None:
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "2 days", "h", "-5m", "1m2h"])
def test_bad_budgets_are_one_line_errors(text: str) -> None:
    with pytest.raises(ConfigError, match="--budget"):
        parse_budget(text)


@pytest.mark.e2e
def test_a_canary_made_slower_on_purpose_is_a_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "usercode" / "slowable.py", SLOWABLE)
    monkeypatch.syspath_prepend(str(tmp_path / "usercode"))
    # A steady 2 ms per step, so a busy test machine's jitter stays small against it.
    monkeypatch.setenv("SLOW_STEP_S", "0.002")
    # A baseline slower than the search (a small learning rate), so the night confirms a winner of the search.
    nightly_experiment(tmp_path, task="slowable:make", extra=CONFIRM + "        baseline: {batch_size: 64, lr: 0.001}\n")
    assert night("2025-03-01") == 0  # no earlier night: no canary yet
    first, _ = report(tmp_path, "2025-03-01")
    assert first["status"] == "ok" and first["canary"]["skipped"] and first["best"]["confirmed"]["seeds"] == 3
    assert night("2025-03-02") == 0  # the canary repeats the winner's confirmation runs, seed for seed
    second, _ = report(tmp_path, "2025-03-02")
    assert second["canary"]["from_night"] == "2025-03-01" and len(second["canary"]["runs"]) == 3
    assert second["canary"]["config"] == first["best"]["config"]
    assert second["canary"]["verdict"]["status"] in ("ok", "improved") and second["canary"]["verdict"]["n_history"] == 3
    assert second["trials"]["warm_started"] >= 1  # the winner of the night before ran first

    monkeypatch.setenv("SLOW_STEP_S", "0.02")  # the machine got slower; code and versions did not change
    capsys.readouterr()
    assert night("2025-03-03") == EXIT_REGRESSED
    assert "REGRESSED" in capsys.readouterr().out
    third, md = report(tmp_path, "2025-03-03")
    assert third["status"] == "regressed" and third["canary"]["verdict"]["status"] == "regressed"
    assert third["canary"]["environment_changes"] is None  # same fingerprint: the machine, not a library or the code
    assert "canary" in third["summary"] and "regressed on an unchanged environment" in third["summary"]
    assert "REGRESSED" in md and "## Canary" in md and "Against its history: regressed" in md
    status = {n.date.isoformat(): n.status for n in nights("sqlite:///study.db", "exp")}
    assert status == {"2025-03-01": "ok", "2025-03-02": "ok", "2025-03-03": "regressed"}


@pytest.mark.e2e
def test_a_rerun_of_the_same_night_resumes_it(tmp_path: Path) -> None:
    nightly_experiment(tmp_path)
    assert night("2025-03-01") == 0
    assert night("2025-03-02") == 0
    study = optuna.load_study(study_name="exp-night-20250302", storage="sqlite:///study.db")
    spent, canary, n = study.user_attrs["spent_s"], study.user_attrs["canary"], len(study.trials)
    assert night("2025-03-02", "--storage", "sqlite:///study.db") == 0  # done already: nothing more to run
    study = optuna.load_study(study_name="exp-night-20250302", storage="sqlite:///study.db")
    assert len(study.trials) == n and study.user_attrs["canary"] == canary  # no second canary, no second warm start
    assert study.user_attrs["spent_s"] >= spent  # the budget is charged across runs of a night
    assert [s for s in optuna.get_all_study_names("sqlite:///study.db")] == ["exp-night-20250301", "exp-night-20250302"]


def test_a_held_lock_means_this_run_does_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nightly_experiment(tmp_path)
    with exclusive(lock_path(Path("reports"), "exp")):
        assert night("2025-03-01") == EXIT_LOCKED
    assert "another `tuner nightly` of 'exp' is running (pid" in capsys.readouterr().err
    assert not (tmp_path / "study.db").exists()


def test_a_budget_too_small_for_one_trial_starts_none(tmp_path: Path) -> None:
    nightly_experiment(tmp_path)
    assert main(["nightly", "nightly.yaml", "--budget", "1s", "--night", "2025-03-01", "--no-tracking", "--quiet"]) == 0
    [study] = optuna.get_all_study_summaries("sqlite:///study.db", include_best_trial=False)
    assert study.n_trials == 0
    result, _ = report(tmp_path, "2025-03-01")
    assert result["ending"] == "the budget left no time for a trial" and result["best"] is None


@pytest.mark.e2e
def test_two_nightly_runs_started_together_one_tunes_one_exits(tmp_path: Path) -> None:
    nightly_experiment(tmp_path)
    text = (tmp_path / "nightly.yaml").read_text().replace("n_trials: 2", "n_trials: 6")
    write(tmp_path / "nightly.yaml", text)
    env = {**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    args = [sys.executable, "-m", "tuner", "nightly", "nightly.yaml", "--budget", "1m", "--night", "2025-03-01", "--no-tracking", "--quiet"]
    procs = [subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, EXIT_LOCKED], [err[-1500:] for _, _, err in results]
    _, out, err = next(r for r in results if r[0] == EXIT_LOCKED)
    assert out == "" and err.strip().splitlines()[-1].startswith("tuner: another `tuner nightly` of 'exp' is running (pid ")
    study = optuna.load_study(study_name="exp-night-20250301", storage=f"sqlite:///{tmp_path}/study.db")
    finished = [t for t in study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED)) if "race_of" not in t.user_attrs]  # + races
    assert len(finished) == 6  # one run tuned: exactly the requested trials, not twice as many
    assert datetime.date.fromisoformat(report(tmp_path, "2025-03-01")[0]["night"]) == datetime.date(2025, 3, 1)


@pytest.mark.slow
def test_passwords_never_reach_logs_reports_or_mlflow(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # SQLite ignores a password in the query string, so a real run can carry one end to end.
    nightly_experiment(tmp_path)
    storage, tracking = "sqlite:///study.db?password=hunter2", "sqlite:///mlruns/mlflow.db?password=hunter2"
    code = main(
        ["nightly", "nightly.yaml", "--budget", "1m", "--night", "2025-03-01", "--quiet", "--storage", storage, "--tracking-uri", tracking]
    )
    assert code == 0
    out, err = capfd.readouterr()
    assert "password=***" in err and "hunter2" not in out + err
    for path in (tmp_path / "reports").rglob("report.*"):
        assert "hunter2" not in path.read_text() and "password=***" in path.read_text()
    study = optuna.load_study(study_name="exp-night-20250301", storage=storage)
    assert "hunter2" not in json.dumps(study.user_attrs)
    client = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")  # absolute: MLflow caches a store per URI string
    runs = client.search_runs([client.get_experiment_by_name("exp-night-20250301").experiment_id])
    parent = next(r for r in runs if r.data.tags.get("tuner.role") == "parent")
    assert parent.data.tags["tuner.night_status"] == "ok"
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert artifacts == {"report/report.json", "report/report.md"}
    logged = json.dumps([(r.data.params, r.data.tags) for r in runs])
    logged += Path(client.download_artifacts(parent.info.run_id, "experiment.yaml", str(tmp_path))).read_text()
    assert "hunter2" not in logged


def test_warm_start_keeps_only_what_tonights_space_can_run() -> None:
    space = parse_space(
        {"lr": {"low": 0.001, "high": 0.1, "log": True}, "batch_size": {"choices": [64, 128]}, "precision": "fp32"}, "s.yaml"
    )
    assert within(space, {"lr": 0.01, "batch_size": 64, "precision": "bf16", "beta1": 0.9}) == {"lr": 0.01, "batch_size": 64}
    assert within(space, {"lr": 0.5, "batch_size": 64}) is None  # outside tonight's range
    assert within(space, {"lr": 0.01, "batch_size": 256}) is None  # no longer a choice


def test_sigterm_during_a_night_still_writes_the_report(tmp_path: Path) -> None:
    class Stop(StudyHooks):
        def on_evaluation(self, tt, ev):
            os.kill(os.getpid(), signal.SIGTERM)

    path = nightly_experiment(tmp_path)
    experiment = load_experiment(write(path, path.read_text().replace("target: 0.9", "target: 0.999")))
    options, prepared = NightOptions(datetime.date(2025, 3, 1), 60.0, Path("reports")), prepare(experiment)
    with signals.handled(), pytest.raises(signals.Interrupted) as info:
        run_night(experiment, options, prepared, lambda e, hooks: run_study(e, prepared=prepared, hooks=[Stop(), *hooks]))
    assert info.value.exit_code == 143
    result, md = report(tmp_path, "2025-03-01")
    assert result["status"] == "interrupted" and result["ending"] == "interrupted by SIGTERM"
    assert result["trials"]["by_outcome"] == {"interrupted": 1} and "INTERRUPTED" in md


def test_a_night_to_a_loss_target_says_so_in_its_report(tmp_path: Path) -> None:
    path = nightly_experiment(tmp_path)
    write(path, path.read_text().replace("objective: {target: 0.9,", "objective: {metric: loss, target: 0.5,"))
    assert night("2025-03-01") == 0
    result, md = report(tmp_path, "2025-03-01")
    assert (result["target"], result["unit"]) == ("loss <= 0.5", "s")
    assert "Objective: seconds to loss <= 0.5 on the robust clock" in md
    assert result["best"] is not None and "- time to loss <= 0.5: **" in md
