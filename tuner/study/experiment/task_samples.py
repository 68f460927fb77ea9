"""Numbers of training samples written relative to the task: ``{epochs: N}``, N passes over its training set.

A number of samples written for one task is wrong for another (a language model's training set
is not MNIST-1D's), so an experiment may state these in epochs of its task:
``objective.eval_every_samples``, ``objective.max_samples`` and the search space's sample
dimensions (``horizon_samples``: a fixed value, a range's bounds, a choice), in the experiment
file or in its search-space file. The loader (tuner/study/experiment/load.py) turns each into
``round(N x the task's training samples)`` (at least 1) before anything else reads the file, so
that every command, the study's stored objective and the resolved experiment written with each
run see plain numbers. The training set's size is known once the task is built: loading builds
it only for a file that uses the form.

Multiples of the baseline's samples to target are not offered: the evaluation cadence is fixed
before the first trial (the baseline's own run is evaluated at it), and a study's sampler keeps
a dimension's range for the whole study, while the baseline's samples are known only once it ran.
"""

from __future__ import annotations

import math
from typing import Any

from tuner.errors import ConfigError, first_line
from tuner.tasks.registry import build_task
from tuner.train.trial_config import DIMENSIONS

EPOCHS = "epochs"
ALLOWED = "an integer > 0, or {epochs: N} with a number N > 0 (passes over the task's training set)"
OBJECTIVE_KEYS = ("eval_every_samples", "max_samples")
# The search dimensions counted in training samples.
SAMPLE_DIMENSIONS = tuple(name for name in DIMENSIONS if name.endswith("_samples"))


class TaskSize:
    """The task's training samples, from the task built on first need (once)."""

    def __init__(self, task: str, options: dict[str, Any], source: str) -> None:
        self.task, self.options, self.source = task, options, source
        self.samples: int | None = None

    def __call__(self, key: str, value: Any) -> int:
        if self.samples is None:
            try:
                built = build_task(self.task, self.options)
            except Exception as err:  # noqa: BLE001 -- a user's task can raise anything: one line
                raise ConfigError(
                    self.source, key, "a task that builds, to count its epochs", f"{self.task} ({first_line(err, type(err).__name__)})"
                ) from None
            if built.train_fn is not None:
                allowed = "a number of samples: a training function of one's own has no training set to count epochs of"
                raise ConfigError(self.source, key, allowed, value)
            self.samples = built.n_train
        return self.samples


def is_epochs(value: Any) -> bool:
    """A value written as ``{epochs: ...}`` (or a mapping that means to be one)."""
    return isinstance(value, dict) and EPOCHS in value


def in_samples(value: Any, size: TaskSize, key: str, source: str | None = None) -> Any:
    """``value`` in training samples where it is ``{epochs: N}``; anything else as given (the loader checks it).
    ``source``: the file it was read from (default: the experiment's)."""
    if not isinstance(value, dict):
        return value
    epochs = value.get(EPOCHS)
    number = isinstance(epochs, int | float) and not isinstance(epochs, bool) and math.isfinite(epochs) and epochs > 0
    if set(value) != {EPOCHS} or not number:
        raise ConfigError(source or size.source, key, ALLOWED, value)
    return max(1, round(epochs * size(key, value)))


def objective_in_samples(raw: Any, size: TaskSize) -> Any:
    """The ``objective`` mapping with its sample counts in samples."""
    if not isinstance(raw, dict):
        return raw
    return {k: in_samples(v, size, f"objective.{k}") if k in OBJECTIVE_KEYS else v for k, v in raw.items()}


def space_in_samples(raw: Any, size: TaskSize, prefix: str, source: str | None = None) -> Any:
    """A mapping of dimension name to spec (read from ``source``) with the sample dimensions' epochs in samples."""
    if not isinstance(raw, dict):
        return raw
    return {name: _spec(body, size, f"{prefix}.{name}", source) if name in SAMPLE_DIMENSIONS else body for name, body in raw.items()}


def _spec(body: Any, size: TaskSize, key: str, source: str | None) -> Any:
    if not isinstance(body, dict) or is_epochs(body):
        return in_samples(body, size, key, source)
    spec = {k: in_samples(v, size, f"{key}.{k}", source) if k in ("value", "low", "high") else v for k, v in body.items()}
    if isinstance(spec.get("choices"), list):
        spec["choices"] = [in_samples(c, size, f"{key}.choices[{i}]", source) for i, c in enumerate(spec["choices"])]
    return spec
