"""Is tonight slower than its history says it should be? The noise is measured from history.

A value regressed when it is above the history's median by more than the tolerance, which
is three robust standard deviations of the history (1.4826 x the median absolute
deviation, relative to the median), and never less than ``MIN_TOLERANCE``: with few
points, or a history that happened to be very steady, the floor keeps ordinary noise from
raising the alarm. Fewer than ``MIN_HISTORY`` earlier values give no verdict at all.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from tuner.study.scoring.objectives import words
from tuner.study.scoring.units import with_unit

MIN_TOLERANCE = 0.10
NOISE_SIGMAS = 3.0
MIN_HISTORY = 3  # fewer earlier values measure no noise: no verdict yet


@dataclass(frozen=True)
class Verdict:
    """Tonight's value against its history; ``status`` is ok, regressed, improved or no history."""

    status: str
    value: float | None
    baseline: float | None = None  # the history's median
    tolerance: float | None = None  # relative: regressed above baseline x (1 + tolerance)
    change: float | None = None  # relative to the baseline: +0.25 is 25% slower
    n_history: int = 0
    # What the values are: the objective's unit, what it minimizes and the target (``loss <= 1.6``);
    # a verdict stored before they were kept was of seconds to the target.
    unit: str = "s"
    minimize: str = "time"
    target: str = "the target"

    @property
    def regressed(self) -> bool:
        return self.status == "regressed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """A few words: '41% slower to reach loss <= 1.6: 0.296 s against 0.210 s (tolerance 12%, 6 earlier values)'."""
        if self.baseline is None:
            return f"not judged yet ({self.n_history} earlier values, {MIN_HISTORY} needed)"
        history = with_unit(self.baseline, self.unit)
        if self.change is None:
            return f"nothing reached {self.target}, against {history} in history"
        better, worse = words(self.minimize)
        word = worse if self.change > 0 else better
        return (
            f"{abs(self.change):.0%} {word} to reach {self.target}: {with_unit(self.value, self.unit)} against {history} "
            f"(tolerance {self.tolerance:.0%}, {self.n_history} earlier values)"
        )


def tolerance(history: list[float], floor: float = MIN_TOLERANCE) -> float:
    """The relative change that history's own noise explains."""
    centre = statistics.median(history)
    if centre <= 0:
        return floor
    mad = statistics.median(abs(v - centre) for v in history)
    return max(floor, NOISE_SIGMAS * 1.4826 * mad / centre)


def judge(
    value: float | None,
    history: list[float],
    floor: float = MIN_TOLERANCE,
    unit: str = "s",
    minimize: str = "time",
    target: str = "the target",
) -> Verdict:
    """Tonight's ``value`` (None: nothing reached the target) against ``history`` (lower is better);
    ``unit``, ``minimize`` and ``target`` say what the values are (``Verdict``)."""
    what = {"unit": unit, "minimize": minimize, "target": target}
    if len(history) < MIN_HISTORY:
        return Verdict("no history", value, n_history=len(history), **what)
    baseline = statistics.median(history)
    tol = tolerance(history, floor)
    if value is None:
        return Verdict("regressed", None, baseline, tol, None, len(history), **what)
    change = value / baseline - 1 if baseline > 0 else 0.0
    status = "regressed" if change > tol else "improved" if change < -tol else "ok"
    return Verdict(status, value, baseline, tol, change, len(history), **what)
