"""MNIST-1D (generated offline by the mnist1d package) with the paper's CNN, an MLP and a GRU."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from tuner.tasks.base import Task, scaled
from tuner.tasks.cache import cached_arrays


def mnist1d_arrays(num_samples: int = 5000, seed: int = 42) -> dict[str, np.ndarray]:
    def make() -> dict[str, np.ndarray]:
        from mnist1d.data import get_dataset_args, make_dataset

        args = get_dataset_args()
        args.num_samples = num_samples
        args.seed = seed
        data = make_dataset(args)
        return {k: np.asarray(data[k]) for k in ("x", "y", "x_test", "y_test")}

    return cached_arrays("mnist1d", {"num_samples": num_samples, "seed": seed}, make)


class ConvNet(nn.Module):
    """The CNN of the MNIST-1D paper (three stride-2 convolutions, 25 channels at width 1)."""

    def __init__(self, width: float = 1.0, length: int = 40, classes: int = 10) -> None:
        super().__init__()
        ch = scaled(25, width)
        self.conv1 = nn.Conv1d(1, ch, 5, stride=2, padding=1)
        self.conv2 = nn.Conv1d(ch, ch, 3, stride=2, padding=1)
        self.conv3 = nn.Conv1d(ch, ch, 3, stride=2, padding=1)
        out_len = length
        for kernel in (5, 3, 3):
            out_len = (out_len + 2 - kernel) // 2 + 1
        self.linear = nn.Linear(ch * out_len, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.view(x.shape[0], 1, x.shape[-1])
        h = self.conv1(h).relu()
        h = self.conv2(h).relu()
        h = self.conv3(h).relu()
        return self.linear(h.flatten(1))


class GRUNet(nn.Module):
    """A bidirectional GRU over the 40 time steps, classifying from all hidden states."""

    def __init__(self, width: float = 1.0, length: int = 40, classes: int = 10) -> None:
        super().__init__()
        hidden = scaled(12, width)
        self.gru = nn.GRU(1, hidden, batch_first=True, bidirectional=True)
        self.linear = nn.Linear(2 * hidden * length, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x.unsqueeze(-1))
        return self.linear(out.flatten(1))


def _mlp(width: float) -> nn.Module:
    hidden = scaled(100, width)
    return nn.Sequential(nn.Linear(40, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def _task(name: str, build, num_samples: int, seed: int) -> Task:
    a = mnist1d_arrays(num_samples, seed)
    return Task(
        name=name,
        train_x=torch.as_tensor(a["x"], dtype=torch.float32),
        train_y=torch.as_tensor(a["y"], dtype=torch.long),
        test_x=torch.as_tensor(a["x_test"], dtype=torch.float32),
        test_y=torch.as_tensor(a["y_test"], dtype=torch.long),
        build_model=build,
        target=0.9,
    )


def cnn_task(num_samples: int = 5000, seed: int = 42) -> Task:
    return _task("mnist1d-cnn", lambda w: ConvNet(w), num_samples, seed)


def mlp_task(num_samples: int = 5000, seed: int = 42) -> Task:
    return _task("mnist1d-mlp", _mlp, num_samples, seed)


def gru_task(num_samples: int = 5000, seed: int = 42) -> Task:
    return _task("mnist1d-gru", lambda w: GRUNet(w), num_samples, seed)
