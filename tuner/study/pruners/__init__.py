"""Stopping trials early: equal-time pruning, Optuna's pruners by name, capping at the incumbent."""

from tuner.study.pruners.by_name import REPORTING_PRUNERS, make_pruner
from tuner.study.pruners.curves import Curve, bucket_errors, curve_of
from tuner.study.pruners.equal_time import EqualTimePruner, Verdict
from tuner.study.pruners.hooks import PruningHooks
from tuner.study.pruners.incumbent import Best, Incumbent, best_reached

__all__ = [
    "REPORTING_PRUNERS",
    "Best",
    "Curve",
    "EqualTimePruner",
    "Incumbent",
    "PruningHooks",
    "Verdict",
    "best_reached",
    "bucket_errors",
    "curve_of",
    "make_pruner",
]
