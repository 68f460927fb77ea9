"""Task names: the built-ins, or a user's ``package.module:function`` returning a Task, or
a user's training function (one with a ``session`` parameter, tuner/train/session.py)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
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
}


def task_factory(name: str) -> Callable[..., Task]:
    """The function that builds the named task; raises ValueError or the import's own error."""
    target = BUILTIN_TASKS.get(name, name)
    if ":" not in target:
        raise ValueError("not a built-in task, nor package.module:function")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"{module_name} has no function {attr}")
    return factory


def check_task_name(name: str) -> None:
    task_factory(name)


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
    built-in (their model builders take only the width), a training function's keyword
    parameters; None for a task function, whose Task says once built."""
    if name in BUILTIN_TASKS:
        return {}
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
