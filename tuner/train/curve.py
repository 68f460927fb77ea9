"""A trial's learning curve as it trains: samples and steps, the evaluation cadence, the
evaluations, the best metric so far and the first crossing of the target.

"Best" is the target's (tuner/train/target.py), which passes over a NaN metric: a model
whose metric came out NaN at one evaluation has still reached its best finite one.
``best_so_far`` and ``running_best`` are its maximized form, for an accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from tuner.train.clocks import robust_seconds
from tuner.train.result import Evaluation, TrialResult
from tuner.train.target import ACCURACY, Target, as_target


def best_so_far(metrics: Iterable[float | None], default: float = -math.inf) -> float:
    """The best (largest) metric among ``metrics``, passing over None and NaN; ``default`` when none is left."""
    return ACCURACY.best(metrics, default)


def running_best(metrics: Iterable[float]) -> list[float]:
    """The best metric up to each point (``best_so_far`` of each prefix; -inf before any)."""
    return ACCURACY.running_best(metrics)


class TrialCurve:
    """Samples and steps so far, when the next evaluation is due, and the evaluations made.

    Evaluations fall at the first step at or past each multiple of ``eval_every`` samples,
    so that trials of any batch size are looked at after the same training samples.
    """

    def __init__(self, target: float | Target, eval_every: int) -> None:
        self.goal = as_target(target)
        self.target = self.goal.value
        self.eval_every = eval_every
        self.samples = 0
        self.steps = 0
        self.evaluations: list[Evaluation] = []
        self._next_eval = eval_every

    def count(self, batch_samples: int) -> bool:
        """Count one optimizer step of ``batch_samples``; True when the cadence wants an evaluation."""
        self.samples += batch_samples
        self.steps += 1
        return self.samples >= self._next_eval

    def record(self, ev: Evaluation) -> None:
        """Add an evaluation; the next one is due at the next multiple of the cadence past it."""
        self.evaluations.append(ev)
        while self._next_eval <= self.samples:
            self._next_eval += self.eval_every

    def best_metric(self) -> float:
        """The best metric evaluated so far; NaN before any."""
        return self.goal.best((e.metric for e in self.evaluations), default=math.nan)

    def fill(self, result: TrialResult) -> None:
        """The curve's figures in a result: best and final metric, and for a trial that
        reached the target, where it first crossed it (its last evaluation) on every clock."""
        if self.evaluations:
            result.best_metric = self.best_metric()
            result.final_metric = self.evaluations[-1].metric
        if not result.reached:
            return
        hit = self.evaluations[-1]
        result.samples_to_target, result.steps_to_target = hit.samples, hit.steps
        result.train_s_to_target, result.wall_s_to_target = hit.train_s, hit.wall_s
        result.robust_s_to_target = robust_seconds(hit.steps, result.median_step_s, hit.train_s)  # the median over the whole trial
        result.cpu_s_to_target = robust_seconds(hit.steps, result.median_step_cpu_s, hit.cpu_s or 0.0)
        result.energy_j_to_target = result.energy_j  # the trial stops at the crossing: everything measured led to it
