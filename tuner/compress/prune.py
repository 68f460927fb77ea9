"""Global magnitude pruning of the weights of every Linear and Conv layer, then a short fine-tune."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import prune

from tuner.compress.finetune import fit
from tuner.tasks.base import Task
from tuner.train.target import Target
from tuner.train.trial_config import TrialConfig

PRUNABLE = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


def prune_global(model: nn.Module, sparsity: float) -> nn.Module:
    """A copy with the ``sparsity`` share of the smallest weights (over all layers together)
    masked to zero; the masks stay on (fine-tuning keeps them zero) until ``make_permanent``."""
    pruned = copy.deepcopy(model)
    targets = [(m, "weight") for m in pruned.modules() if isinstance(m, PRUNABLE)]
    prune.global_unstructured(targets, pruning_method=prune.L1Unstructured, amount=sparsity)
    return pruned


def make_permanent(model: nn.Module) -> nn.Module:
    """Fold each mask into its weight (the zeros become plain zeros in the state dict)."""
    for m in model.modules():
        if isinstance(m, PRUNABLE) and prune.is_pruned(m):
            prune.remove(m, "weight")
    return model


def prune_and_finetune(
    model: nn.Module,
    sparsity: float,
    task: Task,
    config: TrialConfig,
    device: torch.device,
    target: float | Target,
    finetune_samples: int,
    eval_every: int,
    cap_s: float,
) -> tuple[nn.Module, float]:
    """The pruned model after a fine-tune of at most ``finetune_samples`` (stopping early at the
    target), and the train seconds the fine-tune took."""
    pruned = prune_global(model, sparsity).to(device)
    train_s = 0.0
    if finetune_samples > 0:
        tt = fit(
            pruned,
            task,
            config,
            device,
            lambda logits, _x, y: F.cross_entropy(logits, y),
            target,
            eval_every,
            cap_s,
            max_samples=finetune_samples,
        )
        train_s = tt.result().train_s
    return make_permanent(pruned).cpu(), train_s
