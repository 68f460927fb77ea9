"""TimeToTarget with an injected clock: cadence, clocks, first crossing and every outcome."""

from __future__ import annotations

import pytest
from conftest import FakeTimer

from tuner.train.result import Evaluation, Outcome
from tuner.train.time_to_target import TimeToTarget
from tuner.train.verdict import Stop


def started(timer: FakeTimer, setup_s: float = 0.0, **kwargs) -> TimeToTarget:
    kwargs.setdefault("target", 0.9)
    kwargs.setdefault("eval_every_samples", 100)
    kwargs.setdefault("cap_s", 1000.0)
    tt = TimeToTarget(timer=timer, **kwargs)
    tt.start()
    timer.advance(setup_s)
    tt.training_started()
    return tt


def run_interval(tt: TimeToTarget, timer: FakeTimer, batch: int, step_s: float) -> int:
    """Train steps of step_s seconds until an evaluation is due; returns the steps taken."""
    steps = 0
    while True:
        timer.advance(step_s)
        steps += 1
        if tt.step(batch):
            return steps


def test_cadence_is_counted_in_samples_not_steps() -> None:
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=100)
    due_at = []
    for i in range(1, 15):
        if tt.step(32):
            due_at.append(tt.samples)
            tt.evaluate(0.1)
    # Evaluations at the first step at or past each multiple of 100 samples.
    assert due_at == [128, 224, 320, 416]
    assert [e.samples for e in tt.evaluations] == due_at
    assert [e.steps for e in tt.evaluations] == [4, 7, 10, 13]


def test_a_different_batch_size_sees_the_same_cadence_in_samples() -> None:
    for batch in (10, 50):
        tt = started(FakeTimer(), eval_every_samples=100)
        for _ in range(400 // batch):
            if tt.step(batch):
                tt.evaluate(0.1)
        assert [e.samples for e in tt.evaluations] == [100, 200, 300, 400]


def test_first_crossing_ends_the_trial_as_reached() -> None:
    timer = FakeTimer()
    tt = started(timer, setup_s=2.0)
    run_interval(tt, timer, 50, 0.5)
    assert tt.evaluate(0.6) is False
    run_interval(tt, timer, 50, 0.5)
    assert tt.evaluate(0.9) is True  # at the target counts
    assert tt.done
    r = tt.result()
    assert r.outcome is Outcome.REACHED and r.reached
    assert r.reason == "reached 0.9000 >= 0.9 at 200 samples"
    assert (r.samples_to_target, r.steps_to_target) == (200, 4)
    assert r.train_s_to_target == pytest.approx(2.0)
    assert r.wall_s_to_target == pytest.approx(4.0)  # setup included in the wall clock
    assert (r.best_metric, r.final_metric) == (0.9, 0.9)


def test_setup_train_and_wall_clocks_and_evaluation_excluded() -> None:
    timer = FakeTimer()
    tt = started(timer, setup_s=3.0)
    assert tt.train_s == 0.0
    run_interval(tt, timer, 25, 1.0)  # 4 steps, 4 s of training
    timer.advance(7.0)  # the evaluation itself: untimed on the train clock
    assert tt.evaluate(0.5) is False
    run_interval(tt, timer, 25, 1.0)  # 4 more seconds
    timer.advance(7.0)
    tt.evaluate(0.95)
    r = tt.result()
    assert r.setup_s == pytest.approx(3.0)
    assert r.train_s == pytest.approx(8.0)
    assert r.wall_s == pytest.approx(3.0 + 8.0 + 14.0)
    assert [e.train_s for e in r.evaluations] == pytest.approx([4.0, 8.0])
    assert [e.wall_s for e in r.evaluations] == pytest.approx([3.0 + 4.0 + 7.0, 3.0 + 8.0 + 14.0])
    # Syncs only at evaluation boundaries: start of training, and one per evaluation.
    assert timer.syncs == 1 + 2


def test_robust_time_is_steps_times_median_step_time() -> None:
    timer = FakeTimer()
    tt = started(timer)
    # Three intervals of 4 steps at 1 s, 1 s, then 4 s per step (a noisy neighbour).
    for step_s in (1.0, 1.0, 4.0):
        run_interval(tt, timer, 25, step_s)
        tt.evaluate(0.5 if step_s == 1.0 else 0.92)
    r = tt.result()
    assert r.train_s == pytest.approx(4 + 4 + 16)
    assert r.median_step_s == pytest.approx(1.0)
    assert r.robust_s_to_target == pytest.approx(12 * 1.0)
    assert [e.robust_s for e in r.evaluations] == pytest.approx([4.0, 8.0, 12.0])
    assert r.throughput == pytest.approx(25 / 1.0)  # samples per second at the median step time


@pytest.mark.parametrize("clock,ended", [("robust", False), ("train", True)])
def test_the_chosen_clock_decides_the_cap(clock: str, ended: bool) -> None:
    # One slow interval (4 s a step) takes the train clock to 24 s; the robust clock, at the
    # median step time of 1 s, stays at 12 s, under the 13 s cap.
    timer = FakeTimer()
    tt = started(timer, cap_s=13.0, clock=clock)
    for step_s in (1.0, 1.0, 4.0):
        run_interval(tt, timer, 25, step_s)
        last = tt.evaluate(0.5)
    assert last is ended
    if ended:
        assert tt.result().outcome is Outcome.TIMEOUT


def test_timeout_by_cap_on_the_train_clock() -> None:
    timer = FakeTimer()
    tt = started(timer, cap_s=5.0, clock="train")
    run_interval(tt, timer, 25, 1.0)
    assert tt.evaluate(0.5) is False  # 4 s < 5 s
    run_interval(tt, timer, 25, 1.0)
    assert tt.evaluate(0.6) is True  # 8 s >= 5 s
    r = tt.result()
    assert r.outcome is Outcome.TIMEOUT
    assert r.reason == "per-trial cap of 5 s (train clock) reached at best 0.6000"
    assert r.samples_to_target is None and r.robust_s_to_target is None


def test_timeout_by_cap_on_the_wall_clock_counts_setup() -> None:
    timer = FakeTimer()
    tt = started(timer, setup_s=4.0, cap_s=5.0, clock="wall")
    run_interval(tt, timer, 25, 0.5)  # train 2 s, wall 6 s
    assert tt.evaluate(0.5) is True
    assert tt.result().outcome is Outcome.TIMEOUT
    assert "wall clock" in tt.result().reason


def test_a_trial_that_outruns_its_cap_between_evaluations_is_stopped() -> None:
    # Evaluations every 10^6 samples never come, but the host-clock guard ends the interval
    # at twice the cap, and the evaluation there ends the trial.
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=10**6, cap_s=5.0, clock="train")
    steps = run_interval(tt, timer, 10, 1.0)
    assert steps == 10
    assert tt.evaluate(0.2) is True
    assert tt.result().outcome is Outcome.TIMEOUT


