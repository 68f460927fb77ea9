"""A user's own data from a .npz or .csv file, trained with an MLP."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from tuner.tasks.base import Task, scaled


def file_mlp_task(path: str, test_fraction: float = 0.2, hidden: int = 64, seed: int = 0) -> Task:
    """Load features and integer labels from a file and train an MLP on them.

    ``.npz``: arrays ``x`` and ``y`` (split by ``test_fraction``), or ``x``, ``y``,
    ``x_test``, ``y_test`` (used as given). ``.csv``: numeric columns with a header row;
    the last column is the label.
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    if file.suffix == ".npz":
        with np.load(file) as stored:
            arrays = {k: stored[k] for k in stored.files}
        if "x" not in arrays or "y" not in arrays:
            raise ValueError(f"{path}: expected arrays x and y, found {sorted(arrays)}")
    elif file.suffix == ".csv":
        table = np.loadtxt(file, delimiter=",", skiprows=1, ndmin=2)
        arrays = {"x": table[:, :-1], "y": table[:, -1]}
    else:
        raise ValueError(f"{path}: expected a .npz or .csv file")
    x = np.asarray(arrays["x"], dtype=np.float32).reshape(len(arrays["x"]), -1)
    y = np.asarray(arrays["y"]).astype(np.int64)
    if "x_test" in arrays and "y_test" in arrays:
        x_test = np.asarray(arrays["x_test"], dtype=np.float32).reshape(len(arrays["x_test"]), -1)
        y_test = np.asarray(arrays["y_test"]).astype(np.int64)
    else:
        order = np.random.default_rng(seed).permutation(len(y))
        n_test = max(1, int(len(y) * test_fraction))
        x_test, y_test = x[order[:n_test]], y[order[:n_test]]
        x, y = x[order[n_test:]], y[order[n_test:]]
    features, classes = x.shape[1], int(max(y.max(), y_test.max())) + 1

    def build(width: float) -> nn.Module:
        h = scaled(hidden, width)
        return nn.Sequential(nn.Linear(features, h), nn.ReLU(), nn.Linear(h, classes))

    return Task(f"file:{file.name}", torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(x_test), torch.from_numpy(y_test), build)
