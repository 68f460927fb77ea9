"""The size of a configuration's model: the bytes of its weights, for ``minimize: model_size``.

The model is built once more from the task's builder at the trial's width and task
hyperparameters, outside every clock, and its parameters and buffers are counted at their
element size. The trained weights have the same shapes and dtypes (mixed precision keeps
float32 weights), so the figure is that of the weights a trained model saves, and it is
the same on any machine.
"""

from __future__ import annotations

import json

from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import build_model
from tuner.train.trial_config import TrialConfig


class ModelSizes:
    """Model bytes per (width, task hyperparameters): each shape is built once per process."""

    def __init__(self) -> None:
        self._bytes: dict[str, int] = {}

    def of(self, task: Task, config: TrialConfig) -> int:
        key = json.dumps([config.width, config.hyper], sort_keys=True, default=str)
        if key not in self._bytes:
            self._bytes[key] = model_bytes(task, config)
        return self._bytes[key]


def model_bytes(task: Task, config: TrialConfig) -> int:
    """Bytes of the model's parameters and buffers as built for ``config``."""
    model = build_model(task, config)
    tensors = [*model.parameters(), *model.buffers()]
    return int(sum(t.numel() * t.element_size() for t in tensors))
