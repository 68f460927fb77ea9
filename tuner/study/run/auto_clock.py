"""``objective.clock: auto`` (the default): the clock a study minimises, named once and stored with it.

``resolve_clock`` is the one place ``auto`` becomes a clock. A new study takes the clock
that holds for this machine's trials (tuner/train/clocks.py: ``auto_clock``: ``cpu`` on a CPU
with one torch thread and one process per trial, ``robust`` elsewhere) and stores it in its
objective definition, where a resume compares it as it compares the metric. A resumed
study keeps the clock it stored, so that its trials compare like with like: a study stored
before ``auto`` existed, with ``robust`` or with no clock (which meant ``robust``), keeps
``robust``. A clock the experiment names is used as named, and a resume with another one
than the study's is refused in one line (tuner/study/run/opening.py).

Outside a study (`tuner train`, `tuner compress`, one trial from the Python API) there is
nothing stored, and the machine decides.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import optuna

from tuner.study.experiment.load import Experiment, resolve_threads
from tuner.study.run.runnable import max_devices
from tuner.study.storage.open import open_storage, sqlite_path
from tuner.study.study_record import stored_definition
from tuner.tasks.registry import BUILTIN_TASKS, folder_of, is_training_function, task_factory
from tuner.train.clocks import AUTO, CLOCK_BEFORE_AUTO, auto_clock
from tuner.train.devices import resolve_device, worker_threads


def machine_clock(experiment: Experiment, workers: int = 1) -> str:
    """The clock ``auto`` names for a new study of ``experiment`` on this machine, run by ``workers``
    processes (`tuner run --workers N` gives each a share of the cores when ``trainer.threads`` is unset)."""
    try:
        device = resolve_device(experiment.trainer.device).type
    except (ValueError, RuntimeError):  # a device this machine lacks: refused where the run prepares
        device = "cuda"
    threads = max(worker_threads(experiment.trainer.threads, workers)) if workers > 1 else resolve_threads(experiment.trainer)
    processes = max_devices(experiment.search_space)
    return auto_clock(device, threads, processes, own_loop=own_loop(experiment.task))


def own_loop(task: str) -> bool:
    """Whether the task is a training function of one's own (tuner/tasks/registry.py), known without building it."""
    if task in BUILTIN_TASKS:
        return False
    try:
        return is_training_function(task_factory(task, folder_of(task)))
    except Exception:  # noqa: BLE001 -- a task that does not import is refused where the run prepares; robust meanwhile
        return True


def resolve_clock(experiment: Experiment, stored: dict[str, Any] | None = None, workers: int = 1) -> Experiment:
    """The experiment with its clock named: ``auto`` becomes the clock the stored study (its
    objective definition, ``stored``) minimises, or, for a new study, this machine's for ``workers`` processes."""
    if experiment.objective.clock != AUTO:
        return experiment
    clock = stored.get("clock", CLOCK_BEFORE_AUTO) if stored is not None else machine_clock(experiment, workers)
    return dataclasses.replace(experiment, objective=dataclasses.replace(experiment.objective, clock=clock))


def existing_definition(experiment: Experiment) -> dict[str, Any] | None:
    """The objective definition of the experiment's study where it exists already, read without
    writing (a SQLite file that is not there holds no study); None for a new study."""
    path = sqlite_path(experiment.storage)
    if path is not None and not path.exists():
        return None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        # Opened as a worker opens it: workers started together on an empty server database race to create its tables.
        study = optuna.load_study(study_name=experiment.name, storage=open_storage(experiment.storage, None, experiment.source))
    except KeyError:  # no study of that name
        return None
    return stored_definition(study)
