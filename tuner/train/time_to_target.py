"""The objective's bookkeeping around any training loop: cadence, clocks, first crossing, outcome."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from tuner.train.clocks import CLOCK_FIELDS, check_clock, robust_seconds
from tuner.train.energy import EnergyMeter
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.screen import ScreenRule, ThroughputScreen
from tuner.train.timer import Timer

# A listener sees each evaluation and may end the trial by returning (outcome, reason).
Listener = Callable[["TimeToTarget", Evaluation], tuple[Outcome, str] | None]


@dataclass(frozen=True)
class StopRule:
    """When a trial stops, in the training layer's terms: the target, how often to look, the
    per-trial cap on the named clock (tuner/train/clocks.py) and an optional sample limit.

    The study builds it from its objective (``Objective.stop_rule()``).
    """

    target: float
    eval_every_samples: int
    cap_s: float
    clock: str = "robust"
    max_samples: int | None = None
    charge_setup: bool = True  # compile_s counts on the train and robust clocks' objective time


class TimeToTarget:
    """Times a training run and decides when it ends.

    Use it around your own loop::

        tt = TimeToTarget(target=0.9, eval_every_samples=2000, cap_s=30)
        tt.start()                         # wall clock; setup begins
        model, opt = build()
        tt.training_started()              # setup ends; the train clock runs
        while not tt.done:
            for xb, yb in batches():
                train_step(xb, yb)
                if tt.step(len(xb)):       # an evaluation is due; the train clock is paused
                    if tt.evaluate(held_out_accuracy()):
                        break
        result = tt.result()

    ``step`` only counts and reads the host clock: it never synchronises the device.
    """

    def __init__(
        self,
        target: float,
        eval_every_samples: int,
        cap_s: float,
        clock: str = "robust",
        max_samples: int | None = None,
        horizon_samples: int | None = None,
        deadline: float | None = None,
        divergence_factor: float = 100.0,
        timer: Timer | None = None,
        listeners: list[Listener] | None = None,
        energy: EnergyMeter | None = None,
        stop_at: float | None = None,
        charge_setup: bool = False,
        screen: ScreenRule | None = None,
    ) -> None:
        check_clock(clock)
        self.target = target
        self.eval_every = eval_every_samples
        self.cap_s = cap_s
        self.clock = clock
        self.max_samples = max_samples
        self.horizon = horizon_samples
        self.deadline = deadline
        self.divergence_factor = divergence_factor
        self.timer = timer or Timer()
        self.listeners = list(listeners or [])
        self.data_wait_s: float | None = None  # host seconds blocked on the loader, set by the loop (tuner/train/batches.py)
        # A time on the objective's clock past which an evaluation is forced before the next
        # scheduled one, so that capping at the incumbent happens there (a listener may move it).
        self.stop_at = stop_at
        self.compile_s = 0.0  # set by the loop after torch.compile's warm-up (tuner/train/levers.py)
        self.charge_setup = charge_setup
        # The throughput pre-screen over the first steps (tuner/train/screen.py); after its last
        # step, one integer comparison per step is all it costs.
        self.screen = ThroughputScreen(screen) if screen is not None else None
        self._screen_last = self.screen.last_step if self.screen is not None else 0
        # Set by a listener that stops the trial at the incumbent: the time it was stopped against.
        self.bound_s: float | None = None
        self._median: float | None = None
        self.energy = energy  # read where the train clock starts and stops, never per step
        self.samples = 0
        self.steps = 0
        self.evaluations: list[Evaluation] = []
        self.done = False
        self._result: TrialResult | None = None
        self._start = self._train_start = self._resumed = 0.0
        self._train_s = 0.0
        self._setup_s = 0.0
        self._next_eval = eval_every_samples
        self._interval_steps = 0
        self._interval_start_train_s = 0.0
        self._step_times: list[float] = []
        # The cpu clock's bookkeeping, read where the train clock starts and stops (never per step).
        self._cpu_train_s = self._cpu_resumed = self._interval_start_cpu_s = 0.0
        self._cpu_step_times: list[float] = []
        self._cpu_median: float | None = None
        self._running = False
        self._first_train_loss: float | None = None

    # -- clocks -----------------------------------------------------------------------
    def start(self) -> None:
        self._start = self.timer.now()

    def training_started(self) -> None:
        self.timer.sync()
        now = self.timer.now()
        self._setup_s = now - self._start
        self._resumed = now
        self._cpu_resumed = self.timer.cpu_now()
        self._running = True
        if self.energy is not None:
            self.energy.resume()

    def set_reference_loss(self, loss: float) -> None:
        """The loss before any training step: an exploding loss is measured against it.

        Without it the first evaluation's training loss is the yardstick, but with an absurd
        learning rate that mean has already blown up, and the trial would run to its cap.
        """
        if math.isfinite(loss):
            self._first_train_loss = loss

    def pause(self) -> None:
        """Stop the train clock now (an evaluation begins); ``evaluate`` starts it again."""
        self._pause()

    def _pause(self) -> None:
        if self._running:
            self.timer.sync()  # deliberate: evaluation boundary, the only sync in training
            self._train_s += self.timer.now() - self._resumed
            self._cpu_train_s += self.timer.cpu_now() - self._cpu_resumed
            self._running = False
            if self.energy is not None:
                self.energy.pause()

    def _resume(self) -> None:
        self._resumed = self.timer.now()
        self._cpu_resumed = self.timer.cpu_now()
        self._running = True
        if self.energy is not None:
            self.energy.resume()

    @property
    def train_s(self) -> float:
        return self._train_s + (self.timer.now() - self._resumed if self._running else 0.0)

    @property
    def wall_s(self) -> float:
        return self.timer.now() - self._start

    def robust_s(self) -> float:
        """Steps so far times the median step time over evaluation intervals."""
        return robust_seconds(self.steps, self.median_step_s(), self.train_s)

    @property
    def cpu_train_s(self) -> float:
        """The training thread's CPU seconds while the train clock ran."""
        return self._cpu_train_s + (self.timer.cpu_now() - self._cpu_resumed if self._running else 0.0)

    def cpu_s(self) -> float:
        """The cpu clock: steps so far times the median CPU seconds per step over evaluation intervals."""
        return robust_seconds(self.steps, self.median_step_cpu_s(), self.cpu_train_s)

    def median_step_cpu_s(self) -> float | None:
        return statistics.median(self._cpu_step_times) if self._cpu_step_times else None

    @property
    def charged_s(self) -> float:
        """Setup the objective charges on top of this trial's clock (the wall clock holds it already)."""
        return self.compile_s if self.charge_setup and self.clock != "wall" else 0.0

    def median_step_s(self) -> float | None:
        return statistics.median(self._step_times) if self._step_times else None

    # -- the loop -----------------------------------------------------------------------
    def step(self, batch_samples: int) -> bool:
        """Count one optimizer step; True when an evaluation is due (train clock then paused),
        or when the pre-screen just ended the trial (``done``: stop without evaluating)."""
        self.samples += batch_samples
        self.steps += 1
        self._interval_steps += 1
        if self.steps <= self._screen_last and self._screened(batch_samples):
            return True  # the trial is over: the loop stops instead of evaluating
        due = self.samples >= self._next_eval
        due = due or (self.max_samples is not None and self.samples >= self.max_samples)
        due = due or (self.horizon is not None and self.samples >= self.horizon)
        if not due:
            now = self.timer.now()  # host clock only: a guard against a trial that outruns its cap
            train_now = now - self._resumed + self._train_s
            due = train_now >= 2 * self.cap_s or (self.deadline is not None and now >= self.deadline)
            due = due or (self.stop_at is not None and self._clock_estimate(now, train_now) >= self.stop_at)
        if due:
            self._pause()
        return due

    def _clock_estimate(self, now: float, train_now: float) -> float:
        """The objective's clock between evaluations, from the host clock and the median so far."""
        if self.clock == "robust":
            return robust_seconds(self.steps, self._median, train_now) + self.charged_s
        if self.clock == "cpu":
            cpu_now = self._cpu_median * self.steps if self._cpu_median else self.cpu_train_s
            return cpu_now + self.charged_s
        return now - self._start if self.clock == "wall" else train_now + self.charged_s

    def _screened(self, batch_samples: int) -> bool:
        """One step of the pre-screen; True when its verdict ended the trial as screened."""
        assert self.screen is not None
        if self.steps >= self.screen.first_step:
            self.timer.sync()  # deliberate: the screen's few timed steps are timed to the device, none after
        if not self.screen.record(self.steps, self.cpu_train_s if self.clock == "cpu" else self.train_s):
            return False
        offset = self._setup_s if self.clock == "wall" else self.charged_s
        ending = self.screen.verdict(batch_samples, offset, self.clock)
        if ending is None:
            return False
        self.bound_s = self.screen.rule.bound_s  # what its score is floored at (tuner/study/scoring/censoring.py)
        self.finish(*ending)
        return True

    def evaluate(self, metric: float, loss: float | None = None, train_loss: float | None = None) -> bool:
        """Record an evaluation; True when the trial is over (see ``result()``)."""
        if self.done:
            return True  # ended between evaluations (screened): nothing more to record
        self._pause()
        if self._interval_steps:
            self._step_times.append((self._train_s - self._interval_start_train_s) / self._interval_steps)
            self._cpu_step_times.append((self._cpu_train_s - self._interval_start_cpu_s) / self._interval_steps)
        self._interval_steps = 0
        self._interval_start_train_s, self._interval_start_cpu_s = self._train_s, self._cpu_train_s
        self._median, self._cpu_median = self.median_step_s(), self.median_step_cpu_s()  # for the stop-time check between evaluations
        while self._next_eval <= self.samples:
            self._next_eval += self.eval_every
        ev = Evaluation(self.samples, self.steps, float(metric), loss, train_loss, self._train_s, self.wall_s, self.robust_s(), self.cpu_s())
        self.evaluations.append(ev)
        ending = self._decide(ev)
        for listener in self.listeners:
            if ending is not None:
                break
            ending = listener(self, ev)
        if ending is not None:
            self.finish(*ending)
            return True
        self._resume()
        return False

    def _decide(self, ev: Evaluation) -> tuple[Outcome, str] | None:
        if ev.metric >= self.target:
            return Outcome.REACHED, f"reached {ev.metric:.4f} >= {self.target} at {ev.samples} samples"
        if ev.train_loss is not None:
            if self._first_train_loss is None:
                self._first_train_loss = ev.train_loss
            if not math.isfinite(ev.train_loss):
                return Outcome.DIVERGED, f"non-finite training loss at {ev.samples} samples"
            if ev.train_loss > self.divergence_factor * max(self._first_train_loss, 1e-8):
                return Outcome.DIVERGED, f"training loss {ev.train_loss:.3g} exploded past {self.divergence_factor:g}x its first value"
        if ev.loss is not None and not math.isfinite(ev.loss):
            return Outcome.DIVERGED, f"non-finite held-out loss at {ev.samples} samples"
        clock_now = getattr(ev, CLOCK_FIELDS[self.clock]) + self.charged_s
        if clock_now >= self.cap_s or ev.train_s >= 2 * self.cap_s:
            return Outcome.TIMEOUT, f"per-trial cap of {self.cap_s:g} s ({self.clock} clock) reached at best {self.best_metric():.4f}"
        if self.max_samples is not None and ev.samples >= self.max_samples:
            return Outcome.TIMEOUT, f"sample limit {self.max_samples} reached at best {self.best_metric():.4f}"
        if self.horizon is not None and ev.samples >= self.horizon:
            return Outcome.TIMEOUT, f"learning rate reached zero at the horizon of {self.horizon} samples at best {self.best_metric():.4f}"
        if self.deadline is not None and self.timer.now() >= self.deadline:
            return Outcome.INTERRUPTED, "the study's time budget ran out during this trial"
        return None

    def best_metric(self) -> float:
        return max((e.metric for e in self.evaluations), default=float("nan"))

    def finish(self, outcome: Outcome, reason: str, peak_memory_mb: float | None = None, force: bool = False) -> TrialResult:
        """End the trial now with this outcome (a listener's verdict, an error, a signal).

        The first verdict stands, unless ``force``: a training function of one's own that
        breaks its contract after the end (tuner/train/session.py) fails all the same.
        """
        if self._result is not None and not force:
            return self._result
        self._pause()
        median, cpu_median = self.median_step_s(), self.median_step_cpu_s()
        r = TrialResult(outcome=outcome, reason=reason, target=self.target, setup_s=self._setup_s, train_s=self._train_s, wall_s=self.wall_s, samples=self.samples, steps=self.steps, median_step_s=median, peak_memory_mb=peak_memory_mb, bound_s=self.bound_s, compile_s=self.compile_s, evaluations=list(self.evaluations),
                        median_step_cpu_s=cpu_median, cpu_train_s=self._cpu_train_s)
        if self.energy is not None:
            r.energy_j, r.energy_source = self.energy.measured(), self.energy.source
        if self.screen is not None:
            r.screen_s, r.screen_projected_s = self.screen.screen_s, self.screen.projected_s
        if median:
            r.throughput = (self.samples / self.steps) / median if self.steps else None
        if self.evaluations:
            r.best_metric = max(e.metric for e in self.evaluations)
            r.final_metric = self.evaluations[-1].metric
        if self.data_wait_s is not None and self._train_s > 0:
            r.data_wait_share = min(1.0, self.data_wait_s / self._train_s)  # both on the host clock, within training
        if outcome is Outcome.REACHED:
            hit = self.evaluations[-1]
            r.samples_to_target, r.steps_to_target = hit.samples, hit.steps
            r.train_s_to_target, r.wall_s_to_target = hit.train_s, hit.wall_s
            r.robust_s_to_target = robust_seconds(hit.steps, median, hit.train_s)  # the median over the whole trial
            r.cpu_s_to_target = robust_seconds(hit.steps, cpu_median, hit.cpu_s or 0.0)
            r.energy_j_to_target = r.energy_j  # the trial stops at the crossing: everything measured led to it
        self._result = r
        self.done = True
        return r

    def result(self) -> TrialResult:
        if self._result is None:
            raise RuntimeError("the trial has not ended: call evaluate() until it returns True, or finish()")
        return self._result
