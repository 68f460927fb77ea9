"""The Task contract: data, a model builder that takes a width, and a metric."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Fraction of correct argmax predictions, as a 0-d tensor (no host sync)."""
    return (logits.argmax(dim=-1) == labels).float().mean()


@dataclass
class Task:
    """What a trial trains.

    ``train_x``/``train_y`` and ``test_x``/``test_y`` are in-memory tensors (the trainer
    moves them to the device once). ``build_model(width)`` returns a fresh ``nn.Module``
    whose size scales with the width multiplier (1.0 is the reference model). ``metric``
    maps (logits, labels) to a 0-d tensor where higher is better; ``target`` is the value
    the task suggests reaching (the experiment's objective.target wins).
    """

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    build_model: Callable[[float], nn.Module]
    target: float = 0.9
    metric: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = accuracy
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = field(default=F.cross_entropy)
    # (name, options) when built by name: how the other processes of a data-parallel trial build it too.
    spec: tuple[str, dict] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.train_x) != len(self.train_y) or len(self.test_x) != len(self.test_y):
            raise ValueError(f"task {self.name}: inputs and labels differ in length")
        if len(self.train_x) == 0 or len(self.test_x) == 0:
            raise ValueError(f"task {self.name}: empty train or held-out split")


def scaled(base: int, width: float) -> int:
    """A layer size scaled by the width multiplier, never below 1."""
    return max(1, round(base * width))
