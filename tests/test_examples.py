"""The examples/ training loops of one's own, each tuned by `tuner run` in a subprocess
against temporary stores, as a user would run them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.conftest import REPO_ROOT, cli, write
from tuner.study.record import TrialRecord
from tuner.study.scoring.censoring import objective_value
from tuner.study.study_record import config_reads

ENV = {"PYTHONPATH": str(REPO_ROOT)}  # so that `examples.plain_loop` imports from any folder


def trial_runs(tracking_uri: str, name: str) -> dict[int, object]:
    """Trial number -> the study's MLflow trial run."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id], "tags.`tuner.role` = 'trial'")
    return {int(r.data.tags["tuner.trial_number"]): r for r in runs}


def child_runs(tracking_uri: str, name: str) -> dict[int, tuple[str, str]]:
    """Trial number -> (MLflow status, outcome tag) of the study's trial runs."""
    return {n: (r.info.status, r.data.tags.get("tuner.train.result")) for n, r in trial_runs(tracking_uri, name).items()}


@pytest.mark.e2e
def test_the_shipped_plain_loop_experiment_loads() -> None:
    # The Lightning one is loaded by its own test's run (importing Lightning takes seconds).
    result = cli("validate", str(REPO_ROOT / "examples" / "plain_loop.yaml"), cwd=REPO_ROOT, env=ENV)
    assert result.returncode == 0, result.stderr
    assert "dropout          0 .. 0.5" in result.stdout and "depth            one of 1, 2, 3" in result.stdout
    result = cli("validate", str(REPO_ROOT / "examples" / "regression_loop.yaml"), cwd=REPO_ROOT, env=ENV)
    assert result.returncode == 0, result.stderr
    assert "metric: mse" in result.stdout and "direction: minimize" in result.stdout


def fast_slow_flat(tmp_path: Path, tracking_uri: str, name: str, task: str, own: str, objective: str, enqueued: list[dict]) -> list:
    """Run an example loop's study on three enqueued configurations (a fast rate, a slow one, a
    flat one) and return its trials, asserting they were reached, capped and pruned in that order.

    ``own``: the loop's own dimensions (a flow mapping's inside); ``objective``: the target's keys."""
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    path = write(
        tmp_path / f"{name}.yaml",
        f"""
    name: {name}
    task: {task}
    search_space: {{lr: {{low: 1.0e-4, high: 3.0e-2, log: true}}, batch_size: 32, width: 1.0, weight_decay: 0.0, {own}}}
    objective: {{{objective}, cap_s: 30.0, clock: train}}
    pruner: {{name: equal_time, min_trials: 2, warmup_s: 0.0, cap_slack: 1.2, bucket_s: 0.005}}
    budget: {{n_trials: 3}}
    confirm: {{after_search: false}}
    race: null
    trainer: {{threads: 1}}
    storage: {storage}
    tracking_uri: {tracking_uri}
    """,
    )
    study = optuna.create_study(study_name=name, storage=storage, direction="minimize")
    for params in enqueued:
        study.enqueue_trial(params)
    result = cli("run", str(path), "--quiet", cwd=tmp_path, env=ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    trials = optuna.load_study(study_name=name, storage=storage).trials
    outcomes = [t.user_attrs.get("outcome") for t in trials]
    assert outcomes == ["reached", "capped", "pruned"], [t.user_attrs.get("reason") for t in trials]
    return trials


@pytest.mark.e2e
def test_the_plain_loop_is_pruned_and_capped_in_a_real_study(tmp_path: Path, tracking_uri: str) -> None:
    """Three trials in a fixed order: a fast one sets the incumbent, a slow one (a thirtieth of
    the rate: a tenth reached the target within 1.2 x on a loaded machine) runs past its time
    and is capped, a flat one (a 300th) trails both at the same elapsed time and is pruned.
    min_trials 2 keeps the slow one from being pruned first; a 5 ms bucket lets the pruner
    judge at every evaluation of these millisecond trials."""
    trials = fast_slow_flat(
        tmp_path,
        tracking_uri,
        "plain",
        "examples.plain_loop:train",
        "depth: 1, dropout: {choices: [0.0, 0.1]}",
        "target: 0.9, eval_every_samples: 256",
        [{"lr": lr, "dropout": 0.0} for lr in (3e-2, 1e-3, 1e-4)],
    )
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.PRUNED]
    assert trials[1].value >= 1.2 * trials[0].value  # scored at its clock when capped, past the incumbent
    assert child_runs(tracking_uri, "plain") == {0: ("FINISHED", "reached"), 1: ("KILLED", "capped"), 2: ("KILLED", "pruned")}
    # The loop's own hyperparameters are parameters of each run, beside the built-in ones.
    assert all(
        r.data.params.get("dropout") == "0.0" and r.data.params.get("depth") == "1" and "lr" in r.data.params
        for r in trial_runs(tracking_uri, "plain").values()
    )


