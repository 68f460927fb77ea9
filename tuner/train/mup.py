"""Width transfer: a parametrization under which a learning rate found at one width holds at another.

The Maximal Update Parametrization (muP) of Tensor Programs V (Yang et al. 2022, "Tuning
Large Neural Networks via Zero-Shot Hyperparameter Transfer", Table 3, Adam column), taken
relative to a base width (``mup_base``, 1.0 unless set), so that a model at the base width
trains exactly as under the standard parametrization and only other widths change. A proxy
study sets the base to the proxy's width: the search then trains under the standard
parametrization, and muP only scales up from it, the direction in which it held on charlm
(docs/benchmarks.md, "Width transfer"):

- **hidden weights** (fan-in and fan-out both grow with width): Adam's rate divided by the
  fan-in's ratio to the base. PyTorch's default initialisation (variance 1/fan-in) is already
  muP's for them.
- **input weights and vectors** (embeddings, a first layer whose fan-in is the data's,
  biases, norms): rate and initialisation unchanged.
- **the output layer** (fan-in grows, fan-out fixed): its input multiplied by 1/ratio, the
  readout multiplier of the ``mup`` package's ``MuReadout`` (a tied head included:
  ``MuSharedReadout``); rate unchanged.
- **Muon** here steps its hidden weights at AdamW's RMS (``adjust_lr_fn="match_rms_adamw"``,
  tuner/train/muon.py), so their entries move as Adam's do and take the same 1/ratio; the rest
  it hands to AdamW, parametrized as above.

Which dimensions grow with width is read off the model and the same model built at the base
width, as ``mup.set_base_shapes`` does; the base is built on the meta device, so it costs no memory.
Not applied: muP's 1/d attention scaling (a model's attention is its own code; the
charlm benchmark measures the transfer without it) and any change to weight decay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

BASE_WIDTH = 1.0
PARAMETRIZATIONS = ("standard", "mup")


@dataclass(frozen=True)
class WidthScaling:
    """What muP changes in one model: each parameter's learning-rate multiplier (by id) and each
    output layer's multiplier (by module)."""

    lr_mult: dict[int, float]
    readouts: list[tuple[nn.Module, float]]

    def groups(self, groups: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """``groups`` split so that each holds parameters of one multiplier; a group's own
        ``lr_mult`` (a pretrained start's head rate) is multiplied by it."""
        out: list[dict[str, Any]] = []
        for group in groups:
            by_mult: dict[float, list[torch.nn.Parameter]] = {}
            for p in group["params"]:
                by_mult.setdefault(self.lr_mult.get(id(p), 1.0), []).append(p)
            for mult, params in by_mult.items():
                out.append(dict(group, params=params, lr_mult=group.get("lr_mult", 1.0) * mult))
        return out

    def scale_outputs(self) -> list[torch.utils.hooks.RemovableHandle]:
        """Multiply each output layer's input by its multiplier, as ``MuReadout`` does (the bias
        unscaled), through a forward pre-hook; the handles remove them."""
        return [module.register_forward_pre_hook(_times(mult)) for module, mult in self.readouts if mult != 1.0]


def _times(mult: float) -> Callable[[nn.Module, tuple[Any, ...]], tuple[Any, ...]]:
    def hook(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return (args[0] * mult, *args[1:])

    return hook


def width_scaling(model: nn.Module, base: nn.Module) -> WidthScaling:
    """muP's multipliers for ``model`` against ``base``, the same model at the base width.

    Parameters are matched by name; one whose shape is the base's does not scale with width.
    A parameter of two or more dimensions whose first (fan-out) and later (fan-in) dimensions
    both grow is hidden. An ``nn.Linear`` whose input grows and output does not is an output layer.
    """
    base_shapes = {name: tuple(p.shape) for name, p in base.named_parameters(remove_duplicate=False)}
    lr_mult: dict[int, float] = {}
    for name, p in model.named_parameters():
        shape = base_shapes.get(name)
        if shape is None or len(shape) != p.ndim:
            raise ValueError(f"muP: parameter {name!r} has no counterpart of the same rank in the model at the base width")
        if p.ndim >= 2 and p.shape[0] != shape[0] and p.shape[1:] != shape[1:]:
            lr_mult[id(p)] = _fan_in(shape) / _fan_in(tuple(p.shape))
    base_modules = dict(base.named_modules())
    readouts = []
    for name, module in model.named_modules():
        counterpart = base_modules.get(name)
        if not (isinstance(module, nn.Linear) and isinstance(counterpart, nn.Linear)):
            continue
        if module.out_features == counterpart.out_features and module.in_features != counterpart.in_features:
            readouts.append((module, counterpart.in_features / module.in_features))
    return WidthScaling(lr_mult, readouts)


def _fan_in(shape: tuple[int, ...]) -> int:
    fan_in = 1
    for d in shape[1:]:
        fan_in *= d
    return fan_in


def base_model(build: Callable[[float], nn.Module], base: float = BASE_WIDTH) -> nn.Module:
    """The model ``build`` makes at the base width, on the meta device: shapes only, no memory."""
    with torch.device("meta"):
        return build(base)


def parametrize(model: nn.Module, build: Callable[[float], nn.Module], width: float, base: float = BASE_WIDTH) -> WidthScaling:
    """Apply muP to ``model`` (built by ``build`` at ``width``): its output layers scaled in
    place; returns the scaling, whose ``groups`` the optimizer is built from. At the base width
    nothing changes."""
    if width == base:
        return WidthScaling({}, [])
    scaling = width_scaling(model, base_model(build, base))
    scaling.scale_outputs()
    return scaling
