"""How each pruner an experiment can name is built: a builder per name, given time-bucket steps.

The pruners are declared in tuner/study/experiment/pruner_kinds.py (what each does, whether trials
report to it, whether it serves several objectives), which the experiment's settings read;
``PRUNER_BUILDERS`` gives each of those names its builder, ``make_pruner``
(tuner/study/stopping/by_name.py) builds the named one with it, and a test holds the two to the same
names (tests/test_registry_pairs.py), so a name that loads always opens. Adding a
pruner is a declaration there and a builder here; a pruner of our own gets a module beside this
one, as ``equal_time.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import optuna
from optuna.pruners import BasePruner

from tuner.study.experiment.settings import Objective, Pruning
from tuner.study.stopping.equal_time import EqualTimePruner

WILCOXON_P = 0.1  # Optuna's default threshold


@dataclass(frozen=True)
class Steps:
    """What a builder is given: the experiment's pruning settings and objective, in time-bucket steps."""

    pruning: Pruning
    objective: Objective
    warmup_s: float
    warmup_steps: int
    bucket_s: float
    last_step: int  # the per-trial cap, in buckets: the last step a trial can report


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
    return optuna.pruners.HyperbandPruner(min_resource=max(1, s.warmup_steps), max_resource=s.last_step, reduction_factor=3)


def _wilcoxon(s: Steps) -> BasePruner:
    # A paired test of this trial's curve against the best trial's, bucket by bucket:
    # it fits when curves are comparable point by point, as equal-time buckets make them.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning, message="WilcoxonPruner")
    return optuna.pruners.WilcoxonPruner(p_threshold=WILCOXON_P, n_startup_steps=max(2, s.warmup_steps))


def _none(s: Steps) -> BasePruner:
    return optuna.pruners.NopPruner()


# Keyed by the names of tuner/study/experiment/pruner_kinds.py: PRUNER_KINDS, in its order.
PRUNER_BUILDERS: dict[str, Callable[[Steps], BasePruner]] = {
    # auto: where the budget rule has not resolved it (tuner/study/stopping/budget_rule.py), what it picks at large budgets.
    "auto": _equal_time,
    "equal_time": _equal_time,
    "median": _median,
    "percentile": _percentile,
    "successive_halving": _successive_halving,
    "hyperband": _hyperband,
    "wilcoxon": _wilcoxon,
    "none": _none,
}
