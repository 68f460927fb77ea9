"""Learning curves on the objective's clock: the best metric so far at any elapsed time, in the target's direction."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from tuner.study.record import TrialRecord
from tuner.train.result import Outcome
from tuner.train.target import ACCURACY, Target

# Outcomes after which a trial's best metric is known to hold: it stopped because it
# succeeded, ran out of its cap or schedule, or broke; not because someone cut it short.
NATURAL_ENDS = (Outcome.REACHED, Outcome.TIMEOUT, Outcome.DIVERGED, Outcome.OOM)


@dataclass(frozen=True)
class Curve:
    """Evaluations of one trial: times on one clock (ascending) and the best metric so far.

    ``holds`` says whether the curve may be extended past its last evaluation: true for a
    trial that ended naturally, false for one that was pruned or capped (what it would
    have reached later is unknown).
    """

    times: tuple[float, ...]
    best: tuple[float, ...]
    holds: bool
    target: Target = ACCURACY  # the direction "best" is taken in

    @classmethod
    def from_points(cls, times: list[float], metrics: list[float], holds: bool, target: Target = ACCURACY) -> Curve:
        return cls(tuple(times), tuple(target.running_best(metrics)), holds, target)

    @property
    def end_s(self) -> float:
        return self.times[-1] if self.times else 0.0

    def best_at(self, t: float) -> float | None:
        """The best metric reached by elapsed time ``t``; None when the curve says nothing there.

        Before the first evaluation nothing was reached yet (the target's ``worst``: -inf for
        a maximized metric); past the end the last best holds only for a natural end.
        """
        if t > self.end_s and not self.holds:
            return None
        i = bisect.bisect_right(self.times, t)
        return self.best[i - 1] if i else self.target.worst


def curve_of(trial: TrialRecord, clock: str, target: Target = ACCURACY) -> Curve | None:
    """The best-so-far curve of a finished trial's stored evaluations, on ``clock``."""
    stored = trial.curve
    times = stored.times(clock) if stored is not None else None
    if not times:
        return None
    return Curve.from_points(list(times), list(stored.metric), holds=trial.outcome in NATURAL_ENDS, target=target)


def bucket_errors(
    times: list[float], metrics: list[float], bucket_s: float, first: int, last: int, target: Target = ACCURACY
) -> list[float]:
    """Lower-is-better values for time buckets ``first..last``: the target's ``error`` of the best
    metric by ``k * bucket_s`` (1 - best accuracy; a minimized metric's own value).

    A bucket's value only counts evaluations done by its time, so step ``k`` means the same
    elapsed time for every trial; before any evaluation the error is the target's for no
    value (1 for an accuracy).
    """
    curve = Curve.from_points(times, metrics, holds=True, target=target)
    return [target.error(curve.best_at(k * bucket_s + 1e-12)) for k in range(first, last + 1)]  # a float sum may land a hair past the grid
