"""Every objective a study can minimize, declared once: its name, unit, words, and how a trial's value is had.

``OBJECTIVE_KINDS`` is the one list of names: ``objective.minimize`` accepts them when an experiment
file is loaded (tuner/study/run/experiment_file.py: one valued on the way to the target alone, any
two or more in a list), a trial's value is its entry's ``value`` (tuner/study/scoring/values.py,
which also refuses, before any trial, an objective this machine cannot measure), every view prints a
value in its ``unit`` and names it with ``to_target`` (tuner/study/scoring/units.py), the baseline's
and the nightly report's sentences say better and worse in its ``words``, the report's cost figures
read the seconds behind a value (tuner/report/data.py), and the documentation's table of objectives
is written from it (tuner/docs_reference.py). Adding an objective is its value function and an entry
here; a figure trials do not record yet also needs a field of ``TrialResult``
(tuner/train/result.py) and the tuner/train/ module that measures it.

Time is ``objective_value``'s seconds (tuner/study/scoring/censoring.py). Cost is those seconds x
the trial's devices x the price of a device hour (device hours without a price). Energy is the
joules measured over the timed region (tuner/train/energy.py); a trial that missed the target is
censored the way time is: the energy it would have spent at its own rate up to the cap, times
(1 + the gap to the target). Energy is never estimated: a study that minimizes it needs a
readable counter. Beside another objective, in a list, two more: ``model_size`` (bytes of the
model's weights, tuner/study/scoring/model_size.py; the same on every machine) and
``peak_memory`` (the trial's peak device memory in MiB; a GPU only: on a CPU only the process's
peak resident size is known, which no later trial can lower). Those two are not censored: in a
multi-objective study a trial that missed the target is infeasible (an Optuna constraint,
tuner/study/record.py), so it never sits on the front, whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuner.study.scoring.censoring import miss_value, objective_value
from tuner.study.scoring.model_size import ModelSizes
from tuner.train.energy import energy_meter

if TYPE_CHECKING:
    from tuner.study.experiment.cost import Cost
    from tuner.study.experiment.load import Experiment
    from tuner.tasks.base import Task
    from tuner.train.result import TrialResult
    from tuner.train.trial_config import TrialConfig


@dataclass(frozen=True)
class Machine:
    """Where a study is about to run, as an objective's check reads it: the device and the task."""

    device_type: str
    device_index: int | None = None
    task: Task | None = None


@dataclass(frozen=True)
class ObjectiveKind:
    """One objective: how it reads in every view, where it can be minimized, and a trial's value of it."""

    name: str
    summary: str  # a trial's value, in a few words (the documentation's table)
    unit: str | None  # None: the experiment's currency, device hours without a price (cost:)
    words: tuple[str, str]  # how better and worse read: "faster", "slower"
    value: Callable[[TrialResult, Experiment, TrialConfig], float]  # lower is better
    # Valued on the way to the target: it may be minimized alone. False: only beside one that is, in a list.
    to_target: bool = True
    measurable: str = "everywhere"  # where it can be measured, in words (the documentation's table)
    # What this machine or task lacks to measure it, as a refusal's (allowed, given); None where nothing.
    lacks: Callable[[Machine], tuple[str, str] | None] = lambda machine: None
    # Its value from the configuration alone, known before the trial trains; None where it is not.
    known: Callable[[Task, TrialConfig], float | None] = lambda task, config: None
    # Takes what ``value`` reads beyond the training's own figures onto the result, outside the clocks.
    measure: Callable[[TrialResult, Task, TrialConfig], None] = lambda result, task, config: None
    # The seconds on the objective's clock behind a value of a trial on that many devices (the
    # report's cost figures); None where the value is no time.
    seconds: Callable[[float, Cost, int], float | None] = lambda value, cost, devices: None


