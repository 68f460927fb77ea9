"""The incumbent: the best time to target so far, read from the study's storage."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from tuner.study.reruns.baseline import baseline_reached
from tuner.study.reruns.racing import best_in_study
from tuner.study.scoring.pareto import time_to_beat
from tuner.train.result import Outcome
from tuner.train.verdict import GO, Stop, Verdict

REFRESH_S = 2.0  # storage reads stay off the hot path: at most one per this many seconds


@dataclass(frozen=True)
class Best:
    """The fastest finished trial that reached the target."""

    value: float
    number: int
    what: str = "the best time to target so far"  # how a capping reason names it


def best_reached(study: optuna.Study) -> Best | None:
    """The incumbent from any worker: the best median over a configuration's runs once it
    has been raced on more seeds, else the lowest single time (tuner/study/reruns/racing.py);
    or the baseline's median time, when lower: it is the study's first trial, and a search
    trial slower than what the user has cannot win (tuner/study/reruns/baseline.py)."""
    best = best_in_study(study)
    found = Best(float(best.median), best.trial.number) if best is not None else None
    baseline = baseline_reached(study)
    if baseline is not None and (found is None or baseline[0] < found.value):
        return Best(baseline[0], baseline[1], "the baseline's time to target")
    return found


def capped(now: float, best: Best | None, slack: float, clock: str) -> Verdict:
    """Capping at the incumbent as a stop rule: stop as capped once the objective's clock ``now``
    reaches ``best`` x ``slack`` (that time is the bound the trial's score is floored at,
    tuner/study/scoring/censoring.py); go on before it, or while no trial has reached the target."""
    if best is None or now < best.value * slack:
        return GO
    return Stop(
        Outcome.CAPPED,
        f"{clock} clock at {now:.3f} s passed {slack:g} x {best.what}, {best.value:.3f} s (trial {best.number}): it can no longer win",
        bound_s=best.value * slack,
    )


def front_incumbent(known: dict[str, float]) -> Callable[[optuna.Study], Best | None]:
    """For a study of several objectives: reads the time a trial with these known values must
    beat to stay off the dominated side of the front (``time_to_beat``, tuner/study/scoring/pareto.py)."""

    def read(study: optuna.Study) -> Best | None:
        beat = time_to_beat(study, known)
        if beat is None:
            return None
        names = ", ".join(f"{k}" for k in known)
        return Best(beat[0], beat[1], f"the time of the fastest point on the Pareto front with no larger {names}")

    return read


class Incumbent:
    """A cached view of ``best_reached``, refreshed at most every ``refresh_s`` seconds.

    The storage is the only place every worker of a study writes to, so reading it there
    lets a trial on one machine be capped by a time found on another.
    """

    def __init__(
        self,
        refresh_s: float = REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
        read: Callable[[optuna.Study], Best | None] = best_reached,
    ) -> None:
        self.refresh_s = refresh_s
        self.clock = clock
        self.read = read  # another incumbent: a front's point to beat (tuner/study/scoring/pareto.py)
        self._best: Best | None = None
        self._read_at = -float("inf")

    def get(self, study: optuna.Study, force: bool = False) -> Best | None:
        now = self.clock()
        if force or now - self._read_at >= self.refresh_s:
            self._best = self.read(study)
            self._read_at = now
        return self._best
