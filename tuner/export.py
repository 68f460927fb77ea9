"""The best configuration written as an experiment that `tuner train` runs once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import FrozenTrial

from tuner.errors import ConfigError
from tuner.study import best_trial


def load_existing_study(storage: str, name: str | None, source: str) -> optuna.Study:
    """Load a study without creating anything: a missing file or name is a ConfigError."""
    if storage.startswith("sqlite:///"):
        path = Path(storage.removeprefix("sqlite:///"))
        if not path.is_file():
            raise ConfigError(source, "storage", "an existing study database", storage)
    names = optuna.get_all_study_names(storage=storage)
    if name not in names:
        raise ConfigError(source, "study", "one of " + (", ".join(names) or "(no studies)"), name)
    return optuna.load_study(study_name=name, storage=storage)


def best_experiment(study: optuna.Study, trial: FrozenTrial) -> dict[str, Any]:
    """The study's experiment with every dimension fixed to the trial's configuration."""
    experiment = dict(study.user_attrs["experiment"])
    experiment["name"] = f"{study.study_name}-best"
    experiment["search_space"] = dict(trial.user_attrs["config"])
    experiment["budget"] = {"n_trials": 1, "timeout_s": None}
    return experiment


def write_best(study: optuna.Study, path: str | Path) -> tuple[FrozenTrial, dict[str, Any]]:
    trial = best_trial(study)
    if trial is None:
        raise ConfigError(study.study_name, "best", "a study with at least one trial that reached the target", "none reached it")
    experiment = best_experiment(study, trial)
    o = study.user_attrs["objective"]
    header = (
        f"# Best configuration of study {study.study_name!r}: trial {trial.number}, "
        f"{trial.value:.3f} s to {o['target']} on the {o['clock']} clock.\n"
        f"# Train it once with: tuner train {Path(path).name}\n"
    )
    Path(path).write_text(header + yaml.safe_dump(experiment, sort_keys=False))
    return trial, experiment
