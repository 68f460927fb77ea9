"""A task's own hyperparameters: which names it accepts, and handing them to its functions.

A search space may hold dimensions the trainer does not know (dropout, depth, label
smoothing, ...). They reach the task as keyword arguments, and the task says which it takes
in one of three ways, first match wins:

- ``Task(..., hyperparameters={"dropout": 0.1, "depth": 2})``: a declared list with defaults;
- the keyword parameters of ``build_model`` beyond the width
  (``def build_model(width, *, dropout=0.1, depth=2)``), and the keyword-only parameters
  of ``loss`` (``def loss(logits, labels, *, label_smoothing=0.0)``: keyword-only, so
  that the options of ``F.cross_entropy``, the default, are not taken for hyperparameters);
- for a training function of one's own (tuner/train/session.py), its keyword parameters
  beyond ``config``, ``device``, ``seed`` and ``session``.

Each function (model builder, loss) receives the names its own signature takes, so a
declared ``label_smoothing`` reaches a ``loss(logits, labels, *, label_smoothing=0.0)``
and not the model. A ``**kwargs`` parameter receives them all but declares none. The
held-out loss is the task's ``loss`` at its defaults, so that it compares across trials
(a label-smoothed loss is larger for the same predictions).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

# The arguments the tool passes to a training function of one's own; never hyperparameters.
TRAIN_FN_ARGS = ("config", "device", "seed", "session")

_NO_DEFAULT = inspect.Parameter.empty


def keyword_parameters(fn: Callable[..., Any], skip: int = 0, reserved: tuple[str, ...] = ()) -> dict[str, Any]:
    """Name -> default (``inspect.Parameter.empty`` when none) of the parameters ``fn`` takes
    by keyword, after its first ``skip`` positional ones and without the ``reserved`` names."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or C function: declares nothing
        return {}
    out: dict[str, Any] = {}
    positional = 0
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and positional < skip:
            positional += 1
            continue
        if p.kind is p.POSITIONAL_ONLY or p.name in reserved:
            continue
        out[p.name] = p.default
    return out


def keyword_only_parameters(fn: Callable[..., Any]) -> dict[str, Any]:
    """Name -> default of the parameters after ``*`` in ``fn``'s signature."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}


def takes_any_keyword(fn: Callable[..., Any]) -> bool:
    try:
        return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False


def train_fn_hyperparameters(fn: Callable[..., Any], options: Mapping[str, Any] = ()) -> dict[str, Any]:
    """The hyperparameters a training function takes: its keyword parameters beyond the
    tool's own arguments and the task options fixed in the experiment."""
    return {k: v for k, v in keyword_parameters(fn, reserved=TRAIN_FN_ARGS).items() if k not in options}


def task_hyperparameters(task: Any) -> dict[str, Any]:
    """Name -> default of the hyperparameters a built Task accepts (see the module's docstring)."""
    declared = getattr(task, "hyperparameters", None)
    if declared is not None:
        return dict(declared)
    if getattr(task, "train_fn", None) is not None:
        return train_fn_hyperparameters(task.train_fn, task.spec[1] if task.spec else {})
    accepted = keyword_parameters(task.build_model, skip=1)
    for name, default in keyword_only_parameters(task.loss).items():
        accepted.setdefault(name, default)
    return accepted


def bind_hyperparameters(fn: Callable[..., Any], hyper: Mapping[str, Any]) -> Callable[..., Any]:
    """``fn`` with the hyperparameters its signature takes bound as keywords (``fn`` itself when none)."""
    if not hyper:
        return fn
    if takes_any_keyword(fn):
        return functools.partial(fn, **hyper)
    wanted = keyword_parameters(fn)
    given = {k: v for k, v in hyper.items() if k in wanted}
    return functools.partial(fn, **given) if given else fn


def build_model(task: Any, config: Any) -> Any:
    """The task's model at the config's width, built with the hyperparameters its builder takes."""
    return bind_hyperparameters(task.build_model, config.hyper)(config.width)


def loss_fn(task: Any, config: Any) -> Callable[..., Any]:
    """The task's loss with the hyperparameters it takes bound (``task.loss`` itself when none)."""
    return bind_hyperparameters(task.loss, config.hyper)


def kind_of_default(default: Any) -> type | None:
    """The value type a default implies (bool, int, float or str); None when it says nothing."""
    for kind in (bool, int, float, str):
        if type(default) is kind:
            return kind
    return None
