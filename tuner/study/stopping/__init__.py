"""Stopping trials early: equal-time pruning, Optuna's pruners by name, capping at the incumbent."""

from tuner.study.stopping.by_name import REPORTING_PRUNERS, make_pruner
from tuner.study.stopping.curves import Curve, bucket_errors, curve_of
from tuner.study.stopping.equal_time import Comparison, EqualTimePruner
from tuner.study.stopping.hooks import PruningHooks
from tuner.study.stopping.incumbent import Best, Incumbent, best_reached, capped

__all__ = [
    "REPORTING_PRUNERS",
    "Best",
    "Comparison",
    "Curve",
    "EqualTimePruner",
    "Incumbent",
    "PruningHooks",
    "best_reached",
    "bucket_errors",
    "capped",
    "curve_of",
    "make_pruner",
]