@pytest.mark.e2e
def test_the_regression_loop_minimizes_a_loss_and_is_pruned_and_capped(tmp_path: Path, tracking_uri: str) -> None:
    """The own loop reports a held-out MSE, lower is better (metric: mse, direction: minimize).
    As for the plain loop: a fast rate sets the incumbent, a slow one runs past 1.2 x its time
    and is capped, a flat one trails both at the same elapsed time and is pruned."""
    trials = fast_slow_flat(
        tmp_path,
        tracking_uri,
        "regression",
        "examples.regression_loop:train",
        "depth: 2",
        "metric: mse, direction: minimize, target: 0.05, eval_every_samples: 800",
        [{"lr": lr} for lr in (1e-2, 2e-3, 1e-4)],
    )
    assert trials[0].user_attrs["best_metric"] <= 0.05 < trials[2].user_attrs["best_metric"]  # reached from above
    assert trials[0].user_attrs["reason"].startswith("reached ") and " <= 0.05 " in trials[0].user_attrs["reason"]
    assert trials[1].value >= 1.2 * trials[0].value  # scored past the incumbent it was capped at
    # A miss far from the target scores behind, as the study scores it (cap_s x (1 + gap)); Optuna's own
    # value of a pruned trial is its last reported error, not a time, and ranks nothing against a time.
    missed = objective_value(TrialRecord.of(trials[2]).result, clock="train", cap_s=30.0)
    assert missed >= 30.0 > trials[1].value
    assert child_runs(tracking_uri, "regression") == {0: ("FINISHED", "reached"), 1: ("KILLED", "capped"), 2: ("KILLED", "pruned")}