def test_timeout_at_the_schedule_horizon() -> None:
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=1000, horizon_samples=300)
    steps = run_interval(tt, timer, 100, 0.1)
    assert steps == 3  # due at the horizon, before the cadence
    assert tt.evaluate(0.5) is True
    r = tt.result()
    assert r.outcome is Outcome.TIMEOUT
    assert r.reason == "learning rate reached zero at the horizon of 300 samples at best 0.5000"


def test_reaching_the_target_at_the_horizon_is_reached() -> None:
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=1000, horizon_samples=300)
    run_interval(tt, timer, 100, 0.1)
    assert tt.evaluate(0.93) is True
    assert tt.result().outcome is Outcome.REACHED


def test_timeout_by_max_samples() -> None:
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=150, max_samples=200)
    assert run_interval(tt, timer, 100, 0.1) == 2  # 200 >= 150
    assert tt.evaluate(0.4) is True  # and 200 >= max_samples
    r = tt.result()
    assert r.outcome is Outcome.TIMEOUT
    assert r.reason == "sample limit 200 reached at best 0.4000"


@pytest.mark.parametrize(
    "kwargs,reason",
    [
        ({"train_loss": float("nan")}, "non-finite training loss at 100 samples"),
        ({"train_loss": float("inf")}, "non-finite training loss at 100 samples"),
        ({"loss": float("nan"), "train_loss": 1.0}, "non-finite held-out loss at 100 samples"),
    ],
)
def test_diverged_on_a_non_finite_loss(kwargs: dict, reason: str) -> None:
    timer = FakeTimer()
    tt = started(timer)
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.3, **kwargs) is True
    assert tt.result().outcome is Outcome.DIVERGED
    assert tt.result().reason == reason


def test_diverged_on_an_exploding_loss() -> None:
    timer = FakeTimer()
    tt = started(timer, divergence_factor=100.0)
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.3, loss=2.0, train_loss=2.0) is False
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.3, loss=50.0, train_loss=150.0) is False  # 75x: rough, not exploded
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.3, loss=1e3, train_loss=201.0) is True
    r = tt.result()
    assert r.outcome is Outcome.DIVERGED
    assert r.reason == "training loss 201 exploded past 100x its first value"


def test_reference_loss_catches_a_loss_that_explodes_in_the_first_interval() -> None:
    timer = FakeTimer()
    tt = TimeToTarget(target=0.9, eval_every_samples=100, cap_s=100.0, timer=timer)
    tt.start()
    tt.set_reference_loss(1.4)  # the untrained model's loss, measured during setup
    tt.training_started()
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.3, train_loss=7e12) is True
    assert tt.result().outcome is Outcome.DIVERGED


