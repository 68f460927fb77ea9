"""The objective: time to accuracy, with the censoring rule for trials that missed."""

from __future__ import annotations

import math

from tuner.train.result import Outcome, TrialResult

# Outcomes that end as a FAIL trial in Optuna: they say nothing about the configuration.
NOT_SCORED = (Outcome.FAILED, Outcome.INTERRUPTED)


def objective_value(result: TrialResult, clock: str, cap_s: float) -> float:
    """Seconds to the target on ``clock``; a trial that missed is censored.

    A miss scores ``cap_s * (1 + (target - best_metric))``: always at least ``cap_s``, so
    worse than every trial that reached the target (a reached time never exceeds the cap),
    and among misses the one that came closer to the target is better. A miss with no
    evaluation at all (or a NaN metric) counts as best_metric = 0.

    A capped trial was stopped once its clock passed the incumbent's time (times a slack):
    it scores that clock reading, a lower bound of its time to target. This tells the
    sampler "not faster than the best", where a pruned state would rank it below every
    trial that missed the target by far.
    """
    if result.outcome is Outcome.CAPPED:
        return min(result.elapsed(clock), cap_s)
    if result.reached:
        value = result.time_to_target(clock)
        assert value is not None
        return min(value, cap_s)
    best = result.best_metric if result.best_metric is not None else 0.0
    if math.isnan(best):
        best = 0.0  # max(0, target - nan) is 0: a NaN metric would otherwise tie with a hit at the cap
    return cap_s * (1.0 + max(0.0, result.target - best))
