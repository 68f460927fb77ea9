"""Task names: the built-ins, or a user's ``package.module:function`` returning a Task."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

from tuner.tasks.base import Task

BUILTIN_TASKS: dict[str, str] = {
    "mnist1d-cnn": "tuner.tasks.mnist1d:cnn_task",
    "mnist1d-mlp": "tuner.tasks.mnist1d:mlp_task",
    "mnist1d-gru": "tuner.tasks.mnist1d:gru_task",
    "digits-mlp": "tuner.tasks.digits:digits_mlp_task",
    "synthetic": "tuner.tasks.synthetic:synthetic_task",
    "file-mlp": "tuner.tasks.files:file_mlp_task",
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


def check_task_options(name: str, options: dict[str, Any]) -> None:
    """Raise TypeError when the task's function does not take these options."""
    inspect.signature(task_factory(name)).bind(**options)


def build_task(name: str, options: dict[str, Any] | None = None) -> Task:
    task = task_factory(name)(**(options or {}))
    if not isinstance(task, Task):
        raise TypeError(f"task {name} returned {type(task).__name__}, not tuner.Task")
    task.spec = (name, dict(options or {}))
    return task
