"""Learning curves on the objective's clock: best accuracy so far at any elapsed time."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from tuner.study.record import TrialRecord
from tuner.train.curve import running_best
from tuner.train.result import Outcome

# Outcomes after which a trial's best accuracy is known to hold: it stopped because it
# succeeded, ran out of its cap or schedule, or broke; not because someone cut it short.
NATURAL_ENDS = (Outcome.REACHED, Outcome.TIMEOUT, Outcome.DIVERGED, Outcome.OOM)


@dataclass(frozen=True)
class Curve:
    """Evaluations of one trial: times on one clock (ascending) and best accuracy so far.

    ``holds`` says whether the curve may be extended past its last evaluation: true for a
    trial that ended naturally, false for one that was pruned or capped (what it would
    have reached later is unknown).
    """

    times: tuple[float, ...]
    best: tuple[float, ...]
    holds: bool

    @classmethod
    def from_points(cls, times: list[float], metrics: list[float], holds: bool) -> Curve:
        return cls(tuple(times), tuple(running_best(metrics)), holds)

    @property
    def end_s(self) -> float:
        return self.times[-1] if self.times else 0.0

    def best_at(self, t: float) -> float | None:
        """Best accuracy reached by elapsed time ``t``; None when the curve says nothing there.

        Before the first evaluation nothing was reached yet (-inf); past the end the last
        best holds only for a natural end.
        """
        if t > self.end_s and not self.holds:
            return None
        i = bisect.bisect_right(self.times, t)
        return self.best[i - 1] if i else -math.inf


def curve_of(trial: TrialRecord, clock: str) -> Curve | None:
    """The best-so-far curve of a finished trial's stored evaluations, on ``clock``."""
    stored = trial.curve
    times = stored.times(clock) if stored is not None else None
    if not times:
        return None
    return Curve.from_points(list(times), list(stored.metric), holds=trial.outcome in NATURAL_ENDS)


def bucket_errors(times: list[float], metrics: list[float], bucket_s: float, first: int, last: int) -> list[float]:
    """Lower-is-better values for time buckets ``first..last``: 1 - best accuracy by ``k * bucket_s``.

    A bucket's value only counts evaluations done by its time, so step ``k`` means the same
    elapsed time for every trial; before any evaluation the error is 1.
    """
    curve = Curve.from_points(times, metrics, holds=True)
    out = []
    for k in range(first, last + 1):
        best = curve.best_at(k * bucket_s + 1e-12)  # a float sum may land a hair past the grid
        out.append(1.0 - best if best is not None and best > -math.inf else 1.0)
    return out
