"""Trained weights kept and reused: the file `tuner train --save` writes, and pretrained starts.

A checkpoint file holds one dictionary::

    {"state_dict": ..., "config": TrialConfig.as_dict(), "task": name, "task_options": {...},
     "width": float, "metric": held-out metric of these weights, "samples": trained on,
     "reached": whether the target was crossed}

Because a trial stops at the first evaluation that crosses the target, the weights at the end
of a reached trial *are* the weights at the first crossing: one file serves both.

A pretrained start (``init_from``) names a file written by ``--save``, a bare state-dict file
(``torch.save(model.state_dict(), path)``), or ``package.module:function`` returning a state
dict. The body/head split used by fine-tuning is: the head is the last ``nn.Linear`` of the
model, the body everything else.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from tuner.train.result import TrialResult
    from tuner.train.trial_config import TrialConfig

CHECKPOINT_KEYS = ("state_dict", "config", "task", "task_options", "width", "metric", "samples")


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or that does not fit the model (one line)."""


def save_checkpoint(path: str | Path, state_dict: Mapping[str, torch.Tensor], **meta: Any) -> Path:
    """Write the weights and what they came from; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": {k: v.detach().cpu() for k, v in state_dict.items()}, **meta}, path)
    return path


def checkpoint_meta(config: TrialConfig, task: str, task_options: Mapping[str, Any], result: TrialResult) -> dict[str, Any]:
    """What a file says beside the weights: the configuration, the task, and what the weights scored."""
    return {
        "config": config.as_dict(),
        "task": task,
        "task_options": dict(task_options),
        "width": config.width,
        "metric": result.final_metric,
        "samples": result.samples,
        "reached": result.reached,
    }


def state_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's weights copied to the CPU (a copy even there: the model may train on)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The dictionary a `--save` file holds (a bare state dict comes back as {"state_dict": it})."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError) as err:
        raise CheckpointError(f"cannot read {path} ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})") from None
    if isinstance(data, Mapping) and "state_dict" in data:
        return dict(data)
    if isinstance(data, Mapping) and all(isinstance(v, torch.Tensor) for v in data.values()):
        return {"state_dict": dict(data)}
    raise CheckpointError(f"{path} holds a {type(data).__name__}, not a state dict or a file written by tuner train --save")


def load_state(spec: str, base_dir: Path | None = None) -> dict[str, torch.Tensor]:
    """The state dict ``spec`` names: a file (relative to ``base_dir``, then the working
    directory) or ``package.module:function`` called without arguments."""
    candidates = [Path(spec)] if Path(spec).is_absolute() else [p for p in ((base_dir or Path.cwd()) / spec, Path.cwd() / spec)]
    for path in candidates:
        if path.is_file():
            return read_checkpoint(path)["state_dict"]
    if ":" in spec and not spec.endswith((".pt", ".pth")):
        module, _, name = spec.partition(":")
        try:
            fn = getattr(importlib.import_module(module), name)
            state = fn()
        except Exception as err:  # noqa: BLE001 -- user code: any failure is one line
            raise CheckpointError(f"{spec} did not give a state dict ({type(err).__name__}: {err})") from None
        if not isinstance(state, Mapping):
            raise CheckpointError(f"{spec} returned a {type(state).__name__}, not a state dict")
        return dict(state)
    raise CheckpointError(f"no checkpoint file {spec} (nor a package.module:function)")


def first_mismatch(model: nn.Module, state: Mapping[str, torch.Tensor]) -> tuple[str, str, str] | None:
    """(key, the model's shape, the checkpoint's shape) of the first difference, or None.

    A key missing on one side shows as "absent" on that side.
    """
    own = model.state_dict()
    for key, tensor in own.items():
        if key not in state:
            return key, _shape(tensor), "absent"
        if tuple(state[key].shape) != tuple(tensor.shape):
            return key, _shape(tensor), _shape(state[key])
    for key in state:
        if key not in own:
            return key, "absent", _shape(state[key])
    return None


def _shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(d) for d in t.shape) + "]"


def head(model: nn.Module) -> nn.Module | None:
    """The model's head: its last ``nn.Linear`` (None when it has none)."""
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    return linears[-1] if linears else None


def parameter_groups(model: nn.Module, head_lr_mult: float) -> list[dict[str, Any]]:
    """Body and head as two optimizer groups; ``lr_mult`` scales each group's learning rate."""
    last = head(model)
    head_ids = {id(p) for p in last.parameters()} if last is not None else set()
    body = [p for p in model.parameters() if id(p) not in head_ids]
    head_params = [p for p in model.parameters() if id(p) in head_ids]
    return [g for g in ({"params": body, "lr_mult": 1.0}, {"params": head_params, "lr_mult": head_lr_mult}) if g["params"]]


def set_body_frozen(model: nn.Module, frozen: bool) -> None:
    """Freeze (or thaw) every parameter outside the head: no gradients, so no backward through them."""
    last = head(model)
    head_ids = {id(p) for p in last.parameters()} if last is not None else set()
    for p in model.parameters():
        if id(p) not in head_ids:
            p.requires_grad_(not frozen)
