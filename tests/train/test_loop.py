"""A trial on the synthetic task (tuner/train/trial.py, tuner/train/loop.py): every outcome,
precision, optimizer and schedule."""

from __future__ import annotations

import dataclasses
import math
import time

import pytest
import torch
from conftest import CPU, FAST
from torch import nn

from tuner.tasks.base import Task
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.time_to_target import StopRule, TimeToTarget
from tuner.train.trial import train_trial
from tuner.train.trial_config import AMSGRAD_OPTIMIZERS, OPTIMIZERS, PRECISIONS, SCHEDULES, TrialConfig
from tuner.train.verdict import Stop

GOOD = TrialConfig(lr=1e-2, batch_size=64)
STOP = FAST.stop_rule()
UNREACHABLE = dataclasses.replace(STOP, target=0.99)  # with the noisy task, whose best is near 0.66


def assert_consistent(r: TrialResult) -> None:
    """What every result records, whatever its outcome."""
    assert r.setup_s >= 0 and r.train_s >= 0
    assert r.wall_s >= r.train_s + r.setup_s - 1e-9
    assert r.samples >= r.steps  # every step took at least one sample
    assert [e.samples for e in r.evaluations] == sorted(e.samples for e in r.evaluations)
    if r.evaluations:
        assert r.best_metric == max(e.metric for e in r.evaluations)
        assert r.final_metric == r.evaluations[-1].metric


def test_reached_on_the_synthetic_task(synthetic: Task) -> None:
    r = train_trial(synthetic, GOOD, STOP, CPU, seed=0)
    assert r.outcome is Outcome.REACHED, r.reason
    assert_consistent(r)
    hit = r.evaluations[-1]
    assert hit.metric >= 0.9 > max((e.metric for e in r.evaluations[:-1]), default=0.0)  # the first crossing
    assert r.samples_to_target == hit.samples == r.samples
    assert r.samples_to_target % 64 == 0 and r.steps_to_target * 64 == r.samples_to_target
    assert r.samples_to_target >= STOP.eval_every_samples
    assert r.train_s_to_target == pytest.approx(hit.train_s)
    assert r.robust_s_to_target == pytest.approx(r.steps_to_target * r.median_step_s)
    assert r.throughput == pytest.approx(64 / r.median_step_s)
    # The cpu clock: the training thread's own CPU time, never more than the host time it took,
    # give or take the kernel's CPU-time accounting, which is coarser than the host clock.
    assert r.cpu_s_to_target == pytest.approx(r.steps_to_target * r.median_step_cpu_s)
    assert 0 < r.cpu_train_s <= 1.02 * r.train_s + 1e-3
    assert 0 < r.median_step_cpu_s <= 1.02 * r.median_step_s + 1e-3
    assert [e.cpu_s is not None and e.cpu_s > 0 for e in r.evaluations] == [True] * len(r.evaluations)
    assert 0 < r.train_s_to_target <= r.wall_s_to_target
    assert all(e.train_loss is not None and math.isfinite(e.train_loss) for e in r.evaluations)


def test_the_same_seed_gives_the_same_trajectory(synthetic: Task) -> None:
    a = train_trial(synthetic, GOOD, STOP, CPU, seed=3)
    b = train_trial(synthetic, GOOD, STOP, CPU, seed=3)
    assert [(e.samples, e.metric) for e in a.evaluations] == [(e.samples, e.metric) for e in b.evaluations]


def test_timeout_with_an_unreachable_target(hard_synthetic: Task) -> None:
    objective = dataclasses.replace(UNREACHABLE, max_samples=3000)
    r = train_trial(hard_synthetic, GOOD, objective, CPU)
    assert r.outcome is Outcome.TIMEOUT
    assert r.reason.startswith("sample limit 3000 reached at best ")
    assert r.samples >= 3000 and r.best_metric < 0.99
    assert r.samples_to_target is None
    assert_consistent(r)


def test_timeout_by_the_per_trial_cap(hard_synthetic: Task) -> None:
    objective = dataclasses.replace(UNREACHABLE, cap_s=0.05, clock="train")
    start = time.perf_counter()
    r = train_trial(hard_synthetic, GOOD, objective, CPU)
    assert r.outcome is Outcome.TIMEOUT
    assert r.reason.startswith("per-trial cap of 0.05 s (train clock)")
    assert r.train_s >= 0.05
    assert time.perf_counter() - start < 10.0  # stopped soon after the cap (slack for a busy machine)


def test_timeout_at_the_schedule_horizon(hard_synthetic: Task) -> None:
    config = dataclasses.replace(GOOD, schedule="warmup_linear", horizon_samples=1000)
    r = train_trial(hard_synthetic, config, UNREACHABLE, CPU)
    assert r.outcome is Outcome.TIMEOUT
    assert "horizon of 1000 samples" in r.reason
    assert 1000 <= r.samples < 1000 + 64


@pytest.mark.parametrize("lr", [1e20, 1e30])
def test_diverged_with_an_absurd_learning_rate_non_finite(synthetic: Task, lr: float) -> None:
    r = train_trial(synthetic, dataclasses.replace(GOOD, lr=lr), UNREACHABLE, CPU)
    assert r.outcome is Outcome.DIVERGED
    assert r.reason.startswith("non-finite training loss at ")
    assert math.isnan(r.evaluations[-1].train_loss)
    assert r.samples <= STOP.eval_every_samples + 64  # stopped at the first evaluation