@pytest.mark.e2e
@pytest.mark.skipif(importlib.util.find_spec("lightning") is None, reason="the lightning extra is not installed")
def test_the_lightning_loop_reports_and_is_stopped_by_the_session(tmp_path: Path, tracking_uri: str) -> None:
    """Two trials in a fixed order, each with the searched optimizer, schedule, precision, batch and
    accumulation given to the Trainer by the session's calls: AdamW in fp16 (Lightning's scaler),
    then Schedule-Free AdamW in bf16 in two passes per step, validated on its averaged weights."""
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    path = write(
        tmp_path / "lightning.yaml",
        f"""
    name: lightning
    task: examples.lightning_loop:train
    search_space:
      optimizer: {{choices: [adamw, adamw_schedulefree]}}
      lr: {{choices: [3.0e-2, 1.0e-2]}}
      schedule: {{choices: [constant, warmup_stable_decay]}}
      horizon_samples: 20000
      precision: {{choices: [fp16, bf16]}}
      batch_size: {{choices: [32, 64]}}
      accumulate: {{choices: [1, 2]}}
      width: 1.0
      weight_decay: 0.0
      dropout: 0.1
      depth: {{choices: [1, 2]}}
    objective: {{target: 0.9, eval_every_samples: 256, cap_s: 30.0}}
    budget: {{n_trials: 2}}
    confirm: {{after_search: false}}
    race: null
    trainer: {{threads: 1}}
    storage: {storage}
    tracking_uri: {tracking_uri}
    """,
    )
    study = optuna.create_study(study_name="lightning", storage=storage, direction="minimize")
    study.enqueue_trial(
        {"optimizer": "adamw", "lr": 3e-2, "schedule": "constant", "precision": "fp16", "batch_size": 32, "accumulate": 1, "depth": 1}
    )
    study.enqueue_trial(
        {
            "optimizer": "adamw_schedulefree",
            "lr": 1e-2,
            "schedule": "warmup_stable_decay",
            "precision": "bf16",
            "batch_size": 64,
            "accumulate": 2,
            "depth": 2,
        }
    )
    result = cli("run", str(path), "--quiet", cwd=tmp_path, env=ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "never read" not in result.stdout + result.stderr
    trials = optuna.load_study(study_name="lightning", storage=storage).trials
    assert len(trials) == 2, ([(t.state.name, t.user_attrs.get("reason")) for t in trials], result.stderr[-2000:])
    # max_epochs=-1: only the callback's trainer.should_stop ended each fit; the second may run
    # past the first's time (two passes per step on a loaded machine) and be capped at it.
    assert trials[0].user_attrs["outcome"] == "reached", trials[0].user_attrs.get("reason")
    assert trials[1].user_attrs["outcome"] in ("reached", "capped"), trials[1].user_attrs.get("reason")
    reads = set(config_reads(optuna.load_study(study_name="lightning", storage=storage))["read"])
    assert {"optimizer", "lr", "schedule", "decay_frac", "horizon_samples", "precision", "batch_size", "accumulate"} <= reads
    # A reached trial's run is FINISHED, a capped one's KILLED (docs/reviewing.md).
    status_of = {"reached": "FINISHED", "capped": "KILLED"}
    runs = child_runs(tracking_uri, "lightning")
    assert {n: status for n, (status, _) in runs.items()} == {t.number: status_of[t.user_attrs["outcome"]] for t in trials}


@pytest.mark.e2e
@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="the huggingface extra is not installed")
def test_the_hugging_face_trainer_reports_and_takes_the_searched_dimensions(tmp_path: Path, tracking_uri: str) -> None:
    """A GPT-2 built from a config on the charlm corpus, to a held-out loss of 3.0: two trials in
    a fixed order, AdamW in bf16 with warmup-stable-decay in two passes per step, then
    Schedule-Free AdamW in fp32 (evaluated on its averaged weights); each ended by the callback."""
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    path = write(
        tmp_path / "hf.yaml",
        f"""
    name: hf
    task: examples.hf_trainer_loop:train
    search_space:
      optimizer: {{choices: [adamw, adamw_schedulefree]}}
      lr: 1.0e-2
      schedule: {{choices: [constant, warmup_stable_decay]}}
      horizon_samples: 40000
      precision: {{choices: [fp32, bf16]}}
      batch_size: 32
      accumulate: {{choices: [1, 2]}}
      width: 1.0
      n_layer: 1
    objective: {{metric: loss, direction: minimize, target: 3.0, eval_every_samples: 640, cap_s: 60.0}}
    budget: {{n_trials: 2}}
    confirm: {{after_search: false}}
    race: null
    screen: null
    trainer: {{threads: 1}}
    storage: {storage}
    tracking_uri: {tracking_uri}
    """,
    )
    study = optuna.create_study(study_name="hf", storage=storage, direction="minimize")
    study.enqueue_trial({"optimizer": "adamw", "schedule": "warmup_stable_decay", "precision": "bf16", "accumulate": 2})
    study.enqueue_trial({"optimizer": "adamw_schedulefree", "schedule": "constant", "precision": "fp32", "accumulate": 1})
    result = cli("run", str(path), cwd=tmp_path, env=ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "never read" not in out
    assert "{'eval_loss'" not in out and "{'train_runtime'" not in out, out  # session.quiet_trainer: no Trainer dicts
    trials = optuna.load_study(study_name="hf", storage=storage).trials
    assert len(trials) == 2, ([(t.state.name, t.user_attrs.get("reason")) for t in trials], result.stderr[-2000:])
    assert trials[0].user_attrs["outcome"] == "reached", trials[0].user_attrs.get("reason")
    assert trials[1].user_attrs["outcome"] in ("reached", "capped"), trials[1].user_attrs.get("reason")
    assert trials[0].user_attrs["best_metric"] <= 3.0  # the Trainer's eval_loss, reported from above
    reads = set(config_reads(optuna.load_study(study_name="hf", storage=storage))["read"])
    assert {"optimizer", "lr", "schedule", "decay_frac", "horizon_samples", "precision", "batch_size", "accumulate"} <= reads
