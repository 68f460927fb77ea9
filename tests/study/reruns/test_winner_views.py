"""Every view of a study's winner names the same trial (tuner/study/reruns/winner.py): the MLflow
study run's tags and best.yaml, `tuner best`, `tuner report` and the nightly report, after a real
confirmed night of the synthetic task on SQLite and a real MLflow store; also when the search
finds nothing faster than the baseline, which is then what every view exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import optuna
import pytest
import yaml
from conftest import DEFAULT_SPACE, write
from mlflow import MlflowClient

from tuner.cli import main
from tuner.study.record import COMPLETE, records
from tuner.study.reruns.winner import winner

NIGHT, STUDY = "2025-03-01", "views-night-20250301"

EXPERIMENT = """
name: views
task: synthetic
search_space:
  file: {space}
  override: {{precision: fp32, optimizer: adam, schedule: constant, width: 1.0, batch_size: 64, lr: {lr}}}
  remove: [beta1, beta2, amsgrad]
objective: {{target: 0.9, eval_every_samples: 256, cap_s: {cap_s}}}
baseline: {baseline}
sampler: {{name: random}}
pruner: {{name: equal_time}}  # the strategy with confirmation runs, whatever the budget in trial-lengths
budget: {{n_trials: 2}}
trainer: {{threads: 1}}
confirm: {{top_k: 2, seeds: 2, after_search: true, budget_share: 0.25}}
storage: sqlite:///{folder}/study.db
tracking_uri: {uri}
"""
# The search reaches the target and the baseline (too small a learning rate) never does: a confirmed winner.
SEARCH_WINS = {"lr": "{choices: [0.01, 0.03]}", "baseline": "{lr: 1.0e-5}", "cap_s": 2.0}
# The search's learning rates are too small to reach the target within the cap; the baseline's is not.
BASELINE_WINS = {"lr": "{low: 1.0e-6, high: 2.0e-6}", "baseline": "{lr: 1.0e-2}", "cap_s": 1.0}


def views(folder: Path, uri: str, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    """The trial each view names after one night: the nightly report, `tuner report`, `tuner best`
    (its headline and its export) and the MLflow study run (its tag and its best.yaml)."""
    storage = f"sqlite:///{folder}/study.db"
    assert main(["nightly", str(folder / "views.yaml"), "--budget", "2m", "--night", NIGHT, "--quiet", "--canary-seeds", "0"]) == 0
    nightly = json.loads((folder / "reports" / "views" / NIGHT / "report.json").read_text())
    capsys.readouterr()
    assert main(["report", STUDY, "--storage", storage, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert main(["best", "--study-name", STUDY, "--storage", storage, "-o", str(folder / "best.yaml")]) == 0
    headline = capsys.readouterr().out.splitlines()[0]
    exported = yaml.safe_load((folder / "best.yaml").read_text())

    client = MlflowClient(uri)
    [parent] = client.search_runs([client.get_experiment_by_name(STUDY).experiment_id], "tags.`tuner.role` = 'parent'")
    logged = yaml.safe_load(Path(client.download_artifacts(parent.info.run_id, "best.yaml", str(folder))).read_text())
    assert logged == exported  # the same configuration, seed and experiment, with and without the header
    named = {
        "nightly report": nightly["best"]["trial"],
        "tuner report": report["winner"]["trial"],
        "tuner best": int(re.search(r"trial (\d+)", headline).group(1)),
        "MLflow study run": int(parent.data.tags["tuner.best_trial"]),
    }
    study = optuna.load_study(study_name=STUDY, storage=storage)
    trial = {r.number: r for r in records(study)}[named["tuner best"]]
    # The export (the same in MLflow) repeats that very trial: its seed and its configuration.
    assert exported["seed"] == trial.seed and exported["search_space"]["lr"] == pytest.approx(trial.config.lr), (exported, trial)
    return named


def night_of(tmp_path: Path, tracking_uri: str, case: dict[str, object]) -> Path:
    write(tmp_path / "views.yaml", EXPERIMENT.format(space=DEFAULT_SPACE, folder=tmp_path, uri=tracking_uri, **case))
    return tmp_path


@pytest.mark.e2e
def test_every_view_names_the_confirmed_winner(tmp_path: Path, tracking_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    named = views(night_of(tmp_path, tracking_uri, SEARCH_WINS), tracking_uri, capsys)
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{tmp_path}/study.db")
    choice = winner(study)
    assert choice is not None and choice.confirmation is not None and not choice.trial.is_baseline, choice
    assert set(named.values()) == {choice.trial.number}, named


@pytest.mark.e2e
def test_every_view_names_the_baseline_when_nothing_beat_it(tmp_path: Path, tracking_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    named = views(night_of(tmp_path, tracking_uri, BASELINE_WINS), tracking_uri, capsys)
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{tmp_path}/study.db")
    assert not any(r.reached for r in records(study, COMPLETE) if not r.is_baseline)  # the search never reached the target
    choice = winner(study)
    assert choice is not None and choice.trial.is_baseline, choice
    assert set(named.values()) == {choice.trial.number}, named
