"""The experiment's ``baseline:`` mapping, checked at load like every other key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.errors import ConfigError
from tuner.study.space.custom import custom_dimension, unknown_name
from tuner.train.trial_config import DIMENSIONS, TrialConfig


def parse_baseline(raw: Any, source: str, accepted: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The baseline's dimensions over the reference configuration; each checked as a fixed value.

    Besides the built-in dimensions it takes the task's own hyperparameters: ``accepted``
    (name -> default) where known at load (a built-in task: none; a training function: its
    keyword parameters), or any name, typed by its value, where the task says once built
    (None: a task function; tuner/study/reruns/baseline.py keeps only the names it takes).
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(source, "baseline", "a mapping of training dimensions (empty: the task's reference configuration)", raw)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in DIMENSIONS:
            dimension = DIMENSIONS[key]
        elif accepted is not None and key not in accepted:
            raise unknown_name(source, f"baseline.{key}", key, accepted)
        else:
            dimension = custom_dimension(key, value, accepted, source, f"baseline.{key}")
        if not dimension.accepts(value):
            raise ConfigError(source, f"baseline.{key}", dimension.describe(), value)
        out[key] = dimension.cast(value)
    return out


def baseline_config(values: dict[str, Any]) -> TrialConfig:
    """The baseline's configuration: the given dimensions over the task's reference configuration."""
    return TrialConfig.from_stored(values)
