"""The pruner an experiment names, built by its entry in tuner/study/stopping/pruner_registry.py
and fed with time buckets as steps."""

from __future__ import annotations

import math

from optuna.pruners import BasePruner

from tuner.study.experiment.settings import Objective, Pruning
from tuner.study.stopping.pruner_registry import PRUNER_KINDS, Steps

# The pruners a trial reports intermediate values to at every time bucket (Optuna's own).
REPORTING_PRUNERS = tuple(name for name, kind in PRUNER_KINDS.items() if kind.reports)


def make_pruner(pruning: Pruning, objective: Objective) -> BasePruner:
    """The named pruner, with warm-up and minimum trials translated into time-bucket steps.

    Step ``k`` means ``k * bucket_s`` seconds on the objective's clock for every trial, and
    values are the target's lower-is-better error of the best metric so far (``1 - best accuracy``,
    a minimized metric's own value; tuner/train/target.py), as the study minimises time.
    """
    bucket = pruning.bucket_for(objective.cap_s)
    warmup = pruning.warmup_for(objective.cap_s)
    kind = PRUNER_KINDS.get(pruning.name)
    if kind is None:
        raise ValueError(f"unknown pruner {pruning.name!r}")
    return kind.build(Steps(pruning, objective, warmup, math.ceil(warmup / bucket - 1e-9), bucket, n_buckets(pruning, objective)))


def n_buckets(pruning: Pruning, objective: Objective) -> int:
    """The last step a trial can report: the per-trial cap, in buckets."""
    return max(1, math.ceil(objective.cap_s / pruning.bucket_for(objective.cap_s) - 1e-9))
