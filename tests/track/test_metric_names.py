"""What a study's MLflow runs call their metrics: the target's held-out metric by its own name
(``loss``, ``best_loss``), the objective value with its unit (``objective_s``, ``objective_EUR``),
live, after `tuner sync`, and for runs an earlier version logged as ``objective_s``.
Real studies on the synthetic task, logged to an embedded MLflow store."""

from __future__ import annotations

import io
from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment
from mlflow import MlflowClient
from optuna.trial import TrialState

from tuner.study.record import TrialRecord
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.study.study_record import study_objective
from tuner.track.run_layout import DEFAULT_NAMES
from tuner.track.sync import connect, doctor, sync, sync_trials, trial_value
from tuner.track.trial_runs import MlflowTracking

LOSS_TARGET = "objective: {metric: loss, target: 0.5, eval_every_samples: 256, cap_s: 2.0}\nconfirm: {after_search: false}\n"
COST = (
    "objective: {minimize: cost, target: 0.9, eval_every_samples: 256, cap_s: 2.0, clock: robust}\n"
    "cost: {per_device_hour: 3.0, currency: EUR}\n"
    "confirm: {after_search: false}\n"
)


def run(path: Path, uri: str | None, n_trials: int = 3) -> optuna.Study:
    experiment = load_experiment(path).with_overrides(n_trials=n_trials, **({"tracking_uri": uri} if uri else {}))
    hooks = [MlflowTracking(uri, source=str(path), stream=io.StringIO())] if uri else []
    return run_study(experiment, hooks=hooks)


def runs(uri: str, name: str) -> tuple[object, dict[int, object]]:
    """(the parent run, the child run of each trial)."""
    client = MlflowClient(uri)
    found = client.search_runs([client.get_experiment_by_name(name).experiment_id])
    [parent] = [r for r in found if r.data.tags.get("tuner.role") == "parent"]
    return parent, {int(r.data.tags["tuner.trial_number"]): r for r in found if r.data.tags.get("tuner.role") != "parent"}


def scored(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.trials if t.state is TrialState.COMPLETE]


def check_loss_runs(study: optuna.Study, uri: str) -> None:
    client = MlflowClient(uri)
    _, children = runs(uri, study.study_name)
    assert sorted(children) == [t.number for t in study.trials]
    for t in study.trials:
        metrics = children[t.number].data.metrics
        assert {"best_loss", "final_loss", "loss"} <= set(metrics), sorted(metrics)
        assert not {"accuracy", "best_accuracy", "final_accuracy"} & set(metrics)  # no loss logged under an accuracy's name
        assert metrics["best_loss"] == pytest.approx(t.user_attrs["best_metric"], abs=1e-6)
        history = client.get_metric_history(children[t.number].info.run_id, "loss")
        assert [m.step for m in history] == t.user_attrs["curve"]["samples"]
        assert [m.value for m in history] == pytest.approx(t.user_attrs["curve"]["metric"], abs=1e-4)
        if t.state is TrialState.COMPLETE:
            assert metrics["objective_s"] == pytest.approx(t.value)
    assert doctor(study, uri) == []


@pytest.mark.e2e
def test_a_loss_target_study_logs_the_loss_under_its_own_name_live_and_after_sync(tmp_path: Path, tracking_uri: str) -> None:
    study = run(synthetic_experiment(tmp_path / "lossy.yaml", LOSS_TARGET), tracking_uri)
    assert any(t.user_attrs["outcome"] == "reached" for t in study.trials)
    check_loss_runs(study, tracking_uri)
    parent, _ = runs(tracking_uri, "lossy")
    assert "best_objective_s" in parent.data.metrics
    empty = f"sqlite:///{tmp_path / 'synced' / 'mlflow.db'}"
    assert sync(study, empty, plots=False).created == len(study.trials)
    check_loss_runs(study, empty)


@pytest.mark.e2e
def test_a_cost_study_names_its_values_in_its_currency(tmp_path: Path, tracking_uri: str) -> None:
    study = run(synthetic_experiment(tmp_path / "costly.yaml", COST), tracking_uri)
    parent, children = runs(tracking_uri, "costly")
    for t in scored(study):
        metrics = children[t.number].data.metrics
        assert metrics["objective_EUR"] == pytest.approx(t.value) and "objective_s" not in metrics
        assert {"best_accuracy", "final_accuracy"} <= set(metrics)  # an accuracy target keeps its names
    assert {"trial_objective_EUR", "best_objective_EUR"} <= set(parent.data.metrics)
    assert not {"trial_objective_s", "best_objective_s"} & set(parent.data.metrics)
    assert "EUR to accuracy >= 0.9 on the robust clock**" in parent.data.tags["mlflow.note.content"]
    assert doctor(study, tracking_uri) == []


def test_runs_an_earlier_version_logged_in_seconds_still_agree_and_are_not_logged_twice(tmp_path: Path, tracking_uri: str) -> None:
    study = run(synthetic_experiment(tmp_path / "older.yaml", COST), None)  # the study, no MLflow yet
    store = connect(study, tracking_uri)
    store.names = DEFAULT_NAMES  # as every version logged a value before it carried its unit: objective_s
    sync_trials(store, study)
    parent, children = runs(tracking_uri, "older")
    assert all("objective_s" in children[t.number].data.metrics for t in scored(study))
    assert doctor(study, tracking_uri) == []  # read under the earlier name
    sync(study, tracking_uri, plots=False)
    parent, _ = runs(tracking_uri, "older")
    client = MlflowClient(tracking_uri)
    assert client.get_metric_history(parent.info.run_id, "trial_objective_EUR") == []  # each trial's value is there once
    valued = [t for t in study.trials if trial_value(TrialRecord.of(t), study_objective(study)) is not None]
    assert [m.step for m in client.get_metric_history(parent.info.run_id, "trial_objective_s")] == [t.number for t in valued]
