"""A trial's own stop rules: the target, divergence, the per-trial cap, the sample limit, the
schedule's horizon and the study's deadline, each answering go on or ``Stop``
(tuner/train/verdict.py); and, between evaluations, when a look must come early.

Between evaluations nothing is decided, only brought forward: an evaluation is forced when
a limit is passed (the sample limit, the horizon, the deadline, a rule's time bound, or the
train clock at ``RUNAWAY_CAP_FACTOR`` x the cap), and the verdict is given there, with the
metric measured. That costs the hot loop a few host-clock reads and comparisons per step.
"""

from __future__ import annotations

import math

from tuner.train.clocks import TrialClocks
from tuner.train.result import Evaluation, Outcome
from tuner.train.target import Target, as_target
from tuner.train.verdict import GO, Stop, TimeBound, Verdict

# The train clock past this multiple of the cap forces a look whatever the objective's clock
# says: the robust and cpu clocks may lag far behind a stalled machine's host clock.
RUNAWAY_CAP_FACTOR = 2.0


def reached(ev: Evaluation, target: float | Target) -> Verdict:
    """Stop as reached at the first evaluation at or past the target, in its direction."""
    goal = as_target(target)
    if goal.reached(ev.metric):
        return Stop(Outcome.REACHED, f"reached {ev.metric:.4f} {goal.sign} {goal.value} at {ev.samples} samples")
    return GO


def diverged(ev: Evaluation, reference_loss: float | None, factor: float) -> Verdict:
    """Stop as diverged on a non-finite held-out metric or loss, or a training loss past ``factor`` x the reference."""
    if not math.isfinite(ev.metric):
        return Stop(Outcome.DIVERGED, f"non-finite held-out metric ({ev.metric}) at {ev.samples} samples")
    if ev.train_loss is not None:
        if not math.isfinite(ev.train_loss):
            return Stop(Outcome.DIVERGED, f"non-finite training loss at {ev.samples} samples")
        if reference_loss is not None and ev.train_loss > factor * max(reference_loss, 1e-8):
            return Stop(Outcome.DIVERGED, f"training loss {ev.train_loss:.3g} exploded past {factor:g}x its first value")
    if ev.loss is not None and not math.isfinite(ev.loss):
        return Stop(Outcome.DIVERGED, f"non-finite held-out loss at {ev.samples} samples")
    return GO


def out_of_time(clock_s: float, train_s: float, cap_s: float, clock: str, best: float) -> Verdict:
    """Stop as timed out once the objective's clock reaches the cap (or the train clock the runaway guard)."""
    if clock_s >= cap_s or train_s >= RUNAWAY_CAP_FACTOR * cap_s:
        return Stop(Outcome.TIMEOUT, f"per-trial cap of {cap_s:g} s ({clock} clock) reached at best {best:.4f}")
    return GO


def out_of_samples(samples: int, max_samples: int | None, horizon: int | None, best: float) -> Verdict:
    """Stop as timed out at the sample limit, or where the schedule's learning rate reached zero."""
    if max_samples is not None and samples >= max_samples:
        return Stop(Outcome.TIMEOUT, f"sample limit {max_samples} reached at best {best:.4f}")
    if horizon is not None and samples >= horizon:
        return Stop(Outcome.TIMEOUT, f"learning rate reached zero at the horizon of {horizon} samples at best {best:.4f}")
    return GO


def past_deadline(now: float, deadline: float | None) -> Verdict:
    """Stop as interrupted once the host clock passes the study's deadline."""
    if deadline is not None and now >= deadline:
        return Stop(Outcome.INTERRUPTED, "the study's time budget ran out during this trial")
    return GO


class Limits:
    """The trial's own rules with their settings, and the time bound asked of the study's rules.

    ``deadline`` is on the host clock (the study's budget); ``bound`` is asked when the trial
    starts and after each evaluation that goes on (``ask_bound``), outside the timed region.
    """

    def __init__(
        self,
        clocks: TrialClocks,
        target: float | Target,
        cap_s: float,
        max_samples: int | None = None,
        horizon: int | None = None,
        deadline: float | None = None,
        divergence_factor: float = 100.0,
        bound: TimeBound | None = None,
    ) -> None:
        self.clocks = clocks
        self.target = as_target(target)
        self.cap_s = cap_s
        self.max_samples = max_samples
        self.horizon = horizon
        self.deadline = deadline
        self.divergence_factor = divergence_factor
        self.bound = bound
        self.look_by_s: float | None = None  # the bound's latest answer, on the objective's clock
        self.reference_loss: float | None = None  # what an exploding training loss is measured against

    def set_reference_loss(self, loss: float) -> None:
        """The loss before any training step (ignored unless finite): divergence is measured against it."""
        if math.isfinite(loss):
            self.reference_loss = loss

    def ask_bound(self) -> None:
        """Ask the study's rules when the trial must next be looked at."""
        self.look_by_s = self.bound() if self.bound is not None else None

    def look_now(self, samples: int, steps: int) -> bool:
        """Between evaluations: True when a limit has been passed and an evaluation must come now."""
        if (self.max_samples is not None and samples >= self.max_samples) or (self.horizon is not None and samples >= self.horizon):
            return True
        if self.clocks.train_s >= RUNAWAY_CAP_FACTOR * self.cap_s:
            return True
        if self.deadline is not None and self.clocks.timer.now() >= self.deadline:
            return True
        return self.look_by_s is not None and self.clocks.objective_s(steps) >= self.look_by_s

    def verdict(self, ev: Evaluation, best: float) -> Verdict:
        """At an evaluation: the first stop among reached, diverged, out of time, out of samples, past the deadline."""
        if self.reference_loss is None and ev.train_loss is not None:
            self.reference_loss = ev.train_loss  # without one measured in setup, the first evaluation's is the yardstick
        clock_s = self.clocks.objective_s(ev.steps, ev)
        return (
            reached(ev, self.target)
            or diverged(ev, self.reference_loss, self.divergence_factor)
            or out_of_time(clock_s, ev.train_s, self.cap_s, self.clocks.clock, best)
            or out_of_samples(ev.samples, self.max_samples, self.horizon, best)
            or past_deadline(self.clocks.timer.now(), self.deadline)
        )
