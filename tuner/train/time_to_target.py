"""The objective's bookkeeping around any training loop: cadence, clocks, first crossing, outcome.

``TimeToTarget`` puts three parts together: the clocks (``TrialClocks``,
tuner/train/clocks.py), the curve (``TrialCurve``, tuner/train/curve.py) and the stop
decision (``Limits``, tuner/train/limits.py, with the pre-screen and the listeners). It asks
the rules in order and applies the first ``Stop`` (tuner/train/verdict.py); no rule writes
into it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from tuner.train.clocks import TrialClocks
from tuner.train.curve import TrialCurve
from tuner.train.energy import EnergyMeter
from tuner.train.limits import Limits
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.screen import ScreenRule, ThroughputScreen
from tuner.train.target import Target, as_target
from tuner.train.timer import Timer
from tuner.train.verdict import Stop, TimeBound, Verdict, first_stop

# A study's rule asked at each evaluation, outside the timed region: go on, or a Stop (tuner/train/verdict.py).
Listener = Callable[["TimeToTarget", Evaluation], Verdict]


@dataclass(frozen=True)
class StopRule:
    """When a trial stops, in the training layer's terms: the target, how often to look, the
    per-trial cap on the named clock (tuner/train/clocks.py) and an optional sample limit.

    The study builds it from its objective (``Objective.stop_rule()``); ``target`` is the value of
    the held-out metric to reach and its direction (tuner/train/target.py), one value from the
    experiment to the result. A bare number is an accuracy to reach, as ``TimeToTarget`` takes it.
    """

    target: Target
    eval_every_samples: int
    cap_s: float
    clock: str = "robust"
    max_samples: int | None = None
    charge_setup: bool = True  # compile_s counts on the train and robust clocks' objective time

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", as_target(self.target))


class TimeToTarget:
    """Times a training run and decides when it ends.

    Use it around your own loop::

        tt = TimeToTarget(target=0.9, eval_every_samples=2000, cap_s=30)   # or Target(1.6, "loss", "minimize")
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
    ``listeners`` are asked at each evaluation that the trial's own limits let go on;
    ``stop_at`` is asked when the trial starts and after each evaluation that goes on, and
    an evaluation is forced once the objective's clock passes its answer (capping at the
    incumbent); ``screen`` times the first steps (tuner/train/screen.py).
    """

    def __init__(
        self,
        target: float | Target,
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
        stop_at: TimeBound | None = None,
        charge_setup: bool = False,
        screen: ScreenRule | None = None,
    ) -> None:
        self.clocks = TrialClocks(timer or Timer(), clock, charge_setup, energy)
        self.curve = TrialCurve(target, eval_every_samples)
        self.limits = Limits(self.clocks, self.curve.goal, cap_s, max_samples, horizon_samples, deadline, divergence_factor, stop_at)
        self.listeners = list(listeners or [])
        # The throughput pre-screen over the first steps; after its last step, one integer
        # comparison per step is all it costs.
        self.screen = ThroughputScreen(screen) if screen is not None else None
        self._screen_last = self.screen.last_step if self.screen is not None else 0
        self.data_wait_s: float | None = None  # host seconds blocked on the loader (tuner/train/batches.py)
        self.done = False
        self._result: TrialResult | None = None

    # -- what the loop and the listeners read ----------------------------------------------
    @property
    def target(self) -> float:
        """The metric that ends the trial as reached."""
        return self.curve.target

    @property
    def goal(self) -> Target:
        """The target with its metric and direction."""
        return self.curve.goal

    @property
    def eval_every(self) -> int:
        """Training samples between scheduled evaluations."""
        return self.curve.eval_every

    @property
    def samples(self) -> int:
        """Training samples so far."""
        return self.curve.samples

    @property
    def steps(self) -> int:
        """Optimizer steps so far."""
        return self.curve.steps

    @property
    def evaluations(self) -> list[Evaluation]:
        """The evaluations made so far."""
        return self.curve.evaluations

    @property
    def train_s(self) -> float:
        """Seconds of training so far, evaluations excluded."""
        return self.clocks.train_s

    @property
    def wall_s(self) -> float:
        """Seconds since ``start()``."""
        return self.clocks.wall_s

    @property
    def compile_s(self) -> float:
        """torch.compile's warm-up, part of the setup."""
        return self.clocks.compile_s

    @property
    def charged_s(self) -> float:
        """Setup the objective charges on top of this trial's clock."""
        return self.clocks.charged_s

    def best_metric(self) -> float:
        """The best metric evaluated so far (NaN before any)."""
        return self.curve.best_metric()

    def clock_s(self, ev: Evaluation) -> float:
        """The objective's clock at evaluation ``ev``, charged setup included."""
        return self.clocks.objective_s(ev.steps, ev)

    # -- what the loop tells it ------------------------------------------------------------
    def start(self) -> None:
        """The wall clock starts; setup begins. The study's rules are asked for a first time bound."""
        self.clocks.start()
        self.limits.ask_bound()

    def training_started(self) -> None:
        """Setup ends; the train clock runs."""
        self.clocks.training_started()

    def record_compile(self, seconds: float) -> None:
        """torch.compile's warm-up took ``seconds`` of setup (tuner/train/levers.py)."""
        self.clocks.record_compile(seconds)

    def record_data_wait(self, seconds: float) -> None:
        """Host seconds blocked on the loader so far (a Dataset task's, tuner/train/batches.py)."""
        self.data_wait_s = seconds

    def set_reference_loss(self, loss: float) -> None:
        """The loss before any training step: an exploding loss is measured against it.

        Without it the first evaluation's training loss is the yardstick, but with an absurd
        learning rate that mean has already blown up, and the trial would run to its cap.
        """
        self.limits.set_reference_loss(loss)

    def pause(self) -> None:
        """Stop the train clock now (an evaluation begins); ``evaluate`` starts it again."""
        self.clocks.pause()

    def step(self, batch_samples: int) -> bool:
        """Count one optimizer step; True when an evaluation is due (train clock then paused),
        or when the pre-screen just ended the trial (``done``: stop without evaluating)."""
        self.clocks.step_ended()
        due = self.curve.count(batch_samples)
        if self.curve.steps <= self._screen_last and self._screened(batch_samples):
            return True  # the trial is over: the loop stops instead of evaluating
        due = due or self.limits.look_now(self.curve.samples, self.curve.steps)
        if due:
            self.clocks.pause()
        return due

    def _screened(self, batch_samples: int) -> bool:
        """One step of the pre-screen; True when its verdict ended the trial as screened."""
        assert self.screen is not None
        if self.curve.steps >= self.screen.first_step:
            self.clocks.timer.sync()  # deliberate: the screen's few timed steps are timed to the device, none after
        if not self.screen.record(self.curve.steps, self.clocks.running_s()):
            return False
        stop = self.screen.verdict(batch_samples, self.clocks.beside_steps_s, self.clocks.clock)
        if stop is None:
            return False
        self.apply(stop)
        return True

    def evaluate(self, metric: float, loss: float | None = None, train_loss: float | None = None) -> bool:
        """Record an evaluation; True when the trial is over (see ``result()``)."""
        if self.done:
            return True  # ended between evaluations (screened): nothing more to record
        self.clocks.pause()
        steps = self.curve.steps
        self.clocks.end_interval(steps)
        c = self.clocks
        ev = Evaluation(self.curve.samples, steps, float(metric), loss, train_loss, c.train_s, c.wall_s, c.robust_s(steps), c.cpu_s(steps))
        self.curve.record(ev)
        stop = self.limits.verdict(ev, self.curve.best_metric()) or first_stop(partial(listener, self, ev) for listener in self.listeners)
        if stop is not None:
            self.apply(stop)
            return True
        self.limits.ask_bound()  # a faster incumbent may have been found meanwhile
        self.clocks.resume()
        return False

    def apply(self, stop: Stop) -> TrialResult:
        """End the trial as a rule's ``Stop`` says."""
        return self.finish(stop.outcome, stop.reason, bound_s=stop.bound_s)

    def finish(
        self, outcome: Outcome, reason: str, peak_memory_mb: float | None = None, force: bool = False, bound_s: float | None = None
    ) -> TrialResult:
        """End the trial now with this outcome (a rule's verdict, an error, a signal).

        The first verdict stands, unless ``force``: a training function of one's own that
        breaks its contract after the end (tuner/train/session.py) fails all the same.
        ``bound_s``: the time it was stopped against, for a trial that could no longer win.
        """
        if self._result is not None and not force:
            return self._result
        c = self.clocks
        c.pause()
        r = TrialResult(
            outcome=outcome,
            reason=reason,
            goal=self.curve.goal,
            setup_s=c.setup_s,
            train_s=c.train_s,
            wall_s=c.wall_s,
            samples=self.curve.samples,
            steps=self.curve.steps,
            median_step_s=c.median_step_s,
            median_step_cpu_s=c.median_step_cpu_s,
            cpu_train_s=c.cpu_train_s,
            peak_memory_mb=peak_memory_mb,
            bound_s=bound_s,
            compile_s=c.compile_s,
            evaluations=list(self.curve.evaluations),
        )
        if c.energy is not None:
            r.energy_j, r.energy_source = c.energy.measured(), c.energy.source
        if c.syncs is not None:
            r.host_syncs_per_step = c.syncs.per_step(self.curve.steps)
        if self.screen is not None:
            r.screen_s, r.screen_projected_s, r.screen_step_s = self.screen.screen_s, self.screen.projected_s, self.screen.step_s
        if c.median_step_s and self.curve.steps:
            r.throughput = (self.curve.samples / self.curve.steps) / c.median_step_s
        if self.data_wait_s is not None and r.train_s > 0:
            r.data_wait_share = min(1.0, self.data_wait_s / r.train_s)  # both on the host clock, within training
        self.curve.fill(r)
        self._result = r
        self.done = True
        return r

    def result(self) -> TrialResult:
        """The trial's result, once it has ended."""
        if self._result is None:
            raise RuntimeError("the trial has not ended: call evaluate() until it returns True, or finish()")
        return self._result
