"""A trial's own stop rules (tuner/train/limits.py) and how the trainer applies verdicts
(tuner/train/verdict.py): each rule, on made-up evaluations, answers go on or a Stop."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from conftest import FakeTimer

from tuner.train.clocks import TrialClocks, charged_setup_s
from tuner.train.limits import RUNAWAY_CAP_FACTOR, Limits, diverged, out_of_samples, out_of_time, past_deadline, reached
from tuner.train.result import Evaluation, Outcome
from tuner.train.verdict import GO, Stop, first_stop


def ev(metric: float = 0.5, samples: int = 100, loss: float | None = None, train_loss: float | None = None, t: float = 1.0) -> Evaluation:
    """A made-up evaluation at ``t`` seconds on every clock."""
    return Evaluation(samples, samples // 10, metric, loss, train_loss, t, t, t, t)


def test_reached_at_the_target_and_not_below_it() -> None:
    assert reached(ev(0.8999), 0.9) is GO
    assert reached(ev(0.9), 0.9) == Stop(Outcome.REACHED, "reached 0.9000 >= 0.9 at 100 samples")


def test_diverged_on_a_non_finite_or_exploding_loss() -> None:
    assert diverged(ev(train_loss=150.0), 2.0, 100.0) is GO  # 75x: rough, not exploded
    assert diverged(ev(train_loss=201.0), 2.0, 100.0) == Stop(Outcome.DIVERGED, "training loss 201 exploded past 100x its first value")
    assert diverged(ev(train_loss=math.inf), None, 100.0).reason == "non-finite training loss at 100 samples"
    assert diverged(ev(loss=math.nan, train_loss=1.0), 1.0, 100.0).reason == "non-finite held-out loss at 100 samples"
    assert diverged(ev(), None, 100.0) is GO  # no loss reported: nothing to judge


def test_out_of_time_on_the_objective_clock_or_the_runaway_guard() -> None:
    assert out_of_time(4.9, 4.9, 5.0, "robust", 0.5) is GO
    stop = out_of_time(5.0, 3.0, 5.0, "robust", 0.5)
    assert stop == Stop(Outcome.TIMEOUT, "per-trial cap of 5 s (robust clock) reached at best 0.5000")
    # The robust clock lags a stalled machine: the train clock at twice the cap ends the trial all the same.
    assert out_of_time(1.0, RUNAWAY_CAP_FACTOR * 5.0, 5.0, "robust", 0.5).outcome is Outcome.TIMEOUT
    assert out_of_time(1.0, RUNAWAY_CAP_FACTOR * 5.0 - 0.1, 5.0, "robust", 0.5) is GO


def test_out_of_samples_at_the_limit_or_the_horizon() -> None:
    assert out_of_samples(199, 200, None, 0.4) is GO
    assert out_of_samples(200, 200, None, 0.4).reason == "sample limit 200 reached at best 0.4000"
    assert out_of_samples(300, None, 300, 0.5).reason == "learning rate reached zero at the horizon of 300 samples at best 0.5000"
    assert out_of_samples(10**9, None, None, 0.5) is GO


def test_past_the_deadline_is_interrupted() -> None:
    assert past_deadline(10.0, None) is GO
    assert past_deadline(9.9, 10.0) is GO
    assert past_deadline(10.0, 10.0) == Stop(Outcome.INTERRUPTED, "the study's time budget ran out during this trial")


def test_the_first_stop_is_applied_and_later_rules_are_not_asked() -> None:
    asked: list[str] = []

    def rule(name: str, verdict: Stop | None) -> Callable[[], Stop | None]:
        def answer() -> Stop | None:
            asked.append(name)
            return verdict

        return answer

    capped = Stop(Outcome.CAPPED, "passed the incumbent", bound_s=1.2)
    assert first_stop([rule("a", GO), rule("b", capped), rule("c", Stop(Outcome.PRUNED, "behind"))]) is capped
    assert asked == ["a", "b"]
    assert first_stop([rule("d", GO)]) is GO


def test_limits_decide_in_order_reached_before_a_large_loss_and_the_cap() -> None:
    timer = FakeTimer()
    clocks = TrialClocks(timer, "train")
    limits = Limits(clocks, target=0.9, cap_s=1.0)
    assert limits.verdict(ev(0.95, train_loss=1e9, t=5.0), best=0.95).outcome is Outcome.REACHED
    assert limits.reference_loss == 1e9  # the first evaluation's training loss, without one from setup
    assert limits.verdict(ev(0.5, t=5.0), best=0.5).outcome is Outcome.TIMEOUT


def test_a_time_bound_is_asked_not_written_and_forces_a_look_once_passed() -> None:
    timer = FakeTimer()
    clocks = TrialClocks(timer, "train")
    bounds = iter([1.0, None])
    limits = Limits(clocks, target=0.9, cap_s=100.0, bound=lambda: next(bounds))
    clocks.start()
    clocks.training_started()
    limits.ask_bound()
    assert limits.look_by_s == 1.0
    timer.advance(0.9)
    assert not limits.look_now(samples=10, steps=1)
    timer.advance(0.1)
    assert limits.look_now(samples=20, steps=2)
    limits.ask_bound()  # the rule no longer bounds the trial
    assert limits.look_by_s is None and not limits.look_now(samples=30, steps=3)


@pytest.mark.parametrize("clock,charged", [("train", 2.0), ("robust", 2.0), ("cpu", 2.0), ("wall", 0.0)])
def test_the_objective_clock_is_read_the_same_at_an_evaluation_and_between_them(clock: str, charged: float) -> None:
    timer = FakeTimer()
    clocks = TrialClocks(timer, clock, charge_setup=True)
    clocks.start()
    clocks.record_compile(2.0)
    timer.advance(3.0)  # setup, compilation included
    clocks.training_started()
    timer.advance(4.0)  # 8 steps of 0.5 s
    clocks.pause()
    clocks.end_interval(8)
    at = Evaluation(80, 8, 0.5, None, None, clocks.train_s, clocks.wall_s, clocks.robust_s(8), clocks.cpu_s(8))
    assert clocks.charged_s == charged_setup_s(2.0, clock, True) == charged
    assert clocks.objective_s(8, at) == pytest.approx(clocks.objective_s(8)) == pytest.approx(7.0 if clock == "wall" else 4.0 + charged)
