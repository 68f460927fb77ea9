"""The pruner an experiment names, fed with time buckets as steps.

Each pruner is declared in tuner/study/experiment/pruners.py; ``BUILDERS`` here builds each
declared name, and this module refuses to import when one has no builder, so a name the
experiment file accepts always opens.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import optuna
from optuna.pruners import BasePruner

from tuner.study.experiment.load import Objective, Pruning
from tuner.study.experiment.pruners import PRUNER_KINDS
from tuner.study.stopping.equal_time import EqualTimePruner

# The pruners a trial reports intermediate values to at every time bucket (Optuna's own).
REPORTING_PRUNERS = tuple(name for name, kind in PRUNER_KINDS.items() if kind.reports)
WILCOXON_P = 0.1  # Optuna's default threshold


@dataclass(frozen=True)
class Steps:
    """What a builder is given: the experiment's pruning settings and objective, in time-bucket steps."""

    pruning: Pruning
    objective: Objective
    warmup_s: float
    warmup_steps: int
    bucket_s: float


def _equal_time(s: Steps) -> BasePruner:
    p = s.pruning
    return EqualTimePruner(s.bucket_s, p.percentile, s.warmup_s, p.min_trials, s.objective.clock, s.objective.goal)


def _median(s: Steps) -> BasePruner:
    p = s.pruning
    return optuna.pruners.MedianPruner(n_startup_trials=p.min_trials, n_warmup_steps=s.warmup_steps, n_min_trials=p.min_trials)


def _percentile(s: Steps) -> BasePruner:
    p = s.pruning
    return optuna.pruners.PercentilePruner(
        p.percentile, n_startup_trials=p.min_trials, n_warmup_steps=s.warmup_steps, n_min_trials=p.min_trials
    )


def _successive_halving(s: Steps) -> BasePruner:
    return optuna.pruners.SuccessiveHalvingPruner(min_resource=max(1, s.warmup_steps), reduction_factor=3)


def _hyperband(s: Steps) -> BasePruner:
    return optuna.pruners.HyperbandPruner(
        min_resource=max(1, s.warmup_steps), max_resource=n_buckets(s.pruning, s.objective), reduction_factor=3
    )


def _wilcoxon(s: Steps) -> BasePruner:
    # A paired test of this trial's curve against the best trial's, bucket by bucket:
    # it fits when curves are comparable point by point, as equal-time buckets make them.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning, message="WilcoxonPruner")
    return optuna.pruners.WilcoxonPruner(p_threshold=WILCOXON_P, n_startup_steps=max(2, s.warmup_steps))


BUILDERS: dict[str, Callable[[Steps], BasePruner]] = {
    # auto, where the budget rule has not resolved it (tuner/study/stopping/budget_rule.py): what it picks at large budgets.
    "auto": _equal_time,
    "equal_time": _equal_time,
    "median": _median,
    "percentile": _percentile,
    "successive_halving": _successive_halving,
    "hyperband": _hyperband,
    "wilcoxon": _wilcoxon,
    "none": lambda s: optuna.pruners.NopPruner(),
}
if BUILDERS.keys() != PRUNER_KINDS.keys():  # the experiment file would accept a name that cannot open
    raise ImportError(f"pruners declared and built differ: {sorted(BUILDERS.keys() ^ PRUNER_KINDS.keys())}")


def make_pruner(pruning: Pruning, objective: Objective) -> BasePruner:
    """The named pruner, with warm-up and minimum trials translated into time-bucket steps.

    Step ``k`` means ``k * bucket_s`` seconds on the objective's clock for every trial, and
    values are the target's lower-is-better error of the best metric so far (``1 - best accuracy``,
    a minimized metric's own value; tuner/train/target.py), as the study minimises time.
    """
    bucket = pruning.bucket_for(objective.cap_s)
    warmup = pruning.warmup_for(objective.cap_s)
    builder = BUILDERS.get(pruning.name)
    if builder is None:
        raise ValueError(f"unknown pruner {pruning.name!r}")
    return builder(Steps(pruning, objective, warmup, math.ceil(warmup / bucket - 1e-9), bucket))


def n_buckets(pruning: Pruning, objective: Objective) -> int:
    """The last step a trial can report: the per-trial cap, in buckets."""
    return max(1, math.ceil(objective.cap_s / pruning.bucket_for(objective.cap_s) - 1e-9))
