"""Task names: the built-ins, or a user's ``package.module:function`` returning a Task, or
a user's training function (one with a ``session`` parameter, tuner/train/session.py)."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import TRAIN_FN_ARGS, train_fn_hyperparameters

BUILTIN_TASKS: dict[str, str] = {
    "mnist1d-cnn": "tuner.tasks.mnist1d:cnn_task",
    "mnist1d-mlp": "tuner.tasks.mnist1d:mlp_task",
    "mnist1d-gru": "tuner.tasks.mnist1d:gru_task",
    "digits-mlp": "tuner.tasks.digits:digits_mlp_task",
    "synthetic": "tuner.tasks.synthetic:synthetic_task",
    "file-mlp": "tuner.tasks.files:file_mlp_task",
    "image-folder": "tuner.tasks.image_task:image_folder_task",
    "charlm": "tuner.tasks.charlm:charlm_task",
}

# Top-level task modules imported from an experiment's folder, by name (see import_task_module).
FOUND_IN_FOLDER: dict[str, Path] = {}


def task_factory(name: str, folder: Path | None = None) -> Callable[..., Task]:
    """The function that builds the named task; raises ValueError or the import's own error.

    ``folder`` (the experiment file's) is where a ``module:function`` that is nowhere on the
    import path is looked for next (see ``import_task_module``).
    """
    target = BUILTIN_TASKS.get(name, name)
    if ":" not in target:
        raise ValueError("not a built-in task, nor package.module:function")
    module_name, _, attr = target.partition(":")
    module = import_task_module(module_name, folder)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"{module_name} has no function {attr}")  # noqa: TRY004  # callers turn ValueError into the one-line error
    return factory


def import_task_module(module_name: str, folder: Path | None = None) -> Any:
    """Import a task's module; one that is nowhere on the import path but lies in ``folder`` is
    imported from there, and ``folder`` stays on the path (appended, so it shadows nothing), so
    that the study's other processes (workers, DataLoader workers, which inherit the path) and
    the experiment `tuner best` writes beside it find it too."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        top = module_name.split(".")[0]
        if err.name != top:  # the task's module imports something missing: its own error
            raise
        if folder is not None and ((folder / f"{top}.py").is_file() or (folder / top).is_dir()):
            sys.path.append(str(folder))
            FOUND_IN_FOLDER[top] = folder
            importlib.invalidate_caches()
            return importlib.import_module(module_name)
        where = " beside the experiment either" if folder is not None else ""  # short: an error line cuts a long value
        raise ModuleNotFoundError(f"No module named {top!r}{where}; set PYTHONPATH to its folder", name=top) from None


def folder_of(name: str) -> Path | None:
    """The experiment folder a ``module:function`` task was imported from (None: on the import path, or a built-in)."""
    return FOUND_IN_FOLDER.get(name.partition(":")[0].split(".")[0]) if name not in BUILTIN_TASKS else None


def check_task_name(name: str, folder: Path | None = None) -> None:
    """Raise when the named task cannot be found (the experiment's ``folder`` searched too)."""
    task_factory(name, folder)


def is_training_function(fn: Callable[..., Any]) -> bool:
    """A training function of one's own takes a ``session``; a task factory does not."""
    try:
        return "session" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def check_task_options(name: str, options: dict[str, Any]) -> None:
    """Raise TypeError when the task's function does not take these options."""
    factory = task_factory(name)
    if is_training_function(factory):
        # Options are fixed keyword arguments of the training function, passed on every call.
        reserved = [k for k in options if k in TRAIN_FN_ARGS]
        if reserved:
            raise TypeError(f"{reserved[0]!r} is passed by the tool, not an option")
        inspect.signature(factory).bind_partial(**options)
        return
    inspect.signature(factory).bind(**options)


def hyperparameters_at_load(name: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """The hyperparameters the named task takes, when known without building it: none for a
    built-in but those it declares as ``model_hyperparameters`` (charlm's depth and heads),
    a training function's keyword parameters; None for a task function, whose Task says once built."""
    if name in BUILTIN_TASKS:
        return dict(getattr(task_factory(name), "model_hyperparameters", {}))
    factory = task_factory(name)
    return train_fn_hyperparameters(factory, options) if is_training_function(factory) else None


def build_task(name: str, options: dict[str, Any] | None = None) -> Task:
    factory = task_factory(name)
    if is_training_function(factory):
        task = Task(name=name, train_fn=factory, spec=(name, dict(options or {})))
        return task
    task = factory(**(options or {}))
    if not isinstance(task, Task):
        raise TypeError(f"task {name} returned {type(task).__name__}, not tuner.Task")
    task.spec = (name, dict(options or {}))
    return task
