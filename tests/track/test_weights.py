"""Trained weights on the trials' MLflow runs (tuner/track/weights.py): a real study on the
synthetic task, a real embedded MLflow store under tmp_path, the artifact downloaded and reloaded."""

from __future__ import annotations

import io
from pathlib import Path

import optuna
import pytest
import torch
from conftest import CPU, synthetic_experiment
from mlflow import MlflowClient

from tuner.cli.compress import _load as load_for_compress
from tuner.compress.measure import held_out_metric
from tuner.errors import ConfigError
from tuner.study.record import TrialRecord
from tuner.study.reruns.winner import winner
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.run.runner import run_study
from tuner.tasks.hyperparameters import build_model
from tuner.tasks.registry import build_task
from tuner.track.run_layout import WEIGHTS_FILE
from tuner.track.trial_runs import MlflowTracking
from tuner.track.weights import keeps, may_keep
from tuner.train.checkpoint import CHECKPOINT_KEYS, read_checkpoint
from tuner.train.result import Outcome, TrialResult
from tuner.train.trial_config import TrialConfig


def _run(path: Path, uri: str) -> optuna.Study:
    experiment = load_experiment(path).with_overrides(tracking_uri=uri)
    return run_study(experiment, hooks=[MlflowTracking(uri, source=str(path), stream=io.StringIO())])


def _child_runs(uri: str, name: str) -> dict[int, object]:
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id])
    return {int(r.data.tags["tuner.trial_number"]): r for r in runs if r.data.tags.get("tuner.role") != "parent"}


def _has_weights(client: MlflowClient, run) -> bool:
    return WEIGHTS_FILE in {a.path for a in client.list_artifacts(run.info.run_id)}


def test_confirmation_runs_and_the_best_trial_log_weights_that_reload_to_their_accuracy(tmp_path: Path, tracking_uri: str) -> None:
    path = synthetic_experiment(tmp_path / "kept.yaml", "confirm:\n  top_k: 1\n  seeds: 2\n", n_trials=3, confirm=True)
    study = _run(path, tracking_uri)
    client, children = MlflowClient(tracking_uri), _child_runs(tracking_uri, "kept")
    records = {r.number: r for r in (TrialRecord.of(t) for t in study.get_trials())}
    confirmations = [n for n, r in records.items() if r.is_confirmation and r.reached]
    assert len(confirmations) == 2, [(r.number, r.outcome) for r in records.values()]
    parent = next(
        r for r in client.search_runs([client.get_experiment_by_name("kept").experiment_id]) if r.data.tags.get("tuner.role") == "parent"
    )
    # At the end the study run names the study's winner, as `tuner best` does (tuner/study/reruns/winner.py).
    choice = winner(study)
    assert int(parent.data.tags["tuner.best_trial"]) == choice.trial.number
    # Exactly: the confirmation runs, and each trial that was the best so far when it ended
    # (one worker: in number order); never a trial that missed, and never a baseline run,
    # however fast (it measures the baseline; it is no candidate).
    improved, best_so_far = set(), None
    for number in sorted(records):
        r = records[number]
        if r.reached and not r.is_baseline and r.value is not None and (best_so_far is None or r.value < best_so_far):
            improved.add(number)
            best_so_far = r.value
    assert any(not records[n].is_confirmation for n in improved)
    logged = {n for n, run in children.items() if _has_weights(client, run)}
    assert logged == set(confirmations) | improved
    if choice.confirmation is not None:  # a confirmed winner's weights are on its confirmation runs
        assert {n for n in confirmations if records[n].confirm_of == choice.trial.number} <= logged

    run = children[confirmations[0]]
    local = client.download_artifacts(run.info.run_id, WEIGHTS_FILE, str(tmp_path / "download"))
    saved = read_checkpoint(local)
    assert set(CHECKPOINT_KEYS) <= set(saved) and saved["reached"] is True and saved["task"] == "synthetic"
    assert saved["samples"] == records[confirmations[0]].result.samples
    assert saved["config"] == records[confirmations[0]].config.as_dict()
    task = build_task("synthetic", {})
    model = build_model(task, TrialConfig.from_params(saved["config"]))
    model.load_state_dict(saved["state_dict"])
    # Reloaded, the weights score what the trial's last evaluation scored on the held-out split.
    assert held_out_metric(model, task, CPU) == pytest.approx(saved["metric"], abs=1e-6)
    assert saved["metric"] == pytest.approx(records[confirmations[0]].result.final_metric)
    assert run.data.metrics["final_accuracy"] == pytest.approx(saved["metric"], abs=1e-6)

    # The artifact is a file `init_from:` and `tuner compress --from` take as they take a --save file.
    start = tmp_path / "start.yaml"
    start.write_text(f"task: synthetic\ninit_from: {local}\nsearch_space: {{lr: 0.01, batch_size: 64, width: {saved['width']}}}\n")
    assert prepare(load_experiment(start)).task.init_state is not None
    loaded = load_for_compress(local, task, TrialConfig.from_params(saved["config"]))
    assert held_out_metric(loaded, task, CPU) == pytest.approx(saved["metric"], abs=1e-6)


@pytest.mark.parametrize("policy", ["reached", "none"])
def test_tracking_weights_turns_it_on_for_every_reached_trial_or_off(tmp_path: Path, tracking_uri: str, policy: str) -> None:
    path = synthetic_experiment(tmp_path / f"w{policy}.yaml", f"tracking:\n  weights: {policy}\n", n_trials=3)
    study = _run(path, tracking_uri)
    client, children = MlflowClient(tracking_uri), _child_runs(tracking_uri, f"w{policy}")
    reached = {t.number for t in study.get_trials() if TrialRecord.of(t).reached}
    assert reached, "the synthetic task reaches 0.9 within the cap"
    logged = {n for n, run in children.items() if _has_weights(client, run)}
    assert logged == (reached if policy == "reached" else set())


def test_an_unknown_weights_policy_is_refused_at_load(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "bad.yaml", "tracking:\n  weights: all\n")
    with pytest.raises(ConfigError, match=r"tracking\.weights.*one of none, best, reached.*'all'"):
        load_experiment(path)


def test_the_policy_keeps_reached_trials_only_and_the_best_ones_by_default() -> None:
    reached, missed = TrialResult(Outcome.REACHED, "", 0.9), TrialResult(Outcome.CAPPED, "", 0.9)
    assert not may_keep("reached", False, missed, None, None)
    assert not may_keep("none", True, reached, 1.0, None)
    assert may_keep("best", True, reached, 5.0, 1.0)  # a confirmation run, however slow
    assert not may_keep("best", False, reached, 5.0, 1.0)  # slower than the best so far: cannot be the best
    assert may_keep("best", False, reached, 0.5, 1.0) and may_keep("best", False, reached, 5.0, None)
    assert keeps("best", False, True) and not keeps("best", False, False) and keeps("reached", False, False)


def test_weights_are_a_cpu_copy_that_later_training_does_not_change() -> None:
    from tuner.track.weights import checkpoint_of

    task = build_task("synthetic", {})
    model = build_model(task, TrialConfig())
    result = TrialResult(Outcome.REACHED, "", 0.9)
    kept = checkpoint_of(model, TrialConfig(), {"task": "synthetic", "task_options": {}}, result)
    before = kept["state_dict"]["0.weight"].clone()
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    assert torch.equal(kept["state_dict"]["0.weight"], before)
