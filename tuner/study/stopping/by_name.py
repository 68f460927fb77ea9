"""The pruner an experiment names, fed with time buckets as steps."""

from __future__ import annotations

import math
import warnings

import optuna
from optuna.pruners import BasePruner

from tuner.study.experiment.load import Objective, Pruning
from tuner.study.stopping.equal_time import EqualTimePruner

# Optuna's pruners read intermediate values at equal steps, so they need every step
# reported; ours reads the stored curves and the live trial directly.
REPORTING_PRUNERS = ("median", "percentile", "successive_halving", "hyperband", "wilcoxon")
WILCOXON_P = 0.1  # Optuna's default threshold


def make_pruner(pruning: Pruning, objective: Objective) -> BasePruner:
    """The named pruner, with warm-up and minimum trials translated into time-bucket steps.

    Step ``k`` means ``k * bucket_s`` seconds on the objective's clock for every trial, and
    values are the target's lower-is-better error of the best metric so far (``1 - best accuracy``,
    a minimized metric's own value; tuner/train/target.py), as the study minimises time.
    """
    bucket = pruning.bucket_for(objective.cap_s)
    warmup = pruning.warmup_for(objective.cap_s)
    warmup_steps = math.ceil(warmup / bucket - 1e-9)
    name = pruning.name
    # auto, where the budget rule has not resolved it (tuner/study/stopping/budget_rule.py): what it picks at large budgets.
    if name in ("equal_time", "auto"):
        return EqualTimePruner(bucket, pruning.percentile, warmup, pruning.min_trials, objective.clock, objective.goal)
    if name == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=pruning.min_trials, n_warmup_steps=warmup_steps, n_min_trials=pruning.min_trials
        )
    if name == "percentile":
        return optuna.pruners.PercentilePruner(
            pruning.percentile, n_startup_trials=pruning.min_trials, n_warmup_steps=warmup_steps, n_min_trials=pruning.min_trials
        )
    if name == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=max(1, warmup_steps), reduction_factor=3)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=max(1, warmup_steps), max_resource=n_buckets(pruning, objective), reduction_factor=3
        )
    if name == "wilcoxon":
        # A paired test of this trial's curve against the best trial's, bucket by bucket:
        # it fits when curves are comparable point by point, as equal-time buckets make them.
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning, message="WilcoxonPruner")
        return optuna.pruners.WilcoxonPruner(p_threshold=WILCOXON_P, n_startup_steps=max(2, warmup_steps))
    if name == "none":
        return optuna.pruners.NopPruner()
    raise ValueError(f"unknown pruner {name!r}")


def n_buckets(pruning: Pruning, objective: Objective) -> int:
    """The last step a trial can report: the per-trial cap, in buckets."""
    return max(1, math.ceil(objective.cap_s / pruning.bucket_for(objective.cap_s) - 1e-9))
