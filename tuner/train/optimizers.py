"""The trial's optimizer, built from its configuration by its entry in the registry
(tuner/train/optimizer_registry.py): the Adam family, Schedule-Free AdamW, and Muon on the
2-D hidden weights with AdamW on the rest.

The built-in loop, the batch probe, the compression fine-tune and an own loop's
``session.optimizer`` (tuner/train/session_levers.py) all build it here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

from tuner.train.muon import MuonWithAdamW, hidden_weights
from tuner.train.optimizer_registry import OPTIMIZER_KINDS, OptimizerArgs
from tuner.train.trial_config import TrialConfig

__all__ = ["MuonWithAdamW", "build_optimizer", "decay_groups", "evaluation_weights", "has_eval_weights", "hidden_weights"]

Params = Iterable[torch.nn.Parameter] | Iterable[dict[str, Any]]


def build_optimizer(
    params: Params, config: TrialConfig, device: torch.device, model: torch.nn.Module | None = None
) -> torch.optim.Optimizer:
    """The configuration's optimizer over ``params`` (tensors, or groups with their own keys).

    Only the values its entry in ``OPTIMIZER_KINDS`` takes are read from ``config``, so an own
    loop's recorded reads (tuner/train/config_reads.py) name what reaches its optimizer.
    ``model`` tells Muon which weights are hidden (tuner/train/muon.py ``hidden_weights``);
    without it every 2-D parameter is taken as one.
    """
    kind = OPTIMIZER_KINDS[config.optimizer]
    args = OptimizerArgs(
        lr=config.lr,
        device=device,
        hidden=hidden_weights(model) if model is not None else None,
        weight_decay=config.weight_decay if kind.decay is not None else None,
        betas=(config.beta1, config.beta2) if kind.betas else None,
        amsgrad=config.amsgrad if kind.amsgrad else None,
        own={name: getattr(config, name) for name in kind.own},
    )
    return kind.build(_groups(params), args)


def _groups(params: Params) -> list[dict[str, Any]]:
    items = list(params)
    if items and isinstance(items[0], dict):
        return [dict(g, params=list(g["params"])) for g in items]
    return [{"params": items}]


def decay_groups(model: torch.nn.Module) -> list[dict[str, Any]]:
    """The model's trainable parameters in two groups: weight decay on the weights of 2 or more
    dimensions (linear, convolution, embedding), none on norms and biases (1-D)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decayed = [p for p in params if p.ndim >= 2]
    plain = [p for p in params if p.ndim < 2]
    return [g for g in ({"params": decayed}, {"params": plain, "weight_decay": 0.0}) if g["params"]]


def has_eval_weights(optimizer: Any) -> bool:
    """True for an optimizer whose evaluation weights differ from its training ones (Schedule-Free)."""
    return callable(getattr(optimizer, "eval", None)) and callable(getattr(optimizer, "train", None))


@contextlib.contextmanager
def evaluation_weights(optimizer: Any, back: Callable[[], bool] = lambda: True) -> Iterator[None]:
    """Evaluate with the optimizer's evaluation weights (Schedule-Free: the averaged ones); on
    leaving, back to the training weights unless ``back()`` says the trial has ended (the kept
    weights are then the averaged ones). Does nothing for any other optimizer."""
    if not has_eval_weights(optimizer):
        yield
        return
    optimizer.eval()
    yield
    if back():
        optimizer.train()
