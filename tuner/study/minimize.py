"""What a study minimizes on the way to the target: time (the default), cost or energy.

``objective.minimize`` picks the trial's value. Time is ``objective_value``'s seconds
(tuner/study/objective.py). Cost is those seconds x the trial's devices x the price of a
device hour (device hours without a price). Energy is the joules measured over the timed
region (tuner/train/energy.py); a trial that missed the target is censored the way time
is: the energy it would have spent at its own rate up to the cap, times (1 + the gap to
the target). Energy is never estimated: a study that minimizes it needs a readable
counter (checked before the study starts, ``check_minimize``).
"""

from __future__ import annotations

from tuner.errors import ConfigError
from tuner.study.cost import Cost
from tuner.study.experiment import Experiment
from tuner.study.objective import objective_value
from tuner.train.energy import energy_meter
from tuner.train.result import TrialResult
from tuner.train.trial_config import TrialConfig

UNITS = {"time": "s", "energy": "J"}


def unit(minimize: str, cost: Cost) -> str:
    return UNITS.get(minimize, cost.currency if cost.per_device_hour is not None else "device h")


def study_value(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    """The trial's value for the study to minimize (lower is better)."""
    objective = experiment.objective
    seconds = objective_value(result, objective)
    if objective.minimize == "cost":
        cost = experiment.cost
        price = cost.price(seconds, config.devices)
        return price if price is not None else cost.device_hours(seconds, config.devices)
    if objective.minimize == "energy":
        if result.reached and result.energy_j_to_target is not None:
            return result.energy_j_to_target
        if result.energy_j is None or result.train_s <= 0:
            return float("inf")  # a counter that vanished mid-trial: nothing measured to rank it by
        rate = result.energy_j / result.train_s
        best = result.best_metric if result.best_metric is not None and result.best_metric == result.best_metric else 0.0
        return rate * objective.cap_s * (1.0 + max(0.0, result.target - best))
    return seconds


def check_minimize(experiment: Experiment, device_type: str, device_index: int | None = None) -> None:
    """Refuse ``minimize: energy`` on a machine whose energy cannot be measured (exit 2, before any trial)."""
    if experiment.objective.minimize != "energy":
        return
    meter = energy_meter(device_type, device_index)
    if not meter.available:
        raise ConfigError(experiment.source, "objective.minimize", "time or cost on this machine (energy needs a readable NVML or RAPL counter)", f"energy ({meter.source})")
