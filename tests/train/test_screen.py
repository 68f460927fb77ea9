"""The throughput pre-screen (tuner/train/screen.py): timed first steps, the projection, the
verdict, and the loops that stop on it (the built-in loop and a training function of one's own)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from conftest import FakeTimer

from tuner.tasks.base import Task
from tuner.tasks.registry import build_task
from tuner.train.result import Outcome
from tuner.train.screen import ScreenRule
from tuner.train.time_to_target import StopRule, TimeToTarget
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

CPU = torch.device("cpu")
RULE = ScreenRule(bound_s=1.0, min_samples=2000, warmup_steps=2, steps=5, against="1.2 x 0.833 s (trial 0)")
OWN_JOB = Path(__file__).resolve().parents[1] / "fixtures" / "own_job"


def started(timer: FakeTimer, rule: ScreenRule | None = RULE, clock: str = "robust", setup_s: float = 0.0) -> TimeToTarget:
    tt = TimeToTarget(target=0.9, eval_every_samples=2000, cap_s=20.0, clock=clock, timer=timer, screen=rule)
    tt.start()
    timer.t += setup_s
    tt.training_started()
    return tt


def run_steps(tt: TimeToTarget, timer: FakeTimer, step_times: list[float], batch: int = 32) -> int:
    """Steps at the given durations until the trial ends or they run out; the steps taken."""
    for n, step_s in enumerate(step_times, start=1):
        timer.t += step_s
        if tt.step(batch) and (tt.done or tt.evaluate(0.5)):
            return n
    return len(step_times)


def test_a_configuration_too_slow_to_win_is_screened_after_its_timed_steps() -> None:
    timer = FakeTimer()
    tt = started(timer)
    steps = run_steps(tt, timer, [0.065] * 100)
    result = tt.result()
    assert result.outcome is Outcome.SCREENED
    assert steps == result.steps == 7  # 2 warm-up steps and 5 timed ones, then no more
    assert result.evaluations == []  # stopped before its first evaluation: nothing was evaluated
    assert result.screen_s == pytest.approx(7 * 0.065)  # the screen's own time, on the train clock
    assert result.screen_projected_s == pytest.approx(math.ceil(2000 / 32) * 0.065)  # 63 steps: 4.1 s
    assert result.bound_s == 1.0
    assert "2000" in result.reason and "4.095 s" in result.reason and "1.2 x 0.833 s (trial 0)" in result.reason


def test_a_configuration_that_can_still_win_trains_on_and_its_timed_steps_count() -> None:
    timer = FakeTimer()
    tt = started(timer)
    run_steps(tt, timer, [0.01] * 200)
    result = tt.finish(Outcome.TIMEOUT, "the test stopped it")
    assert result.steps == 200 and result.samples == 200 * 32  # the timed steps were training steps
    assert result.screen_projected_s == pytest.approx(63 * 0.01)  # 0.63 s < 1.0 s: not screened
    assert result.evaluations  # it went on to its evaluations


def test_one_stalled_step_in_the_window_does_not_screen() -> None:
    # A shared machine: one of the five timed steps took 2 s; the median step time ignores it.
    timer = FakeTimer()
    tt = started(timer)
    run_steps(tt, timer, [0.01, 0.01, 0.01, 2.0, 0.01, 0.01, 0.01] + [0.01] * 50)
    assert not tt.done
    assert tt.screen is not None and tt.screen.step_s == pytest.approx(0.01)


def test_the_screen_syncs_only_its_timed_steps_and_nothing_after() -> None:
    timer = FakeTimer()
    tt = started(timer)
    after_start = timer.syncs
    run_steps(tt, timer, [0.01] * 7)
    assert timer.syncs - after_start == 6  # the end of the last warm-up step and of each timed step
    before = timer.syncs
    run_steps(tt, timer, [0.01] * 40)  # 40 x 32 samples: no evaluation due yet
    assert timer.syncs == before
    assert tt.samples < 2000


def test_without_a_rule_nothing_is_timed_or_recorded() -> None:
    timer = FakeTimer()
    tt = started(timer, rule=None)
    run_steps(tt, timer, [0.065] * 20)
    assert timer.syncs == 1  # training_started only
    result = tt.finish(Outcome.TIMEOUT, "the test stopped it")
    assert result.screen_s is None and result.screen_projected_s is None


def test_on_the_wall_clock_the_projection_holds_the_setup() -> None:
    timer = FakeTimer()
    tt = started(timer, ScreenRule(bound_s=1.0, min_samples=320, warmup_steps=0, steps=3), clock="wall", setup_s=0.9)
    run_steps(tt, timer, [0.01] * 20)
    result = tt.result()
    assert result.outcome is Outcome.SCREENED  # 10 steps x 10 ms = 0.1 s, plus 0.9 s of setup
    assert result.screen_projected_s == pytest.approx(0.9 + 10 * 0.01)


def test_a_growing_batch_is_projected_on_full_steps_at_the_time_of_its_small_ones() -> None:
    timer = FakeTimer()
    tt = started(timer, ScreenRule(bound_s=10.0, min_samples=2048, warmup_steps=0, steps=3, full_batch=128))
    run_steps(tt, timer, [0.01] * 3, batch=32)  # a quarter of its batch of 128
    assert tt.screen is not None and tt.screen.projected_s == pytest.approx(16 * 0.01)  # 2048 / 128 steps, not 2048 / 32


def test_a_rule_without_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="steps >= 1"):
        ScreenRule(bound_s=1.0, min_samples=100, steps=0)


STOP = StopRule(target=0.9, eval_every_samples=256, cap_s=10.0)


def test_the_built_in_loop_stops_on_the_screen_without_evaluating(synthetic: Task) -> None:
    config = TrialConfig(lr=1e-2, batch_size=32)
    impossible = ScreenRule(bound_s=1e-6, min_samples=256, warmup_steps=1, steps=3, against="a made-up incumbent")
    result = train_trial(synthetic, config, STOP, CPU, seed=0, screen=impossible)
    assert result.outcome is Outcome.SCREENED, result.reason
    assert result.steps == 4 and result.samples == 4 * 32
    assert result.evaluations == []
    assert result.screen_s is not None and 0 < result.screen_s <= result.train_s
    # A bound it can beat: the same configuration trains on and reaches the target.
    passed = train_trial(synthetic, config, STOP, CPU, seed=0, screen=ScreenRule(bound_s=1e6, min_samples=256, warmup_steps=1, steps=3))
    assert passed.outcome is Outcome.REACHED, passed.reason
    assert passed.screen_projected_s is not None and passed.screen_projected_s < 1e6


def test_an_own_loop_is_told_to_stop_when_screened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(OWN_JOB))
    task = build_task("own_job_mod:own_loop")
    impossible = ScreenRule(bound_s=1e-6, min_samples=256, warmup_steps=1, steps=3)
    result = train_trial(task, TrialConfig(lr=1e-2, batch_size=64), STOP, CPU, seed=0, screen=impossible)
    assert result.outcome is Outcome.SCREENED, result.reason
    assert result.steps == 4
