"""Muon on a model's hidden 2-D weights with another optimizer (AdamW) on the rest, stepped as one.

Declared in tuner/train/optimizer_registry.py as the optimizer ``muon``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def hidden_weights(model: torch.nn.Module) -> set[int]:
    """Ids of the weights Muon steps: the 2-D weight of every layer but the last such layer (the
    head) and any tied to an embedding (``nn.Linear``, or Hugging Face's ``Conv1D`` in GPT-2).
    Embeddings, convolutions, norms and biases are left to AdamW."""
    embedded = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    layers = [
        m
        for m in model.modules()
        if not isinstance(m, torch.nn.Embedding) and isinstance(getattr(m, "weight", None), torch.nn.Parameter) and m.weight.ndim == 2
    ]
    return {id(m.weight) for m in layers[:-1] if id(m.weight) not in embedded}


class MuonWithAdamW(torch.optim.Optimizer):
    """``torch.optim.Muon`` on the hidden 2-D weights and AdamW on the rest, stepped as one
    optimizer. Both share the trial's learning rate: Muon scales its update to AdamW's RMS
    (``adjust_lr_fn="match_rms_adamw"``), so one rate and one schedule serve both halves.
    ``param_groups`` holds both optimizers' groups (the same dicts), so setting a group's
    ``lr`` reaches the optimizer that owns it.

    ``hidden`` holds the ids of the weights Muon steps (``hidden_weights``); None takes every
    2-D parameter as one. ``rest`` builds the optimizer of the other parameters' groups."""

    def __init__(
        self,
        groups: list[dict[str, Any]],
        lr: float,
        weight_decay: float,
        momentum: float,
        hidden: set[int] | None,
        rest: Callable[[list[dict[str, Any]]], torch.optim.Optimizer],
    ) -> None:
        def is_hidden(p: torch.nn.Parameter) -> bool:
            return p.ndim == 2 and (hidden is None or id(p) in hidden)

        muon = [dict(g, params=[p for p in g["params"] if is_hidden(p)]) for g in groups]
        others = [dict(g, params=[p for p in g["params"] if not is_hidden(p)]) for g in groups]
        muon, others = [g for g in muon if g["params"]], [g for g in others if g["params"]]
        self.optimizers: list[torch.optim.Optimizer] = []
        if muon:
            self.optimizers.append(
                torch.optim.Muon(muon, lr=lr, weight_decay=weight_decay, momentum=momentum, adjust_lr_fn="match_rms_adamw")
            )
        if others:
            self.optimizers.append(rest(others))
        super().__init__([p for g in groups for p in g["params"]], {})
        self.param_groups = [g for o in self.optimizers for g in o.param_groups]

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for optimizer in self.optimizers:
            optimizer.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for optimizer, state in zip(self.optimizers, state_dict["optimizers"], strict=True):
            optimizer.load_state_dict(state)
