"""Keeping and starting from weights beyond the single-process loop: data-parallel trials
(rank 0 keeps the unwrapped model) and training functions of one's own (session.keep,
session.start_from). Real training on the synthetic task; real gloo processes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
import yaml
from conftest import CPU, FAST

from tuner.cli import main as cli
from tuner.compress.measure import held_out_metric
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.tasks.hyperparameters import build_model
from tuner.tasks.registry import build_task
from tuner.train.checkpoint import CHECKPOINT_KEYS
from tuner.train.result import Outcome
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "own_job"
STOP = FAST.stop_rule()


def _experiment(path: Path, task: str = "synthetic", **extra) -> Path:
    raw = {
        "name": path.stem,
        "task": task,
        "search_space": {"lr": 0.01, "batch_size": 64, **extra.pop("space", {})},
        "objective": {"target": 0.9, "eval_every_samples": 256, "cap_s": 10.0},
        **extra,
    }
    path.write_text(yaml.safe_dump(raw))
    return path


# -- data-parallel trials ------------------------------------------------------------------


def test_a_data_parallel_trial_saves_rank_0s_unwrapped_weights_that_reload(tmp_path: Path, capsys) -> None:
    assert cli(["train", str(_experiment(tmp_path / "ddp.yaml", space={"devices": 2})), "--save", "model.pt"]) == 0
    saved = torch.load("model.pt", weights_only=True)
    assert set(CHECKPOINT_KEYS) <= set(saved) and saved["reached"] is True and saved["config"]["devices"] == 2
    assert not any(k.startswith("module.") for k in saved["state_dict"])  # the model, not its DDP wrapper
    task = build_task("synthetic", {})
    model = build_model(task, TrialConfig.from_params(saved["config"]))
    model.load_state_dict(saved["state_dict"])
    assert held_out_metric(model, task, CPU) == pytest.approx(saved["metric"], abs=1e-6)


def test_a_data_parallel_fine_tune_follows_the_single_process_one_through_the_thaw(tmp_path: Path, hard_synthetic) -> None:
    # A pretrained start on rank 0 only (DDP hands it to rank 1), the body frozen for the first
    # 256 samples and thawed after: DDP must average the body's gradients once thawed, or
    # rank 0 would step on half a batch and leave the single-process curve at once.
    start = build_model(hard_synthetic, TrialConfig())
    torch.save(start.state_dict(), tmp_path / "start.pt")
    path = _experiment(tmp_path / "tune.yaml", init_from="start.pt", task_options={"noise": 3.0})
    task = prepare(load_experiment(path)).task
    assert task.init_state is not None
    config = TrialConfig(batch_size=64, lr=1e-2, freeze_frac=256 / TrialConfig().horizon_samples)
    rule = dataclasses.replace(STOP, target=0.99, max_samples=1600)  # never reached on this noisy task
    kept: dict[str, dict] = {}
    one = train_trial(task, config, rule, CPU, seed=1, keep=lambda m: kept.update(one=m.state_dict()))
    two = train_trial(task, dataclasses.replace(config, devices=2), rule, CPU, seed=1, keep=lambda m: kept.update(two=m.state_dict()))
    assert one.outcome is two.outcome is Outcome.TIMEOUT, (one.reason, two.reason)
    for a, b in zip(one.evaluations, two.evaluations, strict=True):
        assert b.loss == pytest.approx(a.loss, rel=1e-4)
    assert torch.allclose(kept["one"]["0.weight"], kept["two"]["0.weight"], atol=1e-4)
    assert not torch.equal(kept["two"]["0.weight"], start.state_dict()["0.weight"])  # the body trained after the thaw


# -- training functions of one's own -------------------------------------------------------


@pytest.fixture
def own_job(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    import own_job_mod

    return own_job_mod


def test_an_own_loop_keeps_the_model_it_names_and_save_writes_it(tmp_path: Path, own_job, capsys) -> None:
    assert cli(["train", str(_experiment(tmp_path / "own.yaml", task="own_job_mod:kept_loop")), "--save", "own.pt"]) == 0
    saved = torch.load("own.pt", weights_only=True)
    assert saved["task"] == "own_job_mod:kept_loop" and saved["reached"] is True
    model = own_job._mlp(saved["width"], 0.0, 1)
    model.load_state_dict(saved["state_dict"])
    assert own_job.held_out_accuracy(model, own_job.synthetic_task()) == pytest.approx(saved["metric"], abs=1e-6)


def test_an_own_loop_starts_from_init_from_and_a_misfit_fails_the_trial_in_one_line(tmp_path: Path, own_job, capsys) -> None:
    assert cli(["train", str(_experiment(tmp_path / "first.yaml", task="own_job_mod:kept_loop")), "--save", "own.pt"]) == 0
    task = prepare(load_experiment(_experiment(tmp_path / "again.yaml", task="own_job_mod:kept_loop", init_from="own.pt"))).task
    result = train_trial(task, TrialConfig(lr=0.01, batch_size=64), STOP, CPU)
    assert result.outcome is Outcome.REACHED and result.samples_to_target == 256  # already there at the first report
    misfit = prepare(
        load_experiment(_experiment(tmp_path / "deep.yaml", task="own_job_mod:kept_loop", init_from="own.pt", space={"depth": 2}))
    ).task
    failed = train_trial(misfit, TrialConfig(lr=0.01, batch_size=64, hyper={"depth": 2}), STOP, CPU)
    assert failed.outcome is Outcome.FAILED
    assert failed.reason.startswith("SessionError: session.start_from: init_from does not fit the model; key ")
    assert "\n" not in failed.reason


def test_an_own_loop_that_names_no_model_saves_nothing_and_says_why(tmp_path: Path, own_job, capsys) -> None:
    assert cli(["train", str(_experiment(tmp_path / "plain.yaml", task="own_job_mod:own_loop")), "--save", "plain.pt"]) == 0
    assert not Path("plain.pt").exists()
    assert "session.keep(model)" in capsys.readouterr().out
