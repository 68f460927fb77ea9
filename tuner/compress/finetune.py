"""A short training loop on a tensor task, timed by TimeToTarget: what pruning's fine-tune and
distillation charge to their rows."""

from __future__ import annotations

import torch
from torch import nn

from tuner.compress.measure import held_out_metric
from tuner.tasks.base import Task
from tuner.train.optimizers import build_optimizer
from tuner.train.step import StepLoss, TrainStep
from tuner.train.target import Target
from tuner.train.time_to_target import TimeToTarget
from tuner.train.timer import Timer
from tuner.train.trial_config import TrialConfig


def fit(
    model: nn.Module,
    task: Task,
    config: TrialConfig,
    device: torch.device,
    loss: StepLoss,
    target: float | Target,
    eval_every: int,
    cap_s: float,
    max_samples: int | None = None,
    seed: int = 0,
) -> TimeToTarget:
    """Train ``model`` with ``config``'s optimizer, learning rate and batch until the held-out
    metric reaches ``target`` (in its direction; a bare number is an accuracy), ``max_samples`` or
    ``cap_s`` seconds of training; returns the
    books (``tt.result()``: train seconds, samples, outcome). Evaluations are outside the clock."""
    if task.train_x is None:
        raise ValueError(f"task {task.name}: compression fine-tunes tensor tasks only (train_x/train_y)")
    gen = torch.Generator().manual_seed(seed)
    x_all, y_all = task.train_x.to(device), task.train_y.to(device)
    optimizer = build_optimizer([p for p in model.parameters() if p.requires_grad], config, device)
    step = TrainStep(model, loss, optimizer, device)  # in fp32, whatever the configuration's precision
    tt = TimeToTarget(
        target=target, eval_every_samples=eval_every, cap_s=cap_s, clock="train", max_samples=max_samples, timer=Timer(device)
    )
    tt.start()
    tt.training_started()
    model.train()
    while not tt.done:
        order = torch.randperm(len(x_all), generator=gen).to(device)
        for i in range(0, len(order) - config.batch_size + 1, config.batch_size):
            idx = order[i : i + config.batch_size]
            x, y = x_all[idx], y_all[idx]
            step(x, y)
            if tt.step(len(idx)):
                stop = tt.evaluate(held_out_metric(model, task, device, metric=tt.goal.metric))
                model.train()
                if stop:
                    break
    return tt
