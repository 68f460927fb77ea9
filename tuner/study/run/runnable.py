"""What of an experiment's search space this machine can run: precisions its device
supports and data-parallel process counts it has the devices for."""

from __future__ import annotations

from typing import Any

import torch

from tuner.study.experiment.load import Experiment
from tuner.study.space.space import Choice, Fixed, SearchSpace
from tuner.train.devices import available
from tuner.train.precision import unsupported_precisions


def runnable_space(experiment: Experiment, device: torch.device) -> tuple[SearchSpace, list[str]]:
    """The experiment's space without the choices this hardware cannot run, and why."""
    return runnable_on(experiment.search_space, device, experiment.source)


def runnable_on(space: SearchSpace, device: torch.device, source: str) -> tuple[SearchSpace, list[str]]:
    """``space`` without the precisions ``device`` cannot run and the process counts it lacks devices for."""
    space, notes = space.without_values("precision", unsupported_precisions(device), source)
    space, more = space.without_values("devices", unrunnable_devices(space, device), source)
    return space, notes + more


def unrunnable_devices(space: SearchSpace, device: torch.device) -> dict[Any, str]:
    """Values of the ``devices`` dimension this machine cannot run, with the reason."""
    spec = space.dims.get("devices")
    values = spec.choices if isinstance(spec, Choice) else (spec.value,) if isinstance(spec, Fixed) else ()
    have = available(device)
    kind = "GPU" if device.type == "cuda" else "CPU core"
    return {v: f"a trial on {v} processes needs {v} {kind}s, this machine has {have}" for v in values if isinstance(v, int) and v > have}


def max_devices(space: SearchSpace) -> int:
    """The most processes one trial of this space may use (1 without a ``devices`` dimension)."""
    spec = space.dims.get("devices")
    if isinstance(spec, Choice):
        return max(spec.choices)
    if isinstance(spec, Fixed):
        return int(spec.value)
    return int(spec.high) if spec is not None else 1
