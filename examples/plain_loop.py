"""A plain PyTorch training loop of one's own, tuned by tuner.

The loop is ordinary PyTorch: it builds its data and model, trains, and evaluates on the
held-out split. The session's calls turn the searched dimensions into PyTorch, as the
built-in loop does: ``optimizer()`` the optimizer, ``train_step()`` one optimizer step in
the trial's precision with its schedule and accumulation, ``compile()`` the compile mode.
It hands control of time to the session: ``due()`` says when the experiment's cadence wants
an evaluation (and pauses the train clock), ``report()`` records the metric and answers
whether to stop (reached, pruned, capped, out of time).
Its own hyperparameters, ``dropout`` and ``depth``, are keyword parameters: the search
space may name them, and a misspelt name is refused when the experiment is loaded.

Run it (from the repository root, so that ``examples`` imports)::

    python -m tuner run examples/plain_loop.yaml
"""

from __future__ import annotations

import torch
from torch import nn


def digits(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """scikit-learn's 8x8 digits, scaled to [0, 1], split 80/20."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.long)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    test, train = order[: len(y) // 5], order[len(y) // 5 :]
    return x[train], y[train], x[test], y[test]


def mlp(width: float, dropout: float, depth: int) -> nn.Sequential:
    """``depth`` hidden layers of 64 x width units, each followed by dropout."""
    hidden = max(1, round(64 * width))
    layers: list[nn.Module] = []
    features = 64
    for _ in range(depth):
        layers += [nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(dropout)]
        features = hidden
    return nn.Sequential(*layers, nn.Linear(features, 10))


def train(config, device: torch.device, seed: int, session, *, dropout: float = 0.1, depth: int = 1) -> None:
    """Train until the session says stop. ``config`` holds the built-in dimensions (batch_size,
    width, ...); the session's calls apply the searched optimizer, schedule, precision and
    compile mode; ``dropout`` and ``depth`` are this loop's own."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    torch.manual_seed(seed)
    x, y, x_test, y_test = (t.to(device) for t in digits())
    model = mlp(config.width, dropout, depth).to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = session.optimizer(model)  # the searched optimizer, rate, betas, weight decay (none on biases)
    net = session.compile(model, x[: config.batch_size])  # the searched compile mode, compiled now: setup, not training
    step = session.train_step(net, loss_fn, optimizer)  # precision, loss scaling, accumulation, the schedule by samples
    session.start_training()  # data and model are ready: the train clock starts
    samples = 0
    while True:
        for idx in torch.randperm(len(x), device=device).split(config.batch_size):
            model.train()
            loss = step(x[idx], y[idx])  # one optimizer step
            samples += len(idx)
            if session.due(samples):  # the train clock is paused until report() answers
                model.eval()
                with torch.no_grad(), session.autocast():
                    logits = model(x_test).float()
                accuracy = (logits.argmax(-1) == y_test).float().mean().item()
                answer = session.report(accuracy, samples, loss=loss_fn(logits, y_test).item(), train_loss=loss.item())
                if answer.stop:
                    return
