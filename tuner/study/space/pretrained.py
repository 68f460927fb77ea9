"""A pretrained start checked before anything is written: every width the space can sample
must take the checkpoint's keys and shapes (tuner/train/checkpoint.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuner.errors import ConfigError
from tuner.study.space.space import Choice, Fixed, Range, SearchSpace
from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import build_model
from tuner.train.checkpoint import CheckpointError, first_mismatch, load_state
from tuner.train.trial_config import TrialConfig


def resolve_init_from(value: Any, source: str, base_dir: Path) -> str | None:
    """The experiment's ``init_from``: a checkpoint file, made absolute when found beside the
    experiment (or in the working directory), else kept as given (package.module:function)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(source, "init_from", "a checkpoint file or package.module:function", value)
    for candidate in (base_dir / value, Path.cwd() / value):
        if candidate.is_file():
            return str(candidate.resolve())
    return value


def sampled_widths(space: SearchSpace) -> list[float]:
    """The widths a trial can be built at: the fixed one, each choice, or both ends of a range."""
    spec = space.dims.get("width")
    if spec is None:
        return [TrialConfig().width]
    if isinstance(spec, Fixed):
        return [float(spec.value)]
    if isinstance(spec, Choice):
        return [float(c) for c in spec.choices]
    assert isinstance(spec, Range)
    return [float(spec.low), float(spec.high)]


def attach_pretrained(source: str, init_from: str, task: Task, space: SearchSpace) -> None:
    """Load ``init_from`` into ``task.init_state``; ConfigError (one line) when it cannot be
    read or does not fit the model at a width the space can sample: the first mismatching
    key with the model's shape and the checkpoint's.

    A training function of one's own builds its model itself: its state is only read here,
    and the function loads it with ``session.start_from(model)`` (tuner/train/session.py),
    which checks the fit then.
    """
    try:
        state = load_state(init_from)
    except CheckpointError as err:
        raise ConfigError(
            source, "init_from", "a state dict file, a file written by tuner train --save, or package.module:function", str(err)
        ) from None
    if task.train_fn is not None:
        task.init_state = state
        return
    for width in sampled_widths(space):
        model = build_model(task, TrialConfig(width=width, hyper=_defaults(task)))
        mismatch = first_mismatch(model, state)
        if mismatch is not None:
            key, model_shape, ckpt_shape = mismatch
            raise ConfigError(
                source,
                "init_from",
                f"a checkpoint matching the model at width {width:g}; key {key}: model {model_shape}",
                f"checkpoint {ckpt_shape} ({init_from})",
            )
    task.init_state = state


def _defaults(task: Task) -> dict[str, Any]:
    return dict(task.hyperparameters or {})
