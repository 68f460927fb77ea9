"""The data-pipeline dimensions of a search space, narrowed to what the task and device can use.

``num_workers``, ``pin_memory``, ``persistent_workers``, ``prefetch_factor`` and ``cache``
shape the DataLoader of a Dataset task (tuner/train/batches.py). A tensor task has no
loader: they are removed before the study starts, each with a printed reason, like a
precision the hardware cannot run. ``pin_memory: true`` only speeds copies to a GPU, so on
a CPU that choice is removed too.
"""

from __future__ import annotations

from typing import Any

import torch

from tuner.study.space.inapplicable import without_dimensions
from tuner.study.space.space import SearchSpace
from tuner.tasks.base import Task
from tuner.train.trial_config import PIPELINE_DIMENSIONS, TrialConfig

DEFAULTS = {name: getattr(TrialConfig(), name) for name in PIPELINE_DIMENSIONS}


def runnable_pipeline(space: SearchSpace, task: Task, device: torch.device, source: str) -> tuple[SearchSpace, list[str]]:
    """The space without the pipeline dimensions or values that cannot apply here; one note per removal."""
    present = [name for name in PIPELINE_DIMENSIONS if name in space.dims]
    if not present:
        return space, []
    if task.train_data is None:
        reason = f"task {task.name} gives tensors, not Datasets: there is no DataLoader to tune"
        return without_dimensions(space, present, DEFAULTS, reason)
    if device.type != "cuda":
        values: dict[Any, str] = {True: f"pinned memory only speeds copies to a GPU, and the device is {device.type}"}
        return space.without_values("pin_memory", values, source)
    return space, []
