"""A run's wall-clock deadline, and the rule that no run starts that cannot finish by it.

The rule is for runs of known length (the queued confirmation and baseline runs, a nightly
canary); the search's deadline (tuner/study/run/reserve.py: SearchDeadline) starts a trial
whenever search time is left, and ends it there.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import optuna
from optuna.trial import FrozenTrial

from tuner.study.record import FINISHED, records


class Deadline:
    """A point on the trainer's clock (``now``: ``time.perf_counter``, or a simulation's virtual
    clock, tuner/simulate/virtual_time.py) by which the run must end.

    ``at`` is what the trainer receives: a trial still running there ends as
    `interrupted`. The Optuna callback stops the study before a trial that could not
    finish in what is left: a trial may take up to the per-trial cap on the objective
    clock, and its wall time is longer by setup and evaluation, so the longest wall time
    a trial of this study has taken counts too.
    """

    def __init__(self, seconds: float, cap_s: float, now: Callable[[], float] = time.perf_counter) -> None:
        self.now = now
        self.at = now() + seconds
        self.cap_s = cap_s
        self.stopped_early = False

    def left(self) -> float:
        return self.at - self.now()

    def trial_needs(self, study: optuna.Study) -> float:
        """The longest one trial may take: the cap, or longer if a trial here took longer."""
        walls = [r.result.wall_s for r in records(study, FINISHED) if r.result is not None]
        return max([self.cap_s, *walls])

    def fits_another(self, study: optuna.Study) -> bool:
        fits = self.left() >= self.trial_needs(study)
        self.stopped_early = self.stopped_early or not fits
        return fits

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if not self.fits_another(study):
            study.stop()
