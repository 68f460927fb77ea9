"""Every optimizer a trial can train with, declared once: its name, what it takes and how it is built.

``OPTIMIZER_KINDS`` is the one list: the ``optimizer`` dimension accepts its names
(tuner/train/trial_config.py), ``build_optimizer`` (tuner/train/optimizers.py) reads from a
configuration only what an entry says it takes, and the documentation's table of optimizers is
written from it (tuner/docs_reference.py). Adding an optimizer is a builder and an entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from tuner.train.muon import MuonWithAdamW

Groups = list[dict[str, Any]]


@dataclass(frozen=True)
class OptimizerArgs:
    """What a builder is given: the values its entry says it takes (None where it takes none)."""

    lr: float
    device: torch.device
    hidden: set[int] | None = None  # the model's hidden weights (tuner/train/muon.py), when the model is known
    weight_decay: float | None = None
    betas: tuple[float, float] | None = None
    amsgrad: bool | None = None
    own: Mapping[str, Any] = field(default_factory=dict)  # its own dimensions, by name


@dataclass(frozen=True)
class OptimizerKind:
    """One optimizer: the values it takes from a trial's configuration, and its builder."""

    name: str
    built_as: str  # what it is, in a few words (the documentation's table)
    build: Callable[[Groups, OptimizerArgs], torch.optim.Optimizer]
    betas: bool = True  # takes beta1 and beta2
    amsgrad: bool = False  # takes the amsgrad flag
    decay: str | None = "L2"  # how it applies weight_decay: "L2" (added to the gradient), "decoupled", or None (takes none)
    own: tuple[str, ...] = ()  # its own dimensions (fields of TrialConfig), read only when it is the trial's optimizer


def _taken(args: OptimizerArgs) -> dict[str, Any]:
    """The keyword arguments of a torch-style optimizer: the rate and what its entry takes."""
    kwargs: dict[str, Any] = {"lr": args.lr}
    kwargs |= {"weight_decay": args.weight_decay} if args.weight_decay is not None else {}
    kwargs |= {"betas": args.betas} if args.betas is not None else {}
    kwargs |= {"amsgrad": args.amsgrad} if args.amsgrad is not None else {}
    return kwargs


def torch_optimizer(cls: type[torch.optim.Optimizer], fused: bool = False) -> Callable[[Groups, OptimizerArgs], torch.optim.Optimizer]:
    """A builder of a ``torch.optim`` class from the values its entry takes. ``fused``: the class has
    fused kernels, several times faster per step than the default on CPU and GPU; the others get foreach."""

    def build(groups: Groups, args: OptimizerArgs) -> torch.optim.Optimizer:
        kernels = {"fused": args.device.type in ("cpu", "cuda")} if fused else {"foreach": True}
        return cls(groups, **_taken(args), **kernels)

    return build


_adamw = torch_optimizer(torch.optim.AdamW, fused=True)


def _schedule_free(groups: Groups, args: OptimizerArgs) -> torch.optim.Optimizer:
    import schedulefree  # a dependency; imported here, where it is used

    sf = schedulefree.AdamWScheduleFree(groups, **_taken(args), weight_lr_power=args.own["sf_weight_lr_power"])
    sf.train()  # steps need train mode; evaluation switches to the averaged weights (tuner/train/optimizers.py evaluation_weights)
    return sf


def _muon(groups: Groups, args: OptimizerArgs) -> torch.optim.Optimizer:
    # The rest (embeddings, the head, norms, biases) with AdamW, taking the same betas, AMSGrad and decay.
    return MuonWithAdamW(groups, args.lr, args.weight_decay or 0.0, args.own["muon_momentum"], args.hidden, lambda rest: _adamw(rest, args))


OPTIMIZER_KINDS: dict[str, OptimizerKind] = {
    kind.name: kind
    for kind in (
        OptimizerKind("adam", "`torch.optim.Adam`", torch_optimizer(torch.optim.Adam, fused=True), amsgrad=True),
        OptimizerKind("adamw", "`torch.optim.AdamW`", _adamw, amsgrad=True, decay="decoupled"),
        OptimizerKind("nadam", "`torch.optim.NAdam`", torch_optimizer(torch.optim.NAdam)),
        OptimizerKind("radam", "`torch.optim.RAdam`", torch_optimizer(torch.optim.RAdam)),
        OptimizerKind("adamax", "`torch.optim.Adamax`", torch_optimizer(torch.optim.Adamax)),
        OptimizerKind(
            "adamw_schedulefree",
            "Schedule-Free AdamW (`schedulefree.AdamWScheduleFree`): evaluates the average of its weights, after `optimizer.eval()`",
            _schedule_free,
            decay="decoupled",
            own=("sf_weight_lr_power",),
        ),
        OptimizerKind(
            "muon",
            "`torch.optim.Muon` on the hidden 2-D weights, AdamW (its betas, AMSGrad and decay) on the rest",
            _muon,
            amsgrad=True,
            decay="decoupled",
            own=("muon_momentum",),
        ),
    )
}
