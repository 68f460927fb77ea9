"""Every pruner an experiment can name, declared once: what it does, what it needs, and how it is built.

``PRUNER_KINDS`` is the one list of names: ``pruner.name`` accepts them when an experiment file is
loaded (tuner/study/run/experiment_file.py, which also refuses one that does not serve several
objectives beside them), ``make_pruner`` (tuner/study/stopping/by_name.py) builds the named one with
its builder, fed with time buckets as steps, trials report to those that read reported values, and
the documentation's table of pruners is written from it (tuner/docs_reference.py). Adding a pruner
is a builder and an entry here; a pruner of our own gets a module beside this one, as
``equal_time.py``.
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


@dataclass(frozen=True)
class PrunerKind:
    """One pruner: what it does, its builder, whether it reads reported values, whether it serves several objectives."""

    name: str
    summary: str
    build: Callable[[Steps], BasePruner]
    # Optuna's pruners read intermediate values at equal steps, so a trial reports one at every
    # time bucket; equal-time pruning reads the stored curves and the live trial directly.
    reports: bool = True
    # Whether it runs in a study of several objectives: Optuna refuses reported values in one.
    several: bool = False


PRUNER_KINDS: dict[str, PrunerKind] = {
    kind.name: kind
    for kind in (
        PrunerKind(
            "auto",
            "the budget rule picks `successive_halving` or `equal_time` from the budget in trial-lengths"
            " (`equal_time` with several objectives)",
            # Where the budget rule has not resolved it (tuner/study/stopping/budget_rule.py), what it picks at large budgets.
            _equal_time,
            reports=False,
            several=True,
        ),
        PrunerKind(
            "equal_time",
            "stops a trial behind the others' `percentile` at the same time on the objective's clock",
            _equal_time,
            reports=False,
            several=True,
        ),
        PrunerKind("median", "Optuna's `MedianPruner` on time buckets", _median),
        PrunerKind("percentile", "Optuna's `PercentilePruner` on time buckets, at `percentile`", _percentile),
        PrunerKind("successive_halving", "Optuna's `SuccessiveHalvingPruner` on time buckets (reduction factor 3)", _successive_halving),
        PrunerKind("hyperband", "Optuna's `HyperbandPruner` on time buckets, up to the per-trial cap (reduction factor 3)", _hyperband),
        PrunerKind(
            "wilcoxon",
            "Optuna's `WilcoxonPruner`: a paired test of the trial's curve against the best trial's, bucket by bucket",
            _wilcoxon,
        ),
        PrunerKind("none", "no pruning (capping at the incumbent still applies)", _none, reports=False, several=True),
    )
}
# Optuna's pruners read reported intermediate values, which Optuna refuses in a
# multi-objective study; equal-time pruning reads the stored curves instead. (auto serves
# several objectives too: it resolves to equal_time there.)
PRUNERS_FOR_SEVERAL = tuple(name for name, kind in PRUNER_KINDS.items() if kind.several and name != "auto")