def test_a_non_finite_reference_loss_is_ignored() -> None:
    timer = FakeTimer()
    tt = TimeToTarget(target=0.9, eval_every_samples=100, cap_s=100.0, timer=timer)
    tt.start()
    tt.set_reference_loss(float("nan"))
    tt.training_started()
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.3, train_loss=2.0) is False
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.3, train_loss=300.0) is True  # against the first value, 2.0
    assert tt.result().outcome is Outcome.DIVERGED


def test_reached_wins_over_a_large_loss() -> None:
    # The objective is the metric: a model that classifies well with a huge loss reached.
    timer = FakeTimer()
    tt = started(timer)
    run_interval(tt, timer, 50, 0.1)
    tt.evaluate(0.2, train_loss=1.0)
    run_interval(tt, timer, 50, 0.1)
    assert tt.evaluate(0.95, train_loss=1e9) is True
    assert tt.result().outcome is Outcome.REACHED


def test_interrupted_when_the_study_deadline_passes() -> None:
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=10**6, deadline=timer.t + 2.5)
    assert run_interval(tt, timer, 10, 1.0) == 3  # the step that crosses the deadline asks to stop
    assert tt.evaluate(0.4) is True
    r = tt.result()
    assert r.outcome is Outcome.INTERRUPTED
    assert r.reason == "the study's time budget ran out during this trial"


def test_a_listener_can_end_the_trial_as_pruned() -> None:
    seen: list[Evaluation] = []

    def prune_second(tt: TimeToTarget, ev: Evaluation) -> Stop | None:
        seen.append(ev)
        return Stop(Outcome.PRUNED, f"behind the median at {ev.train_s:.1f} s") if len(seen) == 2 else None

    timer = FakeTimer()
    tt = started(timer, listeners=[prune_second])
    run_interval(tt, timer, 50, 0.5)
    assert tt.evaluate(0.3) is False
    run_interval(tt, timer, 50, 0.5)
    assert tt.evaluate(0.4) is True
    r = tt.result()
    assert r.outcome is Outcome.PRUNED
    assert r.reason == "behind the median at 2.0 s"
    assert [e.metric for e in seen] == [0.3, 0.4]


def test_listeners_are_not_asked_once_the_trial_has_ended() -> None:
    calls: list[str] = []

    def first(tt: TimeToTarget, ev: Evaluation) -> Stop | None:
        calls.append("first")
        return Stop(Outcome.CAPPED, "passed the incumbent", bound_s=1.5)

    def second(tt: TimeToTarget, ev: Evaluation) -> Stop | None:
        calls.append("second")
        return None

    timer = FakeTimer()
    tt = started(timer, listeners=[first, second])
    run_interval(tt, timer, 50, 0.5)
    assert tt.evaluate(0.3) is True
    assert tt.result().outcome is Outcome.CAPPED and tt.result().bound_s == 1.5  # the first stop, applied with its bound
    assert calls == ["first"]
    # A reached evaluation is decided before any listener is asked.
    calls.clear()
    tt = started(FakeTimer(), listeners=[first, second])
    tt.step(100)
    assert tt.evaluate(0.99) is True
    assert tt.result().outcome is Outcome.REACHED and calls == []


def test_finish_records_an_outside_verdict_once() -> None:
    timer = FakeTimer()
    tt = started(timer)
    run_interval(tt, timer, 50, 0.5)
    tt.evaluate(0.5)
    timer.advance(1.0)
    r = tt.finish(Outcome.OOM, "out of memory: CUDA out of memory")
    assert r.outcome is Outcome.OOM and r.best_metric == 0.5
    assert r.train_s == pytest.approx(2.0)  # training ran until the verdict
    assert tt.finish(Outcome.FAILED, "later") is r  # the first verdict stands


def test_result_before_the_end_is_an_error_and_bad_clock_is_refused() -> None:
    tt = started(FakeTimer())
    with pytest.raises(RuntimeError, match="has not ended"):
        tt.result()
    with pytest.raises(ValueError, match="clock must be one of robust, train, wall, cpu, got 'gpu'"):
        TimeToTarget(target=0.9, eval_every_samples=100, cap_s=1.0, clock="gpu")


@pytest.mark.parametrize("clock", ["robust", "train", "wall", "cpu"])
def test_stop_at_forces_an_evaluation_where_the_objective_clock_passes_it(clock: str) -> None:
    # Evaluations every 1000 samples at 10 a step would come after 100 steps of 0.125 s;
    # a stop time of 1.5 s on the objective's clock brings the first look to 1.5 s.
    # The bound is asked when the trial starts and after each evaluation that goes on.
    bound = [1.5]
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=1000, clock=clock, stop_at=lambda: bound[0])
    assert run_interval(tt, timer, batch=10, step_s=0.125) == 12
    bound[0] = 2.0
    tt.evaluate(0.3)
    # With a median measured, the robust clock is estimated from it between evaluations.
    assert run_interval(tt, timer, batch=10, step_s=0.125) == 4


