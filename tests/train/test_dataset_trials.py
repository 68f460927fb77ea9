"""Trials of Dataset tasks: the same curve as tensors, caches and workers that change only speed, the data-wait share."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import CPU
from torch.utils.data import TensorDataset

from tuner.tasks.base import Task
from tuner.tasks.image_folder_gen import make_image_folder
from tuner.tasks.registry import build_task
from tuner.train.result import Outcome
from tuner.train.time_to_target import StopRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

# Eight evaluations, then the sample limit: a fixed curve to compare, whatever the speed.
EIGHT_LOOKS = StopRule(target=1.0, eval_every_samples=256, cap_s=60.0, max_samples=2048)
CONFIG = TrialConfig(lr=1e-2, batch_size=64)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_image_folder(tmp_path_factory.mktemp("shapes") / "set", n=80, size=16, classes=4, seed=1, test_fraction=0.25)


def curve(result) -> list[tuple[int, float]]:
    return [(e.samples, e.metric) for e in result.evaluations]


def test_a_dataset_trial_follows_the_tensor_trial_of_the_same_data(hard_synthetic: Task) -> None:
    synthetic = hard_synthetic  # its best is near 0.66: eight looks, then the sample limit
    as_datasets = Task(
        "synthetic-as-datasets",
        build_model=synthetic.build_model,
        train_data=TensorDataset(synthetic.train_x, synthetic.train_y),
        test_data=TensorDataset(synthetic.test_x, synthetic.test_y),
    )
    tensors = train_trial(synthetic, CONFIG, EIGHT_LOOKS, CPU, seed=7)
    datasets = train_trial(as_datasets, CONFIG, EIGHT_LOOKS, CPU, seed=7)
    assert tensors.outcome is datasets.outcome is Outcome.TIMEOUT, (tensors.reason, datasets.reason)
    assert len(curve(tensors)) == 8
    # Same permutation, same batches, same model: the same curve, to float rounding.
    assert [s for s, _ in curve(datasets)] == [s for s, _ in curve(tensors)]
    assert [m for _, m in curve(datasets)] == pytest.approx([m for _, m in curve(tensors)], abs=1e-6)
    assert tensors.data_wait_share is None  # nothing waits on a loader there
    assert 0 <= datasets.data_wait_share <= 1


@pytest.mark.parametrize(
    "pipeline",
    [
        {"cache": "memory"},
        {"cache": "device"},
        {"num_workers": 2, "persistent_workers": True, "prefetch_factor": 4},
        {"num_workers": 1, "cache": "memory"},
    ],
)
def test_the_pipeline_changes_the_speed_not_the_curve(folder: Path, pipeline: dict) -> None:
    task = build_task("image-folder", {"path": str(folder), "size": 16, "augment": False})
    config = dataclasses.replace(CONFIG, batch_size=16, width=0.25)
    rule = dataclasses.replace(EIGHT_LOOKS, eval_every_samples=64, max_samples=192)
    plain = train_trial(task, config, rule, CPU, seed=3)
    other = train_trial(task, dataclasses.replace(config, **pipeline), rule, CPU, seed=3)
    assert plain.outcome is other.outcome is Outcome.TIMEOUT, (plain.reason, other.reason)
    assert [s for s, _ in curve(other)] == [s for s, _ in curve(plain)]
    assert [m for _, m in curve(other)] == pytest.approx([m for _, m in curve(plain)], abs=1e-5)
    assert 0 < other.data_wait_share <= 1  # a real loader was waited on, for some of the time


def test_an_augmented_image_folder_trial_with_persistent_workers_records_its_wait(folder: Path) -> None:
    task = build_task("image-folder", {"path": str(folder), "size": 16})
    config = TrialConfig(lr=1e-2, batch_size=16, width=0.25, num_workers=1, persistent_workers=True)
    result = train_trial(task, config, StopRule(target=1.0, eval_every_samples=48, cap_s=30.0, max_samples=144), CPU, seed=0)
    assert result.outcome is Outcome.TIMEOUT and result.reason.startswith("sample limit"), result.reason
    assert [e.samples for e in result.evaluations] == [48, 96, 144]
    assert 0 < result.data_wait_share < 1


def test_a_data_parallel_dataset_trial_shards_each_batch(folder: Path) -> None:
    # BatchNorm sees each process's half batch, so the curve is not the single process's;
    # what must hold: every process read its own half of every step's batch, through its loader.
    task = build_task("image-folder", {"path": str(folder), "size": 16, "augment": False})
    config = TrialConfig(lr=1e-2, batch_size=16, width=0.25, devices=2, cache="memory")
    result = train_trial(task, config, StopRule(target=1.0, eval_every_samples=48, cap_s=30.0, max_samples=96), CPU, seed=0)
    assert result.outcome is Outcome.TIMEOUT, result.reason
    assert result.samples == 96 and result.rank_samples == [48, 48]
    assert 0 < result.data_wait_share < 1
