"""Data-parallel trials (tuner/train/data_parallel.py): two gloo processes on this CPU."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import CPU, FAST, synthetic_experiment

from tuner.study.experiment import load_experiment
from tuner.train.data_parallel import max_devices, unrunnable_devices
from tuner.train.result import Outcome
from tuner.study.search_space import Choice, Fixed, SearchSpace
from tuner.study.runner import runnable_space
from tuner.tasks.base import Task
from tuner.train.loop import train_trial
from tuner.train.trial_config import TrialConfig


def test_a_trial_on_two_cpu_processes_reaches_the_target_and_counts_both(synthetic: Task) -> None:
    config = TrialConfig(devices=2, batch_size=64, lr=1e-2)
    result = train_trial(synthetic, config, FAST, CPU, seed=0)
    assert result.outcome is Outcome.REACHED, result.reason
    # batch_size is the step's effective batch: 32 samples on each of the two processes.
    assert result.rank_samples == [result.samples // 2, result.samples // 2]
    assert result.samples == result.steps * 64 == result.samples_to_target
    assert result.throughput is not None and result.throughput > 0
    assert torch.get_num_threads() == 1  # the worker's threads are back after the trial


def test_one_process_trains_as_before(synthetic: Task) -> None:
    result = train_trial(synthetic, TrialConfig(batch_size=64, lr=1e-2), FAST, CPU, seed=0)
    assert result.reached and result.rank_samples is None


def test_a_task_not_built_by_name_fails_the_trial_with_a_reason(synthetic: Task) -> None:
    unnamed = Task("mine", synthetic.train_x, synthetic.train_y, synthetic.test_x, synthetic.test_y, synthetic.build_model)
    result = train_trial(unnamed, TrialConfig(devices=2), FAST, CPU)
    assert result.outcome is Outcome.FAILED
    assert "built by name" in result.reason


def test_device_counts_the_machine_cannot_run_are_removed_before_the_study(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "ddp.yaml", "")
    text = path.read_text().replace("precision: fp32", "precision: fp32\n    devices: {choices: [1, 2, 4096]}")
    path.write_text(text)
    experiment = load_experiment(path)
    space, notes = runnable_space(experiment, CPU)
    assert space.dims["devices"] == Choice((1, 2))
    assert any("removed devices=4096" in n and "CPU core" in n for n in notes)
    assert max_devices(space) == 2


def test_max_devices_reads_fixed_and_absent_dimensions() -> None:
    assert max_devices(SearchSpace({})) == 1
    assert max_devices(SearchSpace({"devices": Fixed(3)})) == 3
    assert unrunnable_devices(SearchSpace({"devices": Fixed(1)}), CPU) == {}


def test_a_process_that_fails_to_start_fails_the_trial_with_its_error(synthetic: Task) -> None:
    import dataclasses

    broken = dataclasses.replace(synthetic, spec=("no_such_package.tasks:task", {}))
    result = train_trial(broken, TrialConfig(devices=2), FAST, CPU)
    assert result.outcome is Outcome.FAILED
    assert "rank 1" in result.reason and "no_such_package" in result.reason
