"""`tuner best`'s export: the winner as an experiment that trains once and repeats the trial."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml
from conftest import synthetic_experiment, write

from tuner.api import train_once
from tuner.errors import ConfigError
from tuner.study.record import best_reached
from tuner.study.reruns.winner import best_experiment, write_best
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.train.result import Outcome
from tuner.train.trial_config import TrialConfig


@pytest.fixture(scope="module")
def finished_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[optuna.Study, Path]:
    folder = tmp_path_factory.mktemp("export")
    exp = load_experiment(synthetic_experiment(folder / "exp.yaml", n_trials=3))
    return run_study(exp), folder


def test_best_yaml_fixes_every_dimension_to_the_winner(finished_study: tuple[optuna.Study, Path], tmp_path: Path) -> None:
    study, _ = finished_study
    trial, written = write_best(study, tmp_path / "best.yaml")
    assert trial.number == best_reached(study).number
    text = (tmp_path / "best.yaml").read_text()
    assert text.startswith(
        f"# Best configuration of study 'exp': trial {trial.number}, {trial.value:.3f} s to accuracy >= 0.9 on the robust clock.\n"
    )
    assert "# Train it once with: tuner train best.yaml\n" in text
    assert yaml.safe_load(text) == written

    best = load_experiment(tmp_path / "best.yaml")
    assert best.name == "exp-best"
    assert best.budget.n_trials == 1
    assert TrialConfig.from_params(best.search_space.fixed_params()) == trial.config
    assert best.seed == trial.seed
    # The objective is the study's, so the time means the same thing.
    assert (best.objective.target, best.objective.cap_s, best.objective.eval_every_samples) == (0.9, 2.0, 256)


def test_best_yaml_repeats_the_trial(finished_study: tuple[optuna.Study, Path], tmp_path: Path) -> None:
    study, _ = finished_study
    trial, _ = write_best(study, tmp_path / "best.yaml")
    result = train_once(load_experiment(tmp_path / "best.yaml"))
    assert result.outcome is Outcome.REACHED
    # Same configuration, same seed: the same crossing, sample for sample.
    assert result.samples_to_target == trial.result.samples_to_target


def test_best_experiment_keeps_everything_but_the_search(finished_study: tuple[optuna.Study, Path]) -> None:
    study, _ = finished_study
    trial = best_reached(study)
    exp = best_experiment(study, trial)
    stored = study.user_attrs["experiment"]
    assert {k: v for k, v in exp.items() if k not in ("name", "search_space", "budget", "seed")} == {
        k: v for k, v in stored.items() if k not in ("name", "search_space", "budget", "seed")
    }
    assert exp["budget"] == {"n_trials": 1, "timeout_s": None}


def test_no_trial_reached_is_an_error(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "miss.yaml", n_trials=2)
    text = path.read_text().replace("target: 0.9", "target: 0.99").replace("cap_s: 2.0", "cap_s: 0.1") + "task_options: {noise: 3.0}\n"
    study = run_study(load_experiment(write(path, text)))
    assert {t.user_attrs["outcome"] for t in study.get_trials()} <= {"timeout", "diverged"}
    with pytest.raises(ConfigError) as info:
        write_best(study, tmp_path / "best.yaml")
    assert info.value.allowed == "a study with at least one trial that reached the target"
    assert not (tmp_path / "best.yaml").exists()
