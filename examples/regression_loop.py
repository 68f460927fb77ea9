"""A regression model in a training loop of one's own, tuned for time to a held-out loss.

Lower is better here: the loop reports the held-out mean squared error, and the
experiment (examples/regression_loop.yaml) names that metric and its direction,
``objective: {metric: mse, direction: minimize, target: ...}``. The session compares it
with the target in that direction, and prunes and caps the trial like any other.

The data is scikit-learn's Friedman #1 problem (generated offline, deterministically):
ten uniform inputs, five of which matter through a sine, a square and two linear terms,
plus noise; the target is standardised, so an MSE of 1 is what predicting the mean scores.

Run it (from the repository root, so that ``examples`` imports)::

    python -m tuner run examples/regression_loop.yaml
"""

from __future__ import annotations

import torch
from sklearn.datasets import make_friedman1  # at import, in the main thread: never mid-trial beside another importer
from torch import nn

N_SAMPLES = 2000
NOISE = 0.5  # in the problem's own units: the held-out MSE cannot fall below about 0.01 after scaling


def friedman(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Friedman #1 inputs and standardised targets, split 80/20 (the same split for every seed)."""
    x, y = make_friedman1(n_samples=N_SAMPLES, n_features=10, noise=NOISE, random_state=seed)
    x_t = torch.tensor(x, dtype=torch.float32)
    y_t = torch.tensor((y - y.mean()) / y.std(), dtype=torch.float32).unsqueeze(1)
    cut = N_SAMPLES * 4 // 5
    return x_t[:cut], y_t[:cut], x_t[cut:], y_t[cut:]


def mlp(width: float, depth: int) -> nn.Sequential:
    """``depth`` hidden layers of 64 x width units and one output."""
    hidden = max(1, round(64 * width))
    layers: list[nn.Module] = []
    features = 10
    for _ in range(depth):
        layers += [nn.Linear(features, hidden), nn.ReLU()]
        features = hidden
    return nn.Sequential(*layers, nn.Linear(features, 1))


def train(config, device: torch.device, seed: int, session, *, depth: int = 2) -> None:
    """Train until the session says stop, reporting the held-out MSE (lower is better)."""
    torch.manual_seed(seed)
    x, y, x_test, y_test = (t.to(device) for t in friedman())
    model = mlp(config.width, depth).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    loss_fn = nn.MSELoss()
    session.start_training()  # data and model are ready: the train clock starts
    samples = 0
    while True:
        for idx in torch.randperm(len(x), device=device).split(config.batch_size):
            model.train()
            loss = loss_fn(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            samples += len(idx)
            if session.due(samples):  # the train clock is paused until report() answers
                model.eval()
                with torch.no_grad():
                    mse = loss_fn(model(x_test), y_test).item()
                answer = session.report(mse, samples, loss=mse, train_loss=loss.item())
                if answer.stop:
                    return
