"""Keeping the trained model (tuner train --save) and starting from it (init_from)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from tuner.cli import main as cli
from tuner.compress.measure import held_out_metric
from tuner.errors import ConfigError
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.tasks.hyperparameters import build_model
from tuner.tasks.registry import build_task
from tuner.train.checkpoint import CHECKPOINT_KEYS, head, parameter_groups, set_body_frozen
from tuner.train.loop import SingleProcess, train
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig

CPU = torch.device("cpu")


def _experiment(path: Path, width: float = 1.0, **extra) -> Path:
    raw = {
        "name": "keep",
        "task": "synthetic",
        "search_space": {"lr": 0.01, "batch_size": 64, "width": width, **extra.pop("space", {})},
        "objective": {"target": 0.9, "eval_every_samples": 256, "cap_s": 5.0},
        **extra,
    }
    path.write_text(yaml.safe_dump(raw))
    return path


def test_save_writes_weights_that_reload_and_reproduce_the_held_out_metric(tmp_path: Path, capsys) -> None:
    assert cli(["train", str(_experiment(tmp_path / "best.yaml")), "--save", "model.pt"]) == 0
    saved = torch.load("model.pt", weights_only=True)
    assert set(CHECKPOINT_KEYS) <= set(saved)
    assert saved["task"] == "synthetic" and saved["width"] == 1.0 and saved["reached"] is True
    assert saved["metric"] >= 0.9 and saved["samples"] > 0
    task = build_task("synthetic", {})
    model = build_model(task, TrialConfig.from_params(saved["config"]))
    model.load_state_dict(saved["state_dict"])
    # The file's metric is the trial's last evaluation, on the same held-out split.
    assert held_out_metric(model, task, CPU) == pytest.approx(saved["metric"], abs=1e-6)


def test_a_checkpoint_of_another_width_is_refused_with_the_key_and_both_shapes(tmp_path: Path, capsys) -> None:
    task = build_task("synthetic", {})
    torch.save(build_model(task, TrialConfig(width=1.0)).state_dict(), tmp_path / "wide.pt")
    path = _experiment(tmp_path / "narrow.yaml", width=0.5, init_from="wide.pt")
    with pytest.raises(ConfigError) as err:
        prepare(load_experiment(path))
    line = str(err.value)
    assert "init_from" in line and "0.weight" in line and "[16, 16]" in line and "[32, 16]" in line
    assert cli(["train", str(path)]) == 2
    assert "[32, 16]" in capsys.readouterr().err
    assert not (tmp_path / "tuner.db").exists()  # refused before anything is written


def test_every_width_the_space_can_sample_is_checked(tmp_path: Path) -> None:
    task = build_task("synthetic", {})
    torch.save(build_model(task, TrialConfig(width=1.0)).state_dict(), tmp_path / "wide.pt")
    path = _experiment(tmp_path / "e.yaml", init_from="wide.pt")
    raw = yaml.safe_load(path.read_text())
    raw["search_space"]["width"] = {"choices": [1.0, 0.25]}
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"width 0.25; key 0.weight: model \[8, 16\]"):
        prepare(load_experiment(path))


def test_a_pretrained_start_begins_where_the_checkpoint_ended(tmp_path: Path) -> None:
    assert cli(["train", str(_experiment(tmp_path / "best.yaml")), "--save", "model.pt"]) == 0
    path = _experiment(tmp_path / "init.yaml", init_from="model.pt", space={"freeze_frac": 0.5, "head_lr_mult": 2.0})
    prepared = prepare(load_experiment(path))
    assert prepared.task.init_state is not None
    config = TrialConfig(lr=0.01, batch_size=64, freeze_frac=0.5, head_lr_mult=2.0)
    tt = TimeToTarget(target=0.9, eval_every_samples=64, cap_s=5.0)
    tt.start()
    kept: dict = {}
    train(prepared.task, config, CPU, 0, tt, SingleProcess(), keep=lambda m: kept.update(m.state_dict()))
    result = tt.result()
    assert result.reached and result.samples == 64  # the first evaluation already crosses
    saved = torch.load("model.pt", weights_only=True)["state_dict"]
    assert torch.equal(kept["0.weight"], saved["0.weight"])  # the body was frozen: untouched
    assert not torch.equal(kept["2.weight"], saved["2.weight"])  # the head trained


def test_the_head_is_the_last_linear_and_gets_its_own_learning_rate() -> None:
    model = build_model(build_task("synthetic", {}), TrialConfig())
    groups = parameter_groups(model, 3.0)
    assert [g["lr_mult"] for g in groups] == [1.0, 3.0]
    assert {id(p) for p in groups[1]["params"]} == {id(p) for p in head(model).parameters()}
    set_body_frozen(model, True)
    assert [p.requires_grad for p in model.parameters()] == [False, False, True, True]


def test_init_from_may_sit_in_task_options_and_is_not_passed_to_the_task(tmp_path: Path) -> None:
    task = build_task("synthetic", {})
    torch.save(build_model(task, TrialConfig()).state_dict(), tmp_path / "start.pt")
    path = _experiment(tmp_path / "e.yaml", task_options={"init_from": "start.pt", "seed": 0})
    experiment = load_experiment(path)
    assert experiment.init_from == str((tmp_path / "start.pt").resolve())
    assert experiment.task_options == {"seed": 0}
    assert prepare(experiment).task.init_state is not None
