"""tuner: find the training configuration that reaches a target accuracy in the least time."""

from tuner.api import best_configuration, run, train_once
from tuner.bookkeeping import TimeToTarget
from tuner.config import Experiment, load_experiment
from tuner.errors import ConfigError
from tuner.objective import objective_value
from tuner.outcome import Outcome, TrialResult
from tuner.tasks.base import Task
from tuner.trial_config import TrialConfig

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
    "objective_value",
    "run",
    "train_once",
]
