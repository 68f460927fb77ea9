"""The objective: time to the target, with the censoring rules for trials that missed or were stopped.

The target is a value of a held-out metric in a direction (tuner/train/target.py's
``Target``: accuracy >= 0.9, loss <= 1.6); ``gap`` is how far a value is from it in that
direction (0 when reached). Four kinds of trial, one formula each (``objective_value``):

- **reached**: seconds to the first crossing on the objective's clock (at most ``cap_s``).
- **missed** (timeout, diverged, out of memory, pruned): ``cap_s x (1 + miss_gap(best))``,
  always above every reached trial; among misses, closer to the target is better. The
  normalised gap ``miss_gap`` lies in [0, 1], so a miss scores between ``cap_s`` and
  ``2 x cap_s`` and scores compare across the trials of one study:

  - an accuracy-like fraction maximized to a target in (0, 1]: ``target - best`` (no
    evaluation, or a NaN one, counts as best = 0), i.e. ``cap_s x (1 + (target - best))``;
  - any other metric, in either direction: ``g / (1 + g)`` with ``g = gap(best) / |target|``
    (the target's size fixes the scale for the whole study; 1 for a target of 0), and 1
    without a measured best. Against a loss target of 1.6, a miss at 2.1 scores
    ``1.24 x cap_s`` and one at 3.5 ``1.54 x cap_s``.
- **screened** (tuner/study/stopping/screen.py): ended after its first timed steps, because at
  their step time even the fewest samples any trial needed would take it past the
  incumbent x slack. It scores that projection, a lower bound of its time to target (by
  the screen's assumption it needs no fewer samples), never under the bound it was screened against. A projection past ``cap_s`` scores
  ``cap_s``: the trial would have missed, and a miss scores at least that (its metric,
  which the miss formula needs, was never measured).
- **stopped at the incumbent** (capped): the trial was stopped because
  it could no longer win, so its value must never rank it better than the incumbent it was
  stopped against, and how far it was from the target must count. It scores a lower bound
  of its time to target extrapolated from its own curve:
  ``t_stop + gap(best) / rate``, where ``rate`` is how fast its best closed the gap per
  second over the second half of its run (an accuracy-like fraction starts from the origin,
  0 s and 0, so one evaluation is enough; another metric needs two), never below
  ``max(t_stop, bound)`` (``bound``: incumbent x slack, ``TrialResult.bound_s``).
  Learning curves in time are concave once past warm-up, so the recent rate overstates the
  rate to come and the extrapolation is optimistic: a lower bound. When it lands past
  ``cap_s`` (or the curve is flat), the trial would not have reached the target within the
  cap either, and it scores as the miss it effectively is.

Why this rule (measured by benchmarks/stopped_scores.py): on 21 trials of
experiments/mnist1d_cnn.yaml run without pruning or capping (TPE, cap 12 s, one thread, a
shared 2-core CPU; 5 reached the target), each trial was cut where capping at 1.2 x an
incumbent (the 1st, 2nd and 3rd fastest time) would have stopped it and scored by each
rule; the table gives the share of trial pairs that the scores order as the true times to
target do (misses last; 1.00 is a perfect ranking):

  rule                                   incumbent 2.09 s   3.79 s   4.04 s
  stop clock (the former rule)           0.79               0.88     0.97
  max(t_stop, bound) x (1 + gap)         0.87               0.96     1.00
  miss formula at the cap                0.90               0.99     1.00
  curve extrapolation (this rule)        0.92               1.00     0.99

The former rule let a trial capped at 21% accuracy score 0.953 s, better than trials that
reached the target in 0.980 s: the sampler learnt that its region was as good as the
incumbent. Extrapolation ranks stopped trials best, never below the incumbent; a trial
stopped far from the target extrapolates past the cap and ranks behind every trial that
reached it. Few trials reached the target in that study: the ranking is a measurement on
one small sample, not a proof.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tuner.train import clocks
from tuner.train.clocks import CLOCK_FIELDS
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.target import Target, as_target

if TYPE_CHECKING:
    from tuner.study.experiment.load import Objective

# Outcomes that end as a FAIL trial in Optuna: they say nothing about the configuration.
NOT_SCORED = (Outcome.FAILED, Outcome.INTERRUPTED)
# Outcomes of a trial stopped because it could no longer beat the incumbent.
STOPPED = tuple(o for o in Outcome if o.value in ("capped", "screened"))


def objective_value(
    result: TrialResult, objective: Objective | None = None, *, clock: str | None = None, cap_s: float | None = None
) -> float:
    """Seconds to the target on the objective's clock; a trial that missed or was stopped is censored.

    ``objective`` is the experiment's (its ``clock`` and ``cap_s`` are used; the target is
    the result's own). Without an experiment, as around a training loop of one's own, pass
    ``clock=`` and ``cap_s=`` instead. The rules are in the module docstring.
    """
    charged = 0.0
    if objective is not None:
        clock, cap_s = objective.clock, objective.cap_s
        charged = charged_setup_s(result, objective)
    if clock is None or cap_s is None:
        raise TypeError("objective_value() takes an Objective, or both clock= and cap_s=")
    if result.outcome is Outcome.SCREENED:
        return screened_value(result, cap_s)
    if result.outcome in STOPPED:
        return stopped_value(result, clock, cap_s, charged)
    if result.reached:
        value = result.time_to_target(clock)
        assert value is not None
        return min(value + charged, cap_s)
    return miss_value(result.goal, result.best_metric, cap_s)


def run_seconds(result: TrialResult, objective: Objective) -> float:
    """One run's length on the objective's clock: its time to target, setup charged as the
    objective says, or, when it missed, the time it ran. The auto cap is set from the
    baseline's (tuner/study/run/auto_cap.py), an export's cap from its slowest reached run."""
    if result.reached:
        return (result.time_to_target(objective.clock) or 0.0) + charged_setup_s(result, objective)
    return result.elapsed(objective.clock)


def charged_setup_s(result: TrialResult, objective: Objective) -> float:
    """One-time setup the objective adds to the trial's clock: torch.compile's warm-up when the
    experiment charges setup (``objective.charge_setup``); the wall clock holds it already."""
    return clocks.charged_setup_s(result.compile_s, objective.clock, objective.charge_setup)


def miss_value(target: float | Target, best_metric: float | None, cap_s: float) -> float:
    """``cap_s x (1 + miss_gap(best))`` (module docstring); a bare number is an accuracy target,
    for which this is ``cap_s x (1 + (target - best))`` and no evaluation counts as best = 0."""
    return cap_s * (1.0 + as_target(target).miss_gap(best_metric))


def screened_value(result: TrialResult, cap_s: float) -> float:
    """A screened trial's projected time to target, never under the bound it was screened
    against; ``cap_s`` when the projection passes the cap (a miss scores at least that)."""
    projected = max(result.screen_projected_s or 0.0, result.bound_s or 0.0)
    return min(projected, cap_s)


def stopped_value(result: TrialResult, clock: str, cap_s: float, charged: float = 0.0) -> float:
    """A stopped trial's lower bound on its time to target (module docstring), or its miss value."""
    stop = result.elapsed(clock)
    floor = max(stop + charged, result.bound_s or 0.0)
    evaluations = result.evaluations
    if not evaluations and result.best_metric is not None:
        # A result read back from a record keeps no evaluations: its best at its stop stands in.
        evaluations = [Evaluation(result.samples, result.steps, result.best_metric, None, None, stop, stop, stop, stop)]
    estimate = max(floor, extrapolated_time(evaluations, clock, result.goal) + charged)
    if estimate < cap_s:
        return estimate
    return miss_value(result.goal, result.best_metric, cap_s)


def extrapolated_time(evaluations: Sequence[Evaluation], clock: str, target: float | Target) -> float:
    """When the best metric would reach ``target`` at the rate it closed the gap over the second half of the run.

    For an accuracy-like fraction (a bare number is one) the origin (0 s, metric 0) stands
    before the first evaluation, so one evaluation is enough; any other metric has no known
    start and needs two. Infinite when the best metric did not improve.
    """
    goal = as_target(target)
    measured = [ev for ev in evaluations if not math.isnan(ev.metric)]  # a NaN metric says nothing about the rate
    origin = [0.0] if goal.fraction else []
    times = [*origin, *(getattr(ev, CLOCK_FIELDS[clock]) for ev in measured)]
    best = goal.running_best([*origin, *(ev.metric for ev in measured)])
    if len(times) < 2:
        return math.inf
    k = min(next(i for i, t in enumerate(times) if t >= times[-1] / 2), len(times) - 2)
    gain, span = goal.gap(best[k]) - goal.gap(best[-1]), times[-1] - times[k]
    if gain <= 0 or span <= 0:
        return math.inf
    return times[-1] + goal.gap(best[-1]) * span / gain
