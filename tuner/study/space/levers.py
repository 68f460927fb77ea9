"""The efficiency-lever dimensions of a search space, narrowed to what the task's model can use.

``compile``, ``channels_last``, ``accumulate``, ``lr_scaling``, ``ramp_start`` and
``ramp_frac`` act in the built-in training loop (tuner/train/levers.py). A task that trains
with its own loop never runs that loop: they are removed for it, each with a printed reason.
``channels_last`` changes only 2-d convolutions: for a model without one, ``true`` is
removed, like a precision the hardware cannot run. ``compile: reduce-overhead`` replays CUDA
graphs: on any other device it is removed the same way.
"""

from __future__ import annotations

import torch

from tuner.study.space.inapplicable import without_dimensions
from tuner.study.space.space import SearchSpace
from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import build_model
from tuner.train.levers import CUDA_GRAPH_MODES, has_conv2d
from tuner.train.trial_config import LEVER_DIMENSIONS, TrialConfig

DEFAULTS = {name: getattr(TrialConfig(), name) for name in LEVER_DIMENSIONS}


def runnable_levers(space: SearchSpace, task: Task, source: str, device: torch.device | None = None) -> tuple[SearchSpace, list[str]]:
    """The space without the lever dimensions or values that cannot apply to this task on
    ``device`` (None: a CPU); one note per removal."""
    present = [name for name in LEVER_DIMENSIONS if name in space.dims]
    if not present:
        return space, []
    if task.train_fn is not None:
        reason = f"task {task.name} trains with its own loop: the built-in loop's levers do not reach it"
        return without_dimensions(space, present, DEFAULTS, reason)
    kind = device.type if device is not None else "cpu"
    notes: list[str] = []
    if kind != "cuda":
        why = f"CUDA graphs need a CUDA device; this study runs on {kind}"
        space, notes = space.without_values("compile", dict.fromkeys(CUDA_GRAPH_MODES, why), source)
    if "channels_last" in space.dims and not has_conv2d(build_model(task, TrialConfig())):
        why = f"the model of task {task.name} has no 2-d convolution, so the memory layout changes nothing"
        space, more = space.without_values("channels_last", {True: why}, source)
        notes += more
    return space, notes
