"""Equal-time pruning: compare trials at the same elapsed time, never at the same step."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import optuna
from optuna.pruners import BasePruner
from optuna.trial import FrozenTrial

from tuner.study.record import FINISHED, TrialRecord
from tuner.study.stopping.curves import Curve, curve_of
from tuner.train.result import Outcome
from tuner.train.target import ACCURACY, Target
from tuner.train.verdict import GO, Stop, Verdict


@dataclass(frozen=True)
class Comparison:
    """One comparison of a trial with the others at the same elapsed time, and the figures behind it."""

    prune: bool
    elapsed_s: float
    best: float  # the trial's best metric so far
    reference: float  # the metric the other trials' percentile had reached by then
    n_reference: int
    target: Target = ACCURACY  # the metric's name and direction

    def reason(self, percentile: float, clock: str) -> str:
        behind = "below" if self.target.maximize else "above"
        return (
            f"best {self.target.metric} {self.best:.4f} at {self.elapsed_s:.2f} s ({clock} clock) is {behind} {self.reference:.4f}, "
            f"which the best {percentile:g}% of {self.n_reference} other trials had reached by then"
        )

    def verdict(self, percentile: float, clock: str) -> Verdict:
        """Stop as pruned when the trial trails the others, else go on."""
        return Stop(Outcome.PRUNED, self.reason(percentile, clock)) if self.prune else GO


class EqualTimePruner(BasePruner):
    """Stop a trial whose best metric so far trails the others' at the same elapsed time.

    The others are the study's finished trials, read from the ``curve`` each one stores
    (times on the objective's clock, the metric at every evaluation). By elapsed time ``t`` a
    finished trial had reached the best metric it recorded up to ``t``, in the ``target``'s
    direction (an accuracy, maximized, by default); past its end that
    best holds when the trial ended naturally (reached, timed out, diverged), while a pruned
    or capped trial counts only up to where it was stopped.

    ``percentile`` has Optuna's meaning in the study's direction: the trial is kept when it
    is within the best ``percentile`` percent (50, the default, is the median).

    Two ways in: ``judge`` takes the live trial's elapsed time and best metric (what
    ``tuner.study.stopping.PruningHooks`` calls, with no storage write); ``prune`` is Optuna's
    interface and reads them from intermediate values reported as the target's lower-is-better
    ``error`` of the best metric (``1 - best accuracy``; a minimized metric's own value)
    with ``step = elapsed // bucket_s``.
    """

    def __init__(
        self,
        bucket_s: float,
        percentile: float = 50.0,
        warmup_s: float = 0.0,
        min_trials: int = 5,
        clock: str = "robust",
        target: Target = ACCURACY,
    ) -> None:
        if not 0.0 < percentile < 100.0:
            raise ValueError(f"percentile must be between 0 and 100 exclusive, but got {percentile}")
        if bucket_s <= 0:
            raise ValueError(f"bucket_s must be > 0, but got {bucket_s}")
        if min_trials < 1:
            raise ValueError(f"min_trials must be >= 1, but got {min_trials}")
        self.bucket_s = bucket_s
        self.percentile = percentile
        self.warmup_s = warmup_s
        self.min_trials = min_trials
        self.clock = clock
        self.target = target
        # Finished trials never change: parse each stored curve once (per study).
        self._curves: dict[tuple[int, int], Curve | None] = {}

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        step = trial.last_step
        if step is None:
            return False
        errors = [v for v in trial.intermediate_values.values() if not math.isnan(v)]  # the target's errors of the best so far
        best = self.target.from_error(min(errors, default=self.target.error(None)))
        comparison = self.judge(study, step * self.bucket_s, best, exclude=trial.number)
        return comparison is not None and comparison.prune

    def judge(self, study: optuna.Study, elapsed_s: float, best: float, exclude: int | None = None) -> Comparison | None:
        """The comparison for a trial at ``elapsed_s`` with best metric ``best``; None before the
        warm-up ends or without enough others."""
        if elapsed_s < self.warmup_s:
            return None
        errors = []
        for other in self._others(study, exclude):
            curve = self._curve(study, other)
            reached = curve.best_at(elapsed_s) if curve is not None else None
            if reached is not None:
                errors.append(self.target.error(reached))
        if len(errors) < self.min_trials:
            return None
        reference_error = float(np.percentile(errors, self.percentile))
        prune = self.target.error(best) > reference_error
        return Comparison(prune, elapsed_s, best, self.target.from_error(reference_error), len(errors), self.target)

    def _others(self, study: optuna.Study, exclude: int | None) -> list[FrozenTrial]:
        return [t for t in study.get_trials(deepcopy=False, states=FINISHED) if t.number != exclude]

    def _curve(self, study: optuna.Study, trial: FrozenTrial) -> Curve | None:
        key = (id(study._storage), trial._trial_id)
        if key not in self._curves:
            self._curves[key] = curve_of(TrialRecord.of(trial), self.clock, self.target)
        return self._curves[key]
