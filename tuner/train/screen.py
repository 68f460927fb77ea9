"""The throughput pre-screen: a trial's first steps, timed, say whether it can still win.

The study (tuner/study/stopping/screen.py) hands a trial a ``ScreenRule`` before it trains: the time
past which it cannot win (the incumbent times the capping slack) and the fewest training
samples any trial of the study needed to reach the target. The trial trains as usual;
after ``warmup_steps`` steps (first-call costs: lazy initialisation, allocator, kernel
selection) its next ``steps`` steps are timed one by one, and their median step time
projects its time to the target were it as sample-efficient as the study's best:
``ceil(min_samples / samples per step) x median step`` (the robust clock's formula), plus
what the objective's clock holds beyond the steps (the setup on the wall clock, a charged
compile warm-up on the others). A projection at or past the bound ends the trial as
``screened``; otherwise the timed steps were ordinary training steps and it goes on.

Each timed step is synchronised with the device (deliberate: ``steps + 1`` syncs per
trial, none after the screen), so that on a GPU the time is the device's, not the host's
launch time; on a CPU a sync costs nothing.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass

from tuner.train.result import Outcome
from tuner.train.verdict import GO, Stop, Verdict


@dataclass(frozen=True)
class ScreenRule:
    """What the study tells a trial before it trains (see the module's docstring).

    ``bound_s`` is on the objective's clock; ``against`` names it in the reason
    (``"1.2 x the best time to target, 0.756 s (trial 3)"``). ``full_batch``: a growing
    batch's first steps are smaller than the batch it grows to; a step of the full batch
    takes no less time than a smaller one, so the projection counts full steps at the
    measured time (a looser lower bound, still a bound).
    """

    bound_s: float
    min_samples: int
    warmup_steps: int = 2
    steps: int = 5
    against: str = ""
    full_batch: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or self.warmup_steps < 0 or self.min_samples < 1:
            raise ValueError(f"a screen needs steps >= 1, warmup_steps >= 0 and min_samples >= 1, got {self}")


class ThroughputScreen:
    """The measurement and the verdict of one trial's pre-screen.

    ``TimeToTarget`` calls ``record`` at the end of each step up to ``last_step`` (one
    integer comparison per step decides that), then ``verdict`` once.
    """

    def __init__(self, rule: ScreenRule) -> None:
        self.rule = rule
        self.first_step = rule.warmup_steps  # the end of this step starts the timed window
        self.last_step = rule.warmup_steps + rule.steps
        # The train clock at the end of each step of the window, allocated once: index 0 is the
        # end of the last warm-up step (the start of training, 0 s, without warm-up).
        self._times = [0.0] * (rule.steps + 1)
        self.step_s: float | None = None  # the median time of one timed step
        self.screen_s: float | None = None  # the train clock when the verdict was made: the screen's own time
        self.projected_s: float | None = None  # the projected time to target on the objective's clock

    def record(self, step: int, train_s: float) -> bool:
        """Note the train clock at the end of ``step``; True once the window's last step is in."""
        k = step - self.first_step
        if k >= 0:
            self._times[k] = train_s
        return k == self.rule.steps

    def verdict(self, step_samples: int, offset_s: float, clock: str) -> Verdict:
        """``Stop`` as screened, with the rule's bound, when the projection is at or past the bound; else go on.

        ``offset_s`` is what the objective's clock holds besides the steps (setup, on the wall clock).
        """
        times = self._times
        self.step_s = statistics.median(b - a for a, b in itertools.pairwise(times))
        self.screen_s = times[-1]
        steps_needed = math.ceil(self.rule.min_samples / max(1, step_samples, self.rule.full_batch or 0))
        self.projected_s = steps_needed * self.step_s + offset_s
        if self.projected_s < self.rule.bound_s:
            return GO
        full = f" (projected on its full batch of {self.rule.full_batch})" if (self.rule.full_batch or 0) > step_samples else ""
        return Stop(
            Outcome.SCREENED,
            (
                f"{self.rule.steps} timed steps of {step_samples} samples{full} took {self.step_s * 1e3:.3g} ms each (median): "
                f"the fewest samples any trial needed, {self.rule.min_samples}, would take {self.projected_s:.3f} s on the "
                f"{clock} clock, not under {self.rule.against or f'{self.rule.bound_s:.3f} s'}"
            ),
            bound_s=self.rule.bound_s,
        )  # what its score is floored at (tuner/study/scoring/censoring.py)
