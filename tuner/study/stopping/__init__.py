"""Stopping trials early: equal-time pruning, Optuna's pruners by name, capping at the incumbent.

The pruners are declared, with their builders, in ``PRUNER_KINDS``
(tuner/study/stopping/pruner_registry.py). The hooks that wire pruning and capping into a study, and the incumbent,
are imported from their modules (``hooks``, ``incumbent``).
"""

from tuner.study.stopping.by_name import REPORTING_PRUNERS, make_pruner
from tuner.study.stopping.curves import Curve, bucket_errors, curve_of
from tuner.study.stopping.equal_time import Comparison, EqualTimePruner
from tuner.study.stopping.pruner_registry import PRUNER_KINDS

__all__ = [
    "PRUNER_KINDS",
    "REPORTING_PRUNERS",
    "Comparison",
    "Curve",
    "EqualTimePruner",
    "bucket_errors",
    "curve_of",
    "make_pruner",
]
