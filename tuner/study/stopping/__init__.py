"""Stopping trials early: equal-time pruning, Optuna's pruners by name, capping at the incumbent.

The root re-exports only what imports none of the experiment's settings, since those read the
pruners' registry here (tuner/study/experiment/settings.py): the hooks that wire pruning and
capping into a study, and the incumbent, are imported from their modules (``hooks``, ``incumbent``).
"""

from tuner.study.stopping.by_name import REPORTING_PRUNERS, make_pruner
from tuner.study.stopping.curves import Curve, bucket_errors, curve_of
from tuner.study.stopping.equal_time import Comparison, EqualTimePruner
from tuner.study.stopping.pruner_registry import PRUNER_KINDS, PrunerKind

__all__ = [
    "PRUNER_KINDS",
    "REPORTING_PRUNERS",
    "Comparison",
    "Curve",
    "EqualTimePruner",
    "PrunerKind",
    "bucket_errors",
    "curve_of",
    "make_pruner",
]
