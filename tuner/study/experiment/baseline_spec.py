"""The experiment's ``baseline:`` mapping, checked at load like every other key."""

from __future__ import annotations

from typing import Any

from tuner.errors import ConfigError
from tuner.train.trial_config import DIMENSIONS, TrialConfig


def parse_baseline(raw: Any, source: str) -> dict[str, Any]:
    """The baseline's dimensions over the reference configuration; each checked as a fixed value."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(source, "baseline", "a mapping of training dimensions (empty: the task's reference configuration)", raw)
    for key, value in raw.items():
        if key not in DIMENSIONS:
            raise ConfigError(source, f"baseline.{key}", "one of " + ", ".join(DIMENSIONS), key)
        if not DIMENSIONS[key].accepts(value):
            raise ConfigError(source, f"baseline.{key}", DIMENSIONS[key].describe(), value)
    return {k: DIMENSIONS[k].cast(v) for k, v in raw.items()}


def baseline_config(values: dict[str, Any]) -> TrialConfig:
    """The baseline's configuration: the given dimensions over the task's reference configuration."""
    return TrialConfig(**values)
