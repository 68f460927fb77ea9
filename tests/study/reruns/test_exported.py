"""`tuner best`'s export holds the dimensions the winner's choices use, and still repeats the trial."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
import yaml
from conftest import cli, synthetic_experiment

from tuner.study.reruns.exported import exported_params
from tuner.study.reruns.winner import winner
from tuner.study.study_record import write_config_reads, write_definition
from tuner.train.trial_config import TrialConfig

UNUSED_BY_ADAMW_CONSTANT = {"muon_momentum", "sf_weight_lr_power", "decay_frac", "warmup_frac", "horizon_samples"}
BUILT_IN_LOOP_LEVERS = {
    "devices",
    "num_workers",
    "pin_memory",
    "persistent_workers",
    "prefetch_factor",
    "cache",
    "freeze_frac",
    "head_lr_mult",
}


@pytest.mark.e2e
def test_an_adamw_constant_winners_export_holds_only_what_it_uses_and_still_trains(tmp_path: Path) -> None:
    # The default space, its optimizer and schedule narrowed so that every trial, the baseline too, is AdamW on a constant rate.
    exp = synthetic_experiment(
        tmp_path / "exp.yaml",
        """
        baseline: {optimizer: adamw}
        """,
        n_trials=2,
    )
    exp.write_text(
        exp.read_text().replace(
            "precision: fp32", "precision: fp32\n    optimizer: {choices: [adamw]}\n    schedule: {choices: [constant]}"
        )
    )
    run = cli("run", str(exp), "--no-tracking", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    best = cli("best", str(exp), "-o", "best.yaml", cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    text = (tmp_path / "best.yaml").read_text()
    space = yaml.safe_load(text)["search_space"]
    assert space["optimizer"] == "adamw" and space["schedule"] == "constant"
    assert not (UNUSED_BY_ADAMW_CONSTANT | BUILT_IN_LOOP_LEVERS) & set(space), space
    assert {"lr", "beta1", "beta2", "weight_decay", "amsgrad", "batch_size", "width"} <= set(space)
    # The study's dimensions left out are named in a comment, in the file and on the terminal.
    note = "left out, as this configuration does not use them (each at its default): muon_momentum, sf_weight_lr_power, warmup_frac"
    assert note in text and note in best.stdout

    study = optuna.load_study(study_name="exp", storage=f"sqlite:///{tmp_path / 'study.db'}")
    chosen = winner(study)
    assert chosen is not None
    stored = study.trials[chosen.trial.number].user_attrs
    train = cli("train", "best.yaml", "--json", cwd=tmp_path)
    assert train.returncode == 0, train.stderr
    result = json.loads(train.stdout.strip().splitlines()[-1])
    assert result["config"] == stored["config"]  # what was left out resolves to what the trial used
    assert result["samples_to_target"] == stored["samples_to_target"]  # the trial, repeated


def test_a_value_off_its_default_stays_where_its_choices_leave_it_unread(tmp_path: Path) -> None:
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")
    space = {"optimizer": {"choices": ["adamw", "muon"]}, "schedule": {"choices": ["constant", "warmup_cosine"]}, "warmup_frac": 0.1}
    write_definition(study, {}, {"search_space": space})
    config = TrialConfig(optimizer="adamw", schedule="constant", warmup_frac=0.1, hyper={"dropout": 0.2})
    exported = exported_params(study, config)
    # warmup_frac is unread under a constant rate, but left out it would be 0.05: kept, so the export is this configuration.
    assert exported.params == {"optimizer": "adamw", "schedule": "constant", "warmup_frac": 0.1, "dropout": 0.2}
    assert TrialConfig.from_params(exported.params) == config
    assert exported.left_out == []


def test_an_own_loops_export_holds_what_its_loop_read(tmp_path: Path) -> None:
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")
    space = {"optimizer": {"choices": ["adam", "adamw"]}, "beta1": {"low": 0.8, "high": 0.95}, "batch_size": {"choices": [32, 100]}}
    write_definition(study, {}, {"search_space": space})
    write_config_reads(study, {"read": ["optimizer", "lr", "batch_size"], "named": sorted(space)})
    config = TrialConfig(optimizer="adam", batch_size=100)
    exported = exported_params(study, config)
    assert exported.params == {"optimizer": "adam", "batch_size": 100}  # beta1, never read and at its default, left out
    assert exported.left_out == ["beta1"]
    assert TrialConfig.from_params(exported.params) == config
