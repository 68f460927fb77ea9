"""A trial's value(s) for Optuna, and the objectives this machine or task cannot measure.

Each objective's value and needs are its entry in tuner/study/scoring/objectives.py:
``objective.minimize`` picks one, or several at once (a Pareto front, tuner/study/scoring/pareto.py).
"""

from __future__ import annotations

import optuna

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.record import write_reached_constraint
from tuner.study.scoring.objectives import OBJECTIVE_KINDS, Machine
from tuner.tasks.base import Task
from tuner.train.result import TrialResult
from tuner.train.trial_config import TrialConfig


def study_value(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    """The trial's value for a single-objective study to minimize (lower is better)."""
    return value_of(experiment.objective.names[0], result, experiment, config)


def value_of(name: str, result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    """The trial's value for one objective (lower is better)."""
    return OBJECTIVE_KINDS[name].value(result, experiment, config)


class Scorer:
    """A finished trial's value(s) for Optuna: one number, or one per objective with the
    reached-the-target constraint when the study minimizes several."""

    def __init__(self, experiment: Experiment, task: Task) -> None:
        self.experiment = experiment
        self.task = task
        self.kinds = {name: OBJECTIVE_KINDS[name] for name in experiment.objective.names}

    def measure(self, result: TrialResult, config: TrialConfig) -> None:
        """Figures the objectives need beyond the training's own, taken outside the clocks."""
        for kind in self.kinds.values():
            kind.measure(result, self.task, config)

    def known(self, config: TrialConfig) -> dict[str, float]:
        """The objectives a configuration's value is known for before it trains (for capping on a front)."""
        values = {name: kind.known(self.task, config) for name, kind in self.kinds.items()}
        return {name: value for name, value in values.items() if value is not None}

    def values(self, trial: optuna.Trial, result: TrialResult, config: TrialConfig) -> list[float]:
        names = self.experiment.objective.names
        if len(names) > 1:
            write_reached_constraint(trial, result)
        return [value_of(name, result, self.experiment, config) for name in names]


def check_minimize(experiment: Experiment, device_type: str, device_index: int | None = None, task: Task | None = None) -> None:
    """Refuse an objective this machine or task cannot measure (exit 2, before any trial), as its
    entry says (energy without a readable counter, peak_memory off a GPU, model_size without a
    model builder), and a target metric the task does not measure."""
    machine = Machine(device_type, device_index, task)
    names = experiment.objective.names
    for name in (n for n in OBJECTIVE_KINDS if n in names):  # in the declarations' order, whatever the list's
        lacking = OBJECTIVE_KINDS[name].lacks(machine)
        if lacking is not None:
            raise ConfigError(experiment.source, "objective.minimize", *lacking)
    if task is not None:
        check_metric(experiment, task)


def check_metric(experiment: Experiment, task: Task) -> None:
    """Refuse a target metric the task does not measure, or one named against its direction (a
    training function of one's own reports whatever it measures: nothing to check before it runs)."""
    if task.train_fn is not None:
        return
    o = experiment.objective
    measured = task.metric_directions()
    if o.metric not in measured:
        allowed = f"a held-out metric task {task.name} measures: " + ", ".join(measured)
        raise ConfigError(experiment.source, "objective.metric", allowed, o.metric)
    if o.direction != measured[o.metric]:
        raise ConfigError(experiment.source, "objective.direction", f"{measured[o.metric]} for metric {o.metric}", o.direction)
