"""The efficiency-lever dimensions of a search space, narrowed to what the task's model can use.

``compile``, ``channels_last``, ``accumulate``, ``lr_scaling``, ``ramp_start`` and
``ramp_frac`` act in the built-in training loop (tuner/train/levers.py). A task that trains
with its own loop reaches ``compile``, ``accumulate`` and ``lr_scaling`` through its session's
calls (tuner/train/session_levers.py); the others are removed for it, each with a printed reason.
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
from tuner.train.trial_config import LEVER_DIMENSIONS, SESSION_LEVERS, TrialConfig

DEFAULTS = {name: getattr(TrialConfig(), name) for name in LEVER_DIMENSIONS}


def own_loop_levers(space: SearchSpace, task_name: str) -> tuple[SearchSpace, list[str]]:
    """A training function's space without the levers its session cannot apply: compile,
    accumulate and lr_scaling reach its loop through the session's calls
    (tuner/train/session_levers.py); the memory layout and a growing batch do not."""
    loop_only = [name for name in LEVER_DIMENSIONS if name in space.dims and name not in SESSION_LEVERS]
    reason = f"task {task_name} trains with its own loop: of the built-in loop's levers only {', '.join(SESSION_LEVERS)} reach it"
    return without_dimensions(space, loop_only, DEFAULTS, reason + " (through the session's calls)")


def runnable_levers(space: SearchSpace, task: Task, source: str, device: torch.device | None = None) -> tuple[SearchSpace, list[str]]:
    """The space without the lever dimensions or values that cannot apply to this task on
    ``device`` (None: a CPU); one note per removal."""
    present = [name for name in LEVER_DIMENSIONS if name in space.dims]
    if not present:
        return space, []
    notes: list[str] = []
    if task.train_fn is not None:
        space, notes = own_loop_levers(space, task.name)
    kind = device.type if device is not None else "cpu"
    if kind != "cuda":
        why = f"CUDA graphs need a CUDA device; this study runs on {kind}"
        space, more = space.without_values("compile", dict.fromkeys(CUDA_GRAPH_MODES, why), source)
        notes += more
    if "channels_last" in space.dims and not has_conv2d(build_model(task, TrialConfig())):
        why = f"the model of task {task.name} has no 2-d convolution, so the memory layout changes nothing"
        space, more = space.without_values("channels_last", {True: why}, source)
        notes += more
    return space, notes