def _time(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    return objective_value(result, experiment.objective)


def _cost(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    seconds, cost = objective_value(result, experiment.objective), experiment.cost
    price = cost.price(seconds, config.devices)
    return price if price is not None else cost.device_hours(seconds, config.devices)


def _cost_seconds(value: float, cost: Cost, devices: int) -> float | None:
    hours = value / cost.per_device_hour if cost.per_device_hour is not None else value
    return hours * 3600.0 / devices


def _energy(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    if result.reached and result.energy_j_to_target is not None:
        return result.energy_j_to_target
    if result.energy_j is None or result.train_s <= 0:
        return float("inf")  # a counter that vanished mid-trial: nothing measured to rank it by
    rate = result.energy_j / result.train_s
    return rate * miss_value(result.goal, result.best_metric, experiment.objective.cap_s)  # the energy of a miss's censored time


def _no_energy_counter(machine: Machine) -> tuple[str, str] | None:
    meter = energy_meter(machine.device_type, machine.device_index)
    if meter.available:
        return None
    return "objectives this machine measures (energy needs a readable NVML or RAPL counter)", f"energy ({meter.source})"


def _peak_memory(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    return result.peak_memory_mb if result.peak_memory_mb is not None else float("inf")


def _no_gpu(machine: Machine) -> tuple[str, str] | None:
    if machine.device_type == "cuda":
        return None
    return "peak_memory on a GPU only (a CPU knows only the process's peak resident size)", f"peak_memory on {machine.device_type}"


SIZES = ModelSizes()  # each shape is built once per process


def _model_size(result: TrialResult, experiment: Experiment, config: TrialConfig) -> float:
    return float(result.model_bytes) if result.model_bytes is not None else float("inf")


def _no_model_builder(machine: Machine) -> tuple[str, str] | None:
    task = machine.task
    if task is None or task.train_fn is None:
        return None
    return "model_size with a task that builds its model (build_model)", f"model_size with the training function of task {task.name}"


def _model_bytes(task: Task, config: TrialConfig) -> float | None:
    return float(SIZES.of(task, config)) if task.train_fn is None else None


def _measure_model_bytes(result: TrialResult, task: Task, config: TrialConfig) -> None:
    if task.train_fn is None:
        result.model_bytes = SIZES.of(task, config)


OBJECTIVE_KINDS: dict[str, ObjectiveKind] = {
    kind.name: kind
    for kind in (
        ObjectiveKind(
            "time",
            "seconds to the target on the objective's clock; a miss scores `cap_s x (1 + gap)`",
            "s",
            ("faster", "slower"),
            _time,
            seconds=lambda value, cost, devices: value,
        ),
        ObjectiveKind(
            "cost",
            "time's seconds x the trial's devices x `cost.per_device_hour`; device hours without a price",
            None,
            ("cheaper", "dearer"),
            _cost,
            seconds=_cost_seconds,
        ),
        ObjectiveKind(
            "energy",
            "joules over the timed region to the target; a miss: its rate x time's censored seconds",
            "J",
            ("more frugal", "more energy-hungry"),
            _energy,
            measurable="a readable NVML (GPU) or RAPL (CPU) counter",
            lacks=_no_energy_counter,
        ),
        ObjectiveKind(
            "peak_memory",
            "the trial's peak device memory",
            "MiB",
            ("leaner", "hungrier for memory"),
            _peak_memory,
            to_target=False,
            measurable="a GPU only: a CPU knows only the process's peak resident size",
            lacks=_no_gpu,
        ),
        ObjectiveKind(
            "model_size",
            "bytes of the model's weights (parameters and buffers) at the trial's width and task hyperparameters",
            "B",
            ("smaller", "larger"),
            _model_size,
            to_target=False,
            measurable="a task that builds its model; not a training function of one's own",
            lacks=_no_model_builder,
            known=_model_bytes,
            measure=_measure_model_bytes,
        ),
    )
}
TIME = OBJECTIVE_KINDS["time"]  # what a study minimized before the choice existed
ALONE = tuple(name for name, kind in OBJECTIVE_KINDS.items() if kind.to_target)  # what objective.minimize takes as one name


def to_target(name: str) -> bool:
    """Whether the objective is valued on the way to the target (a name of no objective is not)."""
    kind = OBJECTIVE_KINDS.get(name)
    return kind is not None and kind.to_target


def words(name: str) -> tuple[str, str]:
    """How better and worse read for what a study minimizes: ``("cheaper", "dearer")`` (time's for a name of none)."""
    return OBJECTIVE_KINDS.get(name, TIME).words


def seconds_behind(minimize: str | list[str], value: float, cost: Cost, devices: int) -> float | None:
    """The seconds on the objective's clock behind a value of what a study minimizes: a time as it is,
    a cost through its price (device hours without one); None for energy, which is no time, or several objectives."""
    kind = OBJECTIVE_KINDS.get(minimize) if isinstance(minimize, str) else None
    return kind.seconds(value, cost, devices) if kind is not None else None
