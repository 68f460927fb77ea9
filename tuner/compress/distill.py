"""Distillation into a narrower model of the same task: the winner is the teacher."""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from tuner.compress.finetune import fit
from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import build_model
from tuner.train.result import TrialResult
from tuner.train.target import Target
from tuner.train.trial_config import TrialConfig


def distillation_loss(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, labels: torch.Tensor, temperature: float = 4.0, alpha: float = 0.5
) -> torch.Tensor:
    """``alpha`` x KL between the softened distributions (scaled by T^2, as Hinton et al.) plus
    ``1 - alpha`` x cross-entropy on the labels."""
    soft = F.kl_div(
        F.log_softmax(student_logits / temperature, dim=-1),
        F.log_softmax(teacher_logits / temperature, dim=-1),
        log_target=True,
        reduction="batchmean",
    )
    return alpha * temperature**2 * soft + (1 - alpha) * F.cross_entropy(student_logits, labels)


def distill(
    teacher: nn.Module,
    width_share: float,
    task: Task,
    config: TrialConfig,
    device: torch.device,
    target: float | Target,
    eval_every: int,
    cap_s: float,
    seed: int = 0,
) -> tuple[nn.Module, TrialResult]:
    """A student at ``width_share`` of the teacher's width, trained with the winner's
    configuration until it reaches ``target`` (or ``cap_s`` train seconds); its result holds
    the time to target."""
    student_config = dataclasses.replace(config, width=config.width * width_share)
    torch.manual_seed(seed)
    student = build_model(task, student_config).to(device)
    teacher = teacher.to(device).eval()

    def loss(logits: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            teacher_logits = teacher(x)  # the teacher's forward pass is part of the cost: inside the clock
        return distillation_loss(logits, teacher_logits, y)

    tt = fit(student, task, student_config, device, loss, target, eval_every, cap_s, seed=seed)
    return student.cpu(), tt.result()
