"""The trial's optimizer, built from its configuration: the Adam family, Schedule-Free AdamW,
and Muon on the 2-D hidden weights with AdamW on the rest.

The built-in loop, the batch probe, the compression fine-tune and an own loop's
``session.optimizer`` (tuner/train/session_levers.py) all build it here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

from tuner.train.trial_config import AMSGRAD_OPTIMIZERS, TrialConfig

_CLASSES = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "nadam": torch.optim.NAdam,
    "radam": torch.optim.RAdam,
    "adamax": torch.optim.Adamax,
}

Params = Iterable[torch.nn.Parameter] | Iterable[dict[str, Any]]


def build_optimizer(
    params: Params, config: TrialConfig, device: torch.device, model: torch.nn.Module | None = None
) -> torch.optim.Optimizer:
    """The configuration's optimizer over ``params`` (tensors, or groups with their own keys).

    ``model`` tells Muon which weights are hidden (tuner/train/optimizers.py ``hidden_weights``);
    without it every 2-D parameter is taken as one.
    """
    groups = _groups(params)
    if config.optimizer == "muon":
        return MuonWithAdamW(groups, config, device, hidden_weights(model) if model is not None else None)
    if config.optimizer == "adamw_schedulefree":
        import schedulefree  # a dependency; imported here, where it is used

        sf = schedulefree.AdamWScheduleFree(
            groups,
            lr=config.lr,
            betas=(config.beta1, config.beta2),
            weight_decay=config.weight_decay,
            weight_lr_power=config.sf_weight_lr_power,
        )
        sf.train()  # steps need train mode; evaluation switches to the averaged weights (evaluation_weights)
        return sf
    return _adam(groups, config, device, config.optimizer)


def _adam(groups: list[dict[str, Any]], config: TrialConfig, device: torch.device, name: str) -> torch.optim.Optimizer:
    kwargs: dict = {"lr": config.lr, "betas": (config.beta1, config.beta2), "weight_decay": config.weight_decay}
    if name in AMSGRAD_OPTIMIZERS:
        kwargs["amsgrad"] = config.amsgrad
        # The fused kernels are several times faster per step than the default on CPU and GPU.
        kwargs["fused"] = device.type in ("cpu", "cuda")
    else:
        kwargs["foreach"] = True
    return _CLASSES[name](groups, **kwargs)


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
    ``lr`` reaches the optimizer that owns it."""

    def __init__(self, groups: list[dict[str, Any]], config: TrialConfig, device: torch.device, hidden: set[int] | None) -> None:
        def is_hidden(p: torch.nn.Parameter) -> bool:
            return p.ndim == 2 and (hidden is None or id(p) in hidden)

        muon = [dict(g, params=[p for p in g["params"] if is_hidden(p)]) for g in groups]
        rest = [dict(g, params=[p for p in g["params"] if not is_hidden(p)]) for g in groups]
        muon, rest = [g for g in muon if g["params"]], [g for g in rest if g["params"]]
        self.optimizers: list[torch.optim.Optimizer] = []
        if muon:
            self.optimizers.append(
                torch.optim.Muon(
                    muon, lr=config.lr, weight_decay=config.weight_decay, momentum=config.muon_momentum, adjust_lr_fn="match_rms_adamw"
                )
            )
        if rest:
            self.optimizers.append(_adam(rest, config, device, "adamw"))
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
