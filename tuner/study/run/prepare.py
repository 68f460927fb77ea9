"""Preparing a study: what it will search on this machine, resolved once and written nowhere.

``prepare`` resolves the device and the torch threads, builds the task, then narrows the
experiment's search space by the steps of ``NARROWING``, in that order. Each step takes the
space the one before it left and returns what it leaves, with one note per removal (`tuner
run` prints them before the study starts).

Nothing here writes to the study storage or the tracking store, so that a command can
prepare, check its stores (tuner/study/storage/preflight.py) and refuse bad input with
nothing written anywhere. A batch ceiling measured here travels in ``Prepared.to_keep`` and
is written when the study opens (tuner/study/run/runner.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from tuner.errors import ConfigError, first_line
from tuner.study.experiment.load import Experiment, resolve_threads
from tuner.study.run.batch_ceiling import bound_batch
from tuner.study.run.precision_speed import without_slow_precisions
from tuner.study.run.runnable import runnable_on
from tuner.study.scoring.values import check_minimize
from tuner.study.space.levers import runnable_levers
from tuner.study.space.pipeline import runnable_pipeline
from tuner.study.space.pretrained import attach_pretrained
from tuner.study.space.space import SearchSpace
from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import task_hyperparameters
from tuner.tasks.registry import build_task
from tuner.train.devices import configure_threads, resolve_device


@dataclass(frozen=True)
class Prepared:
    """What a run needs, resolved once: the device, the task, the space this machine can run.

    ``to_keep`` holds the measurements made while preparing (batch ceilings), as user
    attributes of the storage's ceilings study, for the run to write once its stores are checked.
    """

    device: torch.device
    task: Task
    space: SearchSpace
    notes: list[str]
    threads: int = 1
    to_keep: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Machine:
    """What a narrowing step reads: the experiment, the device it runs on, and its task."""

    experiment: Experiment
    device: torch.device
    task: Task

    @property
    def source(self) -> str:
        return self.experiment.source


@dataclass(frozen=True)
class Narrowed:
    """What one narrowing step leaves: the space, a note per removal, measurements to keep."""

    space: SearchSpace
    notes: list[str] = field(default_factory=list)
    to_keep: dict[str, Any] = field(default_factory=dict)


def on_hardware(space: SearchSpace, m: Machine) -> Narrowed:
    """Precisions the device cannot run, and process counts it lacks the devices for."""
    return Narrowed(*runnable_on(space, m.device, m.source))


def task_names(space: SearchSpace, m: Machine) -> Narrowed:
    """The space's own dimensions checked against, and typed by, the hyperparameters the task takes."""
    return Narrowed(space.for_task(task_hyperparameters(m.task), m.source))


def data_pipeline(space: SearchSpace, m: Machine) -> Narrowed:
    """A DataLoader's knobs: kept for Dataset tasks only (tuner/study/space/pipeline.py)."""
    return Narrowed(*runnable_pipeline(space, m.task, m.device, m.source))


def levers(space: SearchSpace, m: Machine) -> Narrowed:
    """The built-in loop's efficiency levers, where they reach the model (tuner/study/space/levers.py)."""
    return Narrowed(*runnable_levers(space, m.task, m.source, m.device))


def precision_speed(space: SearchSpace, m: Machine) -> Narrowed:
    """Reduced precisions whose steps are slower than fp32's on this CPU (tuner/study/run/precision_speed.py)."""
    return Narrowed(*without_slow_precisions(m.experiment, m.task, space, m.device))


def batch_ceiling(space: SearchSpace, m: Machine) -> Narrowed:
    """Batch sizes above what one forward pass can take here (tuner/study/run/batch_ceiling.py)."""
    return Narrowed(*bound_batch(m.experiment, m.task, space, m.device))


def pretrained_fits(space: SearchSpace, m: Machine) -> Narrowed:
    """Refuses an ``init_from`` checkpoint that does not fit every width the space can sample."""
    if m.experiment.init_from is not None:
        attach_pretrained(m.source, m.experiment.init_from, m.task, space)
    return Narrowed(space)


# The order matters: the ceiling probes the widest model left, the pretrained check every width left.
NARROWING: tuple[Callable[[SearchSpace, Machine], Narrowed], ...] = (
    on_hardware,
    task_names,
    data_pipeline,
    levers,
    precision_speed,
    batch_ceiling,
    pretrained_fits,
)


def prepare(experiment: Experiment) -> Prepared:
    """The device, threads, task and narrowed space of ``experiment`` on this machine; writes nothing.

    Bad input (a device this machine lacks, a task that does not build, an objective it
    cannot measure, a space with nothing left) is a ConfigError.
    """
    try:
        device = resolve_device(experiment.trainer.device)
    except (ValueError, RuntimeError) as err:
        raise ConfigError(
            experiment.source, "trainer.device", "a device this machine has", f"{experiment.trainer.device} ({err})"
        ) from None
    threads = resolve_threads(experiment.trainer)
    configure_threads(threads)
    check_cpu_clock(experiment, device, threads)
    task = build(experiment)
    check_minimize(experiment, device.type, device.index, task)
    machine = Machine(experiment, device, task)
    space, notes, to_keep = experiment.search_space, [], {}
    for step in NARROWING:
        narrowed = step(space, machine)
        space, notes, to_keep = narrowed.space, notes + narrowed.notes, {**to_keep, **narrowed.to_keep}
    return Prepared(device, task, space, notes, threads, to_keep)


def build(experiment: Experiment) -> Task:
    """The experiment's task; a user's task can raise anything, and that is one line, exit 2."""
    try:
        return build_task(experiment.task, experiment.task_options)
    except Exception as err:  # noqa: BLE001 -- a user's task can raise anything
        first = first_line(err, type(err).__name__)
        raise ConfigError(experiment.source, "task", "a task that builds", f"{experiment.task} ({type(err).__name__}: {first})") from None


def check_cpu_clock(experiment: Experiment, device: torch.device, threads: int) -> None:
    """The cpu clock counts the training thread's CPU time: the time to target only where that thread does all the work."""
    if experiment.objective.clock == "cpu" and (device.type != "cpu" or threads != 1):
        raise ConfigError(
            experiment.source,
            "objective.clock",
            "cpu only on a CPU device with trainer.threads: 1 (else robust, train or wall)",
            f"cpu on {device.type} with {threads} threads",
        )
