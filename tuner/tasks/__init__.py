"""Built-in tasks and the Task contract."""

from tuner.tasks.base import Task, accuracy, scaled
from tuner.tasks.registry import BUILTIN_TASKS, build_task

__all__ = ["BUILTIN_TASKS", "Task", "accuracy", "build_task", "scaled"]
