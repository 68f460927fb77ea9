"""Data-parallel trials (tuner/train/data_parallel.py): two gloo processes on this CPU."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import CPU, FAST

from tuner.tasks.base import Task
from tuner.train.result import Outcome
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

STOP = FAST.stop_rule()


def test_a_trial_on_two_cpu_processes_reaches_the_target_and_counts_both(synthetic: Task) -> None:
    config = TrialConfig(devices=2, batch_size=64, lr=1e-2)
    result = train_trial(synthetic, config, STOP, CPU, seed=0)
    assert result.outcome is Outcome.REACHED, result.reason
    # batch_size is the step's effective batch: 32 samples on each of the two processes.
    assert result.rank_samples == [result.samples // 2, result.samples // 2]
    assert result.samples == result.steps * 64 == result.samples_to_target
    assert result.throughput is not None and result.throughput > 0
    assert torch.get_num_threads() == 1  # the worker's threads are back after the trial


def test_one_process_trains_as_before(synthetic: Task) -> None:
    result = train_trial(synthetic, TrialConfig(batch_size=64, lr=1e-2), STOP, CPU, seed=0)
    assert result.reached and result.rank_samples is None


def test_a_task_not_built_by_name_fails_the_trial_with_a_reason(synthetic: Task) -> None:
    unnamed = Task("mine", synthetic.train_x, synthetic.train_y, synthetic.test_x, synthetic.test_y, synthetic.build_model)
    result = train_trial(unnamed, TrialConfig(devices=2), STOP, CPU)
    assert result.outcome is Outcome.FAILED
    assert "built by name" in result.reason


def test_a_process_that_fails_to_start_fails_the_trial_with_its_error(synthetic: Task) -> None:
    broken = dataclasses.replace(synthetic, spec=("no_such_package.tasks:task", {}))
    result = train_trial(broken, TrialConfig(devices=2), STOP, CPU)
    assert result.outcome is Outcome.FAILED
    assert "rank 1" in result.reason and "no_such_package" in result.reason


def test_two_processes_follow_the_single_process_curve(hard_synthetic: Task) -> None:
    # On a CPU both draw each epoch's order from the same seeded generator, and DDP averages
    # the two halves' mean gradients, which is the whole batch's mean gradient: the same
    # training up to float32 rounding (32-row instead of 64-row matmuls, the halves summed in
    # another order). That rounding is ~1e-7 per step and stays small over these 50 steps
    # (measured: equal accuracies, losses within 3e-7), so the bounds below are loose enough
    # for any thread count yet far tighter than two seeds' difference (several percent).
    config = TrialConfig(batch_size=64, lr=1e-2)
    rule = dataclasses.replace(STOP, target=0.99, max_samples=3200)  # the noisy task: never reached
    one = train_trial(hard_synthetic, config, rule, CPU, seed=1)
    two = train_trial(hard_synthetic, dataclasses.replace(config, devices=2), rule, CPU, seed=1)
    assert one.outcome is two.outcome is Outcome.TIMEOUT, (one.reason, two.reason)
    assert [e.samples for e in two.evaluations] == [e.samples for e in one.evaluations] != []
    for a, b in zip(one.evaluations, two.evaluations):
        assert b.metric == pytest.approx(a.metric, abs=0.004)  # at most 2 of the 500 held-out samples
        assert b.loss == pytest.approx(a.loss, rel=1e-4)
    assert two.rank_samples == [one.samples // 2] * 2
