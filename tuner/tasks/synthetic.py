"""A tiny synthetic task that trains to its target in well under a second, for tests."""

from __future__ import annotations

import torch
from torch import nn

from tuner.tasks.base import Task, scaled


def synthetic_task(n_train: int = 2000, n_test: int = 500, features: int = 16, classes: int = 4, noise: float = 0.6, seed: int = 0) -> Task:
    """Gaussian clusters around random class centres; an MLP separates them quickly."""
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, features, generator=gen)

    def draw(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.randint(0, classes, (n,), generator=gen)
        x = centres[y] + noise * torch.randn(n, features, generator=gen)
        return x, y

    train_x, train_y = draw(n_train)
    test_x, test_y = draw(n_test)

    def build(width: float) -> nn.Module:
        hidden = scaled(32, width)
        return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    return Task("synthetic", train_x, train_y, test_x, test_y, build, target=0.9)
