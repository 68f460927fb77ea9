"""The replay trainer: a recorded trial played back as a real trial would run, on a virtual clock.

It has ``train_trial``'s parameters and result (tuner/train/trial.py), so the study loop
runs it unchanged. It reports the recorded steps and evaluations to the same bookkeeping a
training loop reports to (``trial_books``), with the same listeners (pruning, capping,
screening, the deadline), and the time the recording took passes on the worker's virtual
clock; the trial ends where their verdict says, or where the recording ended.

- Setup takes the recorded setup (plus ``overhead_s``, a fixed start-up per trial), each
  evaluation the recorded evaluation time, and the steps of an interval share the recorded
  training time of the interval evenly, except the pre-screen's timed steps, which take
  the recorded median of the trial's own timed window (``screen_step_s``).
- The steps of an interval reach the recorded evaluation's samples at its last step (the
  cadence falls where it fell); before that each is at most the batch size.
- An evaluation forced between recorded ones (capping at an incumbent, the deadline) reads
  the last recorded metric before it (NaN before the first): a replay cannot see between
  evaluations.
- ``time_scale`` multiplies every recorded time (600: a 0.5-s trial lasts five minutes).
- The CPU clock is the training time scaled by the recorded ratio of the median CPU step to
  the median step: on the cpu clock, a replay's times are close to the recording's, not equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tuner.simulate.paced_time import PacedTime
from tuner.simulate.table import Table
from tuner.simulate.virtual_time import VirtualTime, VirtualTimer
from tuner.train.result import Evaluation, TrialResult
from tuner.train.screen import ScreenRule
from tuner.train.time_to_target import Listener, StopRule, TimeToTarget
from tuner.train.trial import trial_books
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import TimeBound


@dataclass
class ReplayTrainer:
    """Trains by replaying ``table`` on ``time`` (see the module's docstring)."""

    table: Table
    time: VirtualTime | PacedTime
    time_scale: float = 1.0
    overhead_s: float = 0.0

    def __call__(
        self,
        task: Any,
        config: TrialConfig,
        rule: StopRule,
        device: Any,
        seed: int = 0,
        listeners: list[Listener] | None = None,
        deadline: float | None = None,
        timer: Any = None,
        stop_at: TimeBound | None = None,
        screen: ScreenRule | None = None,
        keep: Callable[..., None] | None = None,
    ) -> TrialResult:
        recorded = self.table.lookup(config, seed).result
        clock = VirtualTimer(self.time)
        tt = trial_books(rule, config, clock, listeners, deadline, stop_at, screen)
        self.time.sync()  # the trial starts: its sampling and start have seen every earlier event
        tt.start()
        self.time.advance(self.time_scale * recorded.setup_s + self.overhead_s)
        tt.training_started()
        Replay(tt, recorded, config.batch_size, rule.eval_every_samples, self.time, clock, self.time_scale).play()
        self.time.sync()  # the trial ends: its record is written at its own time
        return tt.result()


class Replay:
    """One recorded trial, played into ``tt`` step by step."""

    def __init__(
        self,
        tt: TimeToTarget,
        recorded: TrialResult,
        batch: int,
        eval_every: int,
        time: VirtualTime | PacedTime,
        clock: VirtualTimer,
        scale: float,
    ) -> None:
        self.tt, self.recorded, self.batch, self.eval_every = tt, recorded, batch, eval_every
        self.time, self.clock, self.scale = time, clock, scale
        step, cpu_step = recorded.median_step_s, recorded.median_step_cpu_s
        self.cpu_ratio = cpu_step / step if step and cpu_step else 1.0
        window = tt.screen.rule if tt.screen is not None else None
        self.window = (window.warmup_steps, window.warmup_steps + window.steps) if window is not None else (0, 0)

    def play(self) -> None:
        tt, recorded = self.tt, self.recorded
        steps, samples, train_s, wall_s = 0, 0, 0.0, recorded.setup_s
        last_metric = math.nan
        # Each recorded evaluation ends an interval; None ends the steps after the last one (a trial
        # screened or stopped between evaluations), which are played without an evaluation of their own.
        for ev in [*recorded.evaluations, None]:
            if ev is not None:
                end_steps, end_samples, end_train_s = ev.steps, ev.samples, ev.train_s
                evaluation_s = self.scale * max(0.0, (ev.wall_s - wall_s) - (ev.train_s - train_s))
            else:
                end_steps, end_train_s, evaluation_s = recorded.steps, recorded.train_s, 0.0
                end_samples = max(recorded.samples, samples + end_steps - steps)
            n = end_steps - steps
            if n <= 0:
                continue  # a forced look in the recording, at the same step as the one before: nothing to play
            durations = self._step_times(steps, n, self.scale * (end_train_s - train_s))
            sizes = self._step_sizes(samples, n, end_samples - samples)
            for i in range(n):
                self.time.advance(durations[i])
                self.clock.cpu += durations[i] * self.cpu_ratio
                due = tt.step(sizes[i])
                if tt.done:
                    return  # screened
                if due:
                    at_record = ev is not None and i == n - 1
                    if self._evaluate(ev if at_record else None, last_metric, evaluation_s):
                        return
                    if not at_record:
                        evaluation_s = 0.0  # the recording's evaluation time was spent on the forced one
            if ev is not None:
                steps, samples, train_s, wall_s, last_metric = ev.steps, ev.samples, ev.train_s, ev.wall_s, ev.metric
        tt.finish(recorded.outcome, recorded.reason)  # the recording ended here (an outcome no rule here gave)

    def _evaluate(self, ev: Evaluation | None, last_metric: float, evaluation_s: float) -> bool:
        """An evaluation: the recorded one, or a forced look that reads the last recorded metric. True: the trial ended."""
        self.time.advance(evaluation_s)
        self.time.sync()  # the listeners read the study: every earlier event has happened
        if ev is None:
            return self.tt.evaluate(last_metric)
        return self.tt.evaluate(ev.metric, loss=ev.loss, train_loss=ev.train_loss)

    def _step_times(self, done: int, n: int, total_s: float) -> list[float]:
        """Each step's share of an interval's training time; the screen's timed window at its recorded median."""
        first, last = self.window
        timed = [done < k + 1 <= done + n and first < k + 1 <= last for k in range(done, done + n)]
        step_s = self.scale * (self.recorded.screen_step_s or 0.0)
        n_timed = sum(timed) if step_s else 0
        rest = max(0.0, total_s - n_timed * step_s) / max(1, n - n_timed)
        return [step_s if (t and step_s) else rest for t in timed]

    def _step_sizes(self, done: int, n: int, total: int) -> list[int]:
        """Samples per step: at most the batch, never reaching the next cadence before the interval's last step."""
        if n == 1:
            return [total]
        next_due = (done // self.eval_every + 1) * self.eval_every
        size = max(1, min(self.batch, (next_due - 1 - done) // (n - 1), (total - 1) // (n - 1)))
        return [size] * (n - 1) + [total - size * (n - 1)]
