"""tuner: find the training configuration that reaches a target accuracy in the least time."""

from tuner.api import best_configuration, objective_unit, run, train_once
from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.run.experiment_file import load_experiment
from tuner.study.scoring.censoring import objective_value
from tuner.tasks.base import Task
from tuner.train.result import Outcome, TrialResult
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig

__all__ = [
    "ConfigError",
    "Experiment",
    "Outcome",
    "Task",
    "TimeToTarget",
    "TrialConfig",
    "TrialResult",
    "best_configuration",
    "load_experiment",
    "objective_unit",
    "objective_value",
    "run",
    "train_once",
]
