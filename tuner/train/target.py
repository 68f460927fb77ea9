"""What a trial aims at: a held-out metric, its direction and the value to reach.

``Target`` is the one place that compares a metric with the target or ranks two values
of it: "reached", "better", "gap to the target", "best so far", the lower-is-better error
that Optuna's pruners read, and the normalised gap of the miss score
(tuner/study/scoring/censoring.py). A metric is named as the experiment names it
(``objective.metric``); its direction is Optuna's word, ``maximize`` or ``minimize``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DIRECTIONS = ("maximize", "minimize")
ACCURACY_NAME = "accuracy"  # the default metric: what a task's ``metric`` measures
# Names whose direction goes without saying: a metric called so, or ending so (val_loss, top1_error).
MAXIMIZED_NAMES = ("accuracy", "acc", "f1", "auc", "map", "bleu", "iou")
MINIMIZED_NAMES = ("loss", "error", "perplexity", "wer", "cer", "mse", "mae", "rmse", "nll")
# Fractions in [0, 1] (higher is better): a miss's gap is measured as is, in (0, 1].
FRACTION_NAMES = ("accuracy", "acc")
# A minimized metric's error before any evaluation: finite, so that percentiles stay defined.
NO_VALUE_ERROR = 1e300


def inferred_direction(metric: str) -> str | None:
    """The direction a metric's name implies (``maximize`` or ``minimize``); None when it implies none."""
    name = metric.lower()
    for direction, names in (("minimize", MINIMIZED_NAMES), ("maximize", MAXIMIZED_NAMES)):
        if any(name == n or name.endswith(("_" + n, "-" + n, "." + n)) for n in names):
            return direction
    return None


def is_fraction(metric: str) -> bool:
    """An accuracy-like metric: a fraction in [0, 1] where higher is better."""
    name = metric.lower()
    return any(name == n or name.endswith(("_" + n, "-" + n)) for n in FRACTION_NAMES)


def _measured(value: float | None) -> bool:
    # An infinite value is no measurement either: a diverged loss of -inf never "reaches" a minimized target.
    return value is not None and math.isfinite(value)


@dataclass(frozen=True)
class Target:
    """Reach ``value`` of the held-out ``metric`` in ``direction`` (``maximize``: at or above it)."""

    value: float = 0.9
    metric: str = "accuracy"
    direction: str = "maximize"

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, but got {self.direction!r}")

    @classmethod
    def stored(cls, stored: Mapping[str, Any]) -> Target:
        """The target stored under ``target``, ``metric`` and ``direction`` (a trial's result, a study's
        objective, a table's); one stored before targets named a metric is an accuracy to reach, maximized."""
        default = cls()
        return cls(stored.get("target"), stored.get("metric", default.metric), stored.get("direction", default.direction))

    @property
    def maximize(self) -> bool:
        return self.direction == "maximize"

    @property
    def fraction(self) -> bool:
        """An accuracy-like target: a fraction maximized towards a value in (0, 1], starting from 0."""
        return self.maximize and is_fraction(self.metric) and 0.0 < self.value <= 1.0

    @property
    def default_metric(self) -> bool:
        """The default metric and direction: an accuracy, maximized."""
        return self.metric == ACCURACY_NAME and self.maximize

    @property
    def sign(self) -> str:
        """How a reached value compares with the target: ``>=`` or ``<=``."""
        return ">=" if self.maximize else "<="

    @property
    def worst(self) -> float:
        """Worse than any value: what a curve holds before its first evaluation."""
        return -math.inf if self.maximize else math.inf

    def describe(self) -> str:
        """The target as every view prints it, metric and direction included: ``loss <= 1.6``, ``accuracy >= 0.9``."""
        return f"{self.metric} {self.sign} {self.value}"

    def reached(self, v: float | None) -> bool:
        """Whether the value reaches the target (a missing, NaN or infinite one never does)."""
        if not _measured(v):
            return False
        return v >= self.value if self.maximize else v <= self.value

    def better(self, a: float | None, b: float | None) -> bool:
        """Whether ``a`` is strictly better than ``b`` (a measured value beats a missing or non-finite one)."""
        if not _measured(a):
            return False
        if not _measured(b):
            return True
        return a > b if self.maximize else a < b

    def best(self, values: Iterable[float | None], default: float | None = None) -> float:
        """The best of ``values``, passing over None, NaN and infinities; ``default`` (``worst``) when none is left."""
        measured = [v for v in values if _measured(v)]
        if not measured:
            return self.worst if default is None else default
        return max(measured) if self.maximize else min(measured)

    def running_best(self, values: Iterable[float | None]) -> list[float]:
        """The best value up to each point (``worst`` before any)."""
        out: list[float] = []
        best = self.worst
        for v in values:
            best = self.best((best, v))
            out.append(best)
        return out

    def gap(self, v: float | None) -> float:
        """How far ``v`` is from the target in its direction: >= 0, 0 when reached; inf when not measured."""
        if not _measured(v):
            return math.inf
        return max(0.0, self.value - v) if self.maximize else max(0.0, v - self.value)

    def error(self, v: float | None) -> float:
        """A lower-is-better value for Optuna's pruners: ``1 - v`` maximized (an accuracy's error),
        ``v`` minimized; a value not measured yet is as a maximized metric's 0, or ``NO_VALUE_ERROR``."""
        if v is None or not math.isfinite(v):
            return 1.0 if self.maximize else NO_VALUE_ERROR
        return 1.0 - v if self.maximize else v

    def from_error(self, e: float) -> float:
        """The metric whose ``error`` is ``e``."""
        return 1.0 - e if self.maximize else e

    def miss_gap(self, best: float | None) -> float:
        """The normalised gap of a miss, in [0, 1] (a fraction: [0, target]): how far its best was from the target.

        A fraction (accuracy, target in (0, 1]) counts an unmeasured best as 0 and its gap
        as is: ``target - best``. Any other metric scales the gap by the target's size,
        ``g = gap / |target|`` (1 for a target of 0), and bounds it as ``g / (1 + g)``: near
        misses spread out, far ones still rank in order, and no miss leaves [0, 1].
        """
        if self.fraction:
            return self.gap(self.best([best], default=0.0))
        if not _measured(best) or math.isinf(best):
            return 1.0
        g = self.gap(best) / (abs(self.value) or 1.0)
        return g / (1.0 + g)


ACCURACY = Target()  # the default target's metric and direction (its value is the experiment's)


def as_target(target: float | Target) -> Target:
    """A Target; a bare number is an accuracy to reach (the default metric, maximized)."""
    return target if isinstance(target, Target) else Target(float(target))
