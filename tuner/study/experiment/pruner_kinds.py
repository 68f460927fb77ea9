"""Every pruner an experiment can name, declared once: what it does and what it needs.

``PRUNER_KINDS`` is the one list of names: ``pruner.name`` accepts them when the experiment file is
loaded (tuner/study/experiment/settings.py, which also refuses one that does not serve several
objectives beside them), trials report to those that read reported values, and the documentation's
table of pruners is written from it (tuner/docs_reference.py). How each is built is the builder of
the same name in tuner/study/stopping/pruner_registry.py, which sits above the experiment's
settings; a test holds the two to the same names, so a name that loads always opens. Adding a
pruner is an entry here and a builder there.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrunerKind:
    """One pruner: what it does, whether it reads reported values, whether it serves several objectives."""

    name: str
    summary: str
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
            reports=False,
            several=True,
        ),
        PrunerKind(
            "equal_time",
            "stops a trial behind the others' `percentile` at the same time on the objective's clock",
            reports=False,
            several=True,
        ),
        PrunerKind("median", "Optuna's `MedianPruner` on time buckets"),
        PrunerKind("percentile", "Optuna's `PercentilePruner` on time buckets, at `percentile`"),
        PrunerKind("successive_halving", "Optuna's `SuccessiveHalvingPruner` on time buckets (reduction factor 3)"),
        PrunerKind("hyperband", "Optuna's `HyperbandPruner` on time buckets, up to the per-trial cap (reduction factor 3)"),
        PrunerKind("wilcoxon", "Optuna's `WilcoxonPruner`: a paired test of the trial's curve against the best trial's, bucket by bucket"),
        PrunerKind("none", "no pruning (capping at the incumbent still applies)", reports=False, several=True),
    )
}
