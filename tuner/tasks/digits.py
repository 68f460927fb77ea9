"""scikit-learn's 8x8 digits (shipped with scikit-learn) with a small MLP."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from tuner.tasks.base import Task, scaled


def digits_mlp_task(test_fraction: float = 0.2, seed: int = 0) -> Task:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]

    def build(width: float) -> nn.Module:
        hidden = scaled(64, width)
        return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    return Task(
        name="digits-mlp",
        train_x=torch.from_numpy(x[train]),
        train_y=torch.from_numpy(y[train]),
        test_x=torch.from_numpy(x[test]),
        test_y=torch.from_numpy(y[test]),
        build_model=build,
        target=0.95,
    )
