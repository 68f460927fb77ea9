"""Optuna's own name for each objective (``study.metric_names``, what Optuna Dashboard labels
its axes with): set when a study is created, kept when it resumes, given to a study an earlier
version made, never written by a resume that is refused. Studies on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment, write

from tuner.errors import ConfigError
from tuner.study.objective_identity import ObjectiveIdentity
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.opening import open_study
from tuner.study.study_record import write_definition

LOSS = "objective: {metric: loss, target: 0.5, eval_every_samples: 256, cap_s: 2.0}\n"


def stored_names(tmp_path: Path, name: str) -> list[str] | None:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path / 'study.db'}").metric_names


def test_a_new_study_names_its_objective_with_the_target_and_the_unit(tmp_path: Path) -> None:
    open_study(load_experiment(synthetic_experiment(tmp_path / "lossy.yaml", LOSS)))
    assert stored_names(tmp_path, "lossy") == ["time to loss <= 0.5 (s)"]
    cost = "objective: {minimize: cost, target: 0.9}\ncost: {per_device_hour: 2.0, currency: EUR}\n"
    open_study(load_experiment(synthetic_experiment(tmp_path / "costly.yaml", cost)))
    assert stored_names(tmp_path, "costly") == ["cost to accuracy >= 0.9 (EUR)"]
    front = "objective: {minimize: [time, model_size], target: 0.9}\n"
    open_study(load_experiment(synthetic_experiment(tmp_path / "front.yaml", front)))
    assert stored_names(tmp_path, "front") == ["time to accuracy >= 0.9 (s)", "model_size (B)"]


def test_a_resumed_study_keeps_its_names_and_an_older_one_gets_them(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "kept.yaml", LOSS)
    study = open_study(load_experiment(path))
    study.set_metric_names(["named by hand"])  # whatever the study holds stays
    open_study(load_experiment(path))
    assert stored_names(tmp_path, "kept") == ["named by hand"]

    older = synthetic_experiment(tmp_path / "older.yaml")
    optuna.create_study(study_name="older", storage=f"sqlite:///{tmp_path / 'study.db'}", direction="minimize")  # no names
    open_study(load_experiment(older))
    assert stored_names(tmp_path, "older") == ["time to accuracy >= 0.9 (s)"]


def test_a_refused_resume_writes_no_names(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "other.yaml", LOSS)
    experiment = load_experiment(path)
    study = optuna.create_study(study_name="other", storage=experiment.storage, direction="minimize")
    write_definition(study, ObjectiveIdentity.of(experiment).as_stored(), experiment.to_dict())  # as an earlier version made it: no names
    write(path, path.read_text().replace("metric: loss, target: 0.5", "target: 0.9"))
    with pytest.raises(ConfigError, match="objective.metric"):
        open_study(load_experiment(path))
    assert stored_names(tmp_path, "other") is None