def test_without_a_stop_time_evaluations_keep_their_cadence() -> None:
    timer = FakeTimer()
    tt = started(timer, eval_every_samples=1000)
    assert run_interval(tt, timer, batch=10, step_s=0.1) == 100


def test_the_cpu_clock_holds_when_other_processes_take_the_core() -> None:
    """The same steps on an idle machine and on one where the trial gets a third of a core:
    the train and robust clocks triple, the cpu clock (the thread's own CPU time) does not."""
    results = {}
    for share in (1.0, 1 / 3):
        timer = FakeTimer(cpu_share=share)
        tt = started(timer, clock="cpu", setup_s=1.0)
        for metric in (0.5, 0.7, 0.95):
            run_interval(tt, timer, 50, 0.01 / share)  # each step takes 10 ms of CPU, 30 ms of host time when loaded
            if tt.evaluate(metric):
                break
        results[share] = tt.result()
    idle, loaded = results[1.0], results[1 / 3]
    assert idle.reached and loaded.reached and idle.steps_to_target == loaded.steps_to_target == 6
    assert loaded.cpu_s_to_target == pytest.approx(idle.cpu_s_to_target) == pytest.approx(0.06)
    assert loaded.robust_s_to_target == pytest.approx(3 * idle.robust_s_to_target)
    assert loaded.time_to_target("cpu") == pytest.approx(0.06) and loaded.elapsed("cpu") == pytest.approx(0.06)
    assert [e.cpu_s for e in loaded.evaluations] == pytest.approx([0.02, 0.04, 0.06])


def test_the_cpu_clock_leaves_out_the_steps_the_scheduler_interrupted() -> None:
    """Beside busy processes a step that lost its core resumes on cold caches and takes more
    CPU time: it does not count against the trial; the robust clock keeps it."""
    timer = FakeTimer()
    tt = started(timer, clock="cpu", eval_every_samples=200)
    for step_s, interrupted in ((0.010, False), (0.010, False), (0.030, True), (0.010, False)):
        timer.advance(step_s)
        timer.switches += interrupted
        due = tt.step(50)
    assert due
    tt.evaluate(0.95)
    r = tt.result()
    assert r.median_step_cpu_s == pytest.approx(0.010) and r.cpu_s_to_target == pytest.approx(0.040)
    assert r.robust_s_to_target == pytest.approx(0.060)


def test_on_a_quiet_machine_the_cpu_clock_is_every_steps_mean() -> None:
    """Steps of uneven cost that nothing interrupted (a batch split in two, a slow first step) count in full."""
    timer = FakeTimer()
    tt = started(timer, clock="cpu", eval_every_samples=200)
    for step_s in (0.010, 0.020, 0.030, 0.020):
        timer.advance(step_s)
        tt.step(50)
    tt.evaluate(0.95)
    assert tt.result().cpu_s_to_target == pytest.approx(0.080)


class WorkersTimer(FakeTimer):
    """A timer whose trial has loader workers: their CPU time is in ``cpu_now``, not the thread's."""

    def __init__(self) -> None:
        super().__init__()
        self.workers_cpu = 0.0

    def cpu_now(self) -> float:
        return super().cpu_now() + self.workers_cpu

    def thread_now(self) -> tuple[float, int]:
        return super().cpu_now(), self.switches


def test_loader_workers_cpu_time_is_charged_in_full_though_it_lands_in_bursts() -> None:
    timer = WorkersTimer()
    tt = started(timer, clock="cpu", eval_every_samples=200)
    for i in range(4):
        timer.workers_cpu += 0.020 if i == 0 else 0.0  # the workers prefetch the interval's batches at once
        timer.advance(0.010)
        tt.step(50)
    tt.evaluate(0.95)
    assert tt.result().cpu_s_to_target == pytest.approx(4 * (0.010 + 0.005))


def test_the_per_trial_cap_is_on_the_cpu_clock_when_it_is_the_objectives() -> None:
    timer = FakeTimer(cpu_share=0.5)
    tt = started(timer, clock="cpu", cap_s=0.095)
    outcome = None
    while outcome is None:
        run_interval(tt, timer, 50, 0.02)
        if tt.evaluate(0.1):
            outcome = tt.result().outcome
    r = tt.result()
    assert outcome is Outcome.TIMEOUT and "cpu clock" in r.reason
    assert r.elapsed("cpu") == pytest.approx(0.1) and r.train_s == pytest.approx(0.2)