@pytest.mark.parametrize("lr", [1e3, 1e6])
def test_diverged_with_an_absurd_learning_rate_exploding(hard_synthetic: Task, lr: float) -> None:
    # Adam's steps do not grow with the gradient, so these stay finite (loss ~1e7..1e13):
    # measured against the untrained model's loss they have exploded at the first look.
    objective = dataclasses.replace(UNREACHABLE, max_samples=10_000)
    r = train_trial(hard_synthetic, dataclasses.replace(GOOD, lr=lr), objective, CPU)
    assert r.outcome is Outcome.DIVERGED, r.reason
    assert "exploded past 100x its first value" in r.reason
    assert len(r.evaluations) == 1 and r.evaluations[0].train_loss > 1e6


class _Raises(nn.Module):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 4)
        self.error = error

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise self.error


class _Allocates(nn.Module):
    """Asks the CPU allocator for 400 TB, more than any address space: a real allocation failure."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + torch.empty(10**14).sum()


def task_with_model(base: Task, build) -> Task:
    return dataclasses.replace(base, name="broken", build_model=build)


def test_failed_when_the_model_raises(synthetic: Task) -> None:
    task = task_with_model(synthetic, lambda width: _Raises(ValueError("shapes do not match\nsecond line")))
    r = train_trial(task, GOOD, STOP, CPU)
    assert r.outcome is Outcome.FAILED
    assert r.reason == "ValueError: shapes do not match"
    assert r.evaluations == [] and r.best_metric is None


def test_failed_when_the_model_cannot_be_built(synthetic: Task) -> None:
    def build(width: float) -> nn.Module:
        raise KeyError("no such layer")

    r = train_trial(task_with_model(synthetic, build), GOOD, STOP, CPU)
    assert r.outcome is Outcome.FAILED
    assert r.reason == "KeyError: 'no such layer'"


def test_oom_outcome_from_a_model_that_raises_out_of_memory(synthetic: Task) -> None:
    task = task_with_model(synthetic, lambda width: _Raises(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")))
    r = train_trial(task, GOOD, STOP, CPU)
    assert r.outcome is Outcome.OOM
    assert r.reason == "out of memory: CUDA out of memory. Tried to allocate 20.00 GiB"


def test_oom_outcome_from_a_real_cpu_allocation_failure(synthetic: Task) -> None:
    r = train_trial(task_with_model(synthetic, lambda width: _Allocates()), GOOD, STOP, CPU)
    assert r.outcome is Outcome.OOM, r.reason
    assert "can't allocate memory" in r.reason


@pytest.mark.parametrize("precision", PRECISIONS)
def test_every_precision_trains_to_the_target(synthetic: Task, precision: str) -> None:
    r = train_trial(synthetic, dataclasses.replace(GOOD, precision=precision), STOP, CPU)
    assert r.outcome is Outcome.REACHED, r.reason
    assert all(math.isfinite(e.train_loss) for e in r.evaluations)


@pytest.mark.parametrize("optimizer,amsgrad", [(o, False) for o in OPTIMIZERS] + [(o, True) for o in AMSGRAD_OPTIMIZERS])
def test_every_optimizer_trains_to_the_target(synthetic: Task, optimizer: str, amsgrad: bool) -> None:
    config = dataclasses.replace(
        GOOD, optimizer=optimizer, amsgrad=amsgrad, weight_decay=0.01 if optimizer == "adamw" else 0.0, beta1=0.8, beta2=0.99
    )
    r = train_trial(synthetic, config, STOP, CPU)
    assert r.outcome is Outcome.REACHED, r.reason


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_schedule_trains_to_the_target(synthetic: Task, schedule: str) -> None:
    config = dataclasses.replace(GOOD, lr=3e-2, schedule=schedule, warmup_frac=0.05, horizon_samples=20_000)
    r = train_trial(synthetic, config, STOP, CPU)
    assert r.outcome is Outcome.REACHED, r.reason


def test_width_changes_the_model(synthetic: Task) -> None:
    sizes = [sum(p.numel() for p in synthetic.build_model(w).parameters()) for w in (0.5, 1.0, 2.0)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 3
    r = train_trial(synthetic, dataclasses.replace(GOOD, width=0.5), STOP, CPU)
    assert r.outcome is Outcome.REACHED


def test_a_listener_prunes_the_trial(hard_synthetic: Task) -> None:
    def prune_at_second(tt: TimeToTarget, ev: Evaluation) -> Stop | None:
        return Stop(Outcome.PRUNED, "behind the others") if len(tt.evaluations) == 2 else None

    r = train_trial(hard_synthetic, GOOD, UNREACHABLE, CPU, listeners=[prune_at_second])
    assert r.outcome is Outcome.PRUNED and r.reason == "behind the others"
    assert len(r.evaluations) == 2


def test_a_passed_deadline_interrupts_the_trial(hard_synthetic: Task) -> None:
    r = train_trial(hard_synthetic, GOOD, UNREACHABLE, CPU, deadline=time.perf_counter())
    assert r.outcome is Outcome.INTERRUPTED
    assert r.steps == 1  # the first step saw the deadline


def test_a_whole_batch_larger_than_the_data_is_clamped(synthetic: Task) -> None:
    small = dataclasses.replace(synthetic, train_x=synthetic.train_x[:100], train_y=synthetic.train_y[:100])
    r = train_trial(
        small, dataclasses.replace(GOOD, batch_size=512), StopRule(target=0.9, eval_every_samples=100, cap_s=5.0, max_samples=5000), CPU
    )
    assert r.outcome in (Outcome.REACHED, Outcome.TIMEOUT)
    assert r.samples % 100 == 0  # each step took the 100 samples there are
