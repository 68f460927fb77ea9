"""What a study minimizes on the way to the target: time (the default), cost or energy, or
several objectives at once (a Pareto front, tuner/study/scoring/pareto.py).

``objective.minimize`` picks the trial's value. Time is ``objective_value``'s seconds
(tuner/study/scoring/censoring.py). Cost is those seconds x the trial's devices x the price of a
device hour (device hours without a price). Energy is the joules measured over the timed
region (tuner/train/energy.py); a trial that missed the target is censored the way time
is: the energy it would have spent at its own rate up to the cap, times (1 + the gap to
the target). Energy is never estimated: a study that minimizes it needs a readable
counter (checked before the study starts, ``check_minimize``).

Beside another objective, in a list, two more: ``model_size`` (bytes of the model's
weights, tuner/study/scoring/model_size.py; the same on every machine) and ``peak_memory`` (the
trial's peak device memory in MiB; a GPU only: on a CPU only the process's peak resident
size is known, which no later trial can lower). Those two are not censored: in a
multi-objective study a trial that missed the target is infeasible (an Optuna
constraint, tuner/study/record.py), so it never sits on the front, whatever its size.
"""

from __future__ import annotations

import optuna

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.record import write_reached_constraint
from tuner.study.scoring.censoring import miss_value, objective_value
from tuner.study.scoring.model_size import ModelSizes
from tuner.tasks.base import Task
from tuner.train.energy import energy_meter
from tuner.train.result import TrialResult
from tuner.train.trial_config import TrialConfig


def study_value(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    """The trial's value for a single-objective study to minimize (lower is better)."""
    return value_of(experiment.objective.names[0], result, experiment, config)


def value_of(name: str, result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    """The trial's value for one objective (lower is better)."""
    objective = experiment.objective
    seconds = objective_value(result, objective)
    if name == "cost":
        cost = experiment.cost
        price = cost.price(seconds, config.devices)
        return price if price is not None else cost.device_hours(seconds, config.devices)
    if name == "energy":
        if result.reached and result.energy_j_to_target is not None:
            return result.energy_j_to_target
        if result.energy_j is None or result.train_s <= 0:
            return float("inf")  # a counter that vanished mid-trial: nothing measured to rank it by
        rate = result.energy_j / result.train_s
        return rate * miss_value(result.goal, result.best_metric, objective.cap_s)  # the energy of a miss's censored time
    if name == "model_size":
        return float(result.model_bytes) if result.model_bytes is not None else float("inf")
    if name == "peak_memory":
        return result.peak_memory_mb if result.peak_memory_mb is not None else float("inf")
    return seconds


class Scorer:
    """A finished trial's value(s) for Optuna: one number, or one per objective with the
    reached-the-target constraint when the study minimizes several."""

    def __init__(self, experiment: Experiment, task: Task) -> None:
        self.experiment = experiment
        self.task = task
        self.sizes = ModelSizes()

    def measure(self, result: TrialResult, config: TrialConfig) -> None:
        """Figures the objectives need beyond the training's own, taken outside the clocks."""
        if "model_size" in self.experiment.objective.names and self.task.train_fn is None:
            result.model_bytes = self.sizes.of(self.task, config)

    def known(self, config: TrialConfig) -> dict[str, float]:
        """The objectives a configuration's value is known for before it trains (for capping on a front)."""
        if "model_size" in self.experiment.objective.names and self.task.train_fn is None:
            return {"model_size": float(self.sizes.of(self.task, config))}
        return {}

    def values(self, trial: optuna.Trial, result: TrialResult, config: TrialConfig) -> list[float]:
        names = self.experiment.objective.names
        if len(names) > 1:
            write_reached_constraint(trial, result)
        return [value_of(name, result, self.experiment, config) for name in names]


def check_minimize(experiment: Experiment, device_type: str, device_index: int | None = None, task: Task | None = None) -> None:
    """Refuse an objective this machine or task cannot measure (exit 2, before any trial):
    energy without a readable counter, peak_memory off a GPU, model_size without a model builder,
    a target metric the task does not measure."""
    names = experiment.objective.names
    if "energy" in names:
        meter = energy_meter(device_type, device_index)
        if not meter.available:
            raise ConfigError(
                experiment.source,
                "objective.minimize",
                "objectives this machine measures (energy needs a readable NVML or RAPL counter)",
                f"energy ({meter.source})",
            )
    if "peak_memory" in names and device_type != "cuda":
        raise ConfigError(
            experiment.source,
            "objective.minimize",
            "peak_memory on a GPU only (a CPU knows only the process's peak resident size)",
            f"peak_memory on {device_type}",
        )
    if "model_size" in names and task is not None and task.train_fn is not None:
        raise ConfigError(
            experiment.source,
            "objective.minimize",
            "model_size with a task that builds its model (build_model)",
            f"model_size with the training function of task {task.name}",
        )
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
