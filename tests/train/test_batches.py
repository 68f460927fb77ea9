"""Batch feeds: tensors and DataLoaders draw the same order; workers, caches and shards change nothing but speed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from conftest import CPU
from torch.utils.data import TensorDataset

from tuner.tasks.base import Task
from tuner.tasks.image_folder_gen import make_image_folder
from tuner.tasks.images import image_folder
from tuner.train.batches import EpochBatchSampler, LoaderBatches, TensorBatches, loader_options, make_batches
from tuner.train.data_cache import MemoryCache, check_fits, materialise
from tuner.train.trial_config import TrialConfig

BASE = TrialConfig(batch_size=8)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """48 images of 4 classes, 16 pixels, as train/ and test/."""
    return make_image_folder(tmp_path_factory.mktemp("shapes") / "set", n=48, size=16, classes=4, seed=5, test_fraction=0.25)


def tensor_task() -> Task:
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(50, 3, generator=gen), torch.randint(0, 2, (50,), generator=gen)
    return Task("t", x, y, x[:10], y[:10], build_model=lambda w: torch.nn.Linear(3, 2))


def dataset_task(task: Task) -> Task:
    return Task(
        "d",
        build_model=task.build_model,
        train_data=TensorDataset(task.train_x, task.train_y),
        test_data=TensorDataset(task.test_x, task.test_y),
    )


def epochs(feed, n: int = 2) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [batch for _ in range(n) for batch in feed.epoch()]


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(torch.equal(x1, x2) and torch.equal(y1, y2) for (x1, y1), (x2, y2) in zip(a, b))


def test_a_dataset_is_fed_in_the_tensor_path_order() -> None:
    tensors = tensor_task()
    tensor_feed = make_batches(tensors, BASE, CPU, seed=3)
    loader_feed = make_batches(dataset_task(tensors), BASE, CPU, seed=3)
    assert isinstance(tensor_feed, TensorBatches) and isinstance(loader_feed, LoaderBatches)
    a, b = epochs(tensor_feed), epochs(loader_feed)
    assert len(a) == 2 * (50 // 8)  # the partial batch is dropped
    assert same(a, b)
    assert not same(a[:6], a[6:])  # a new permutation each epoch
    assert tensor_feed.wait_s is None and loader_feed.wait_s >= 0  # only a Dataset's wait is measured
    assert same(list(tensor_feed.held_out()), list(loader_feed.held_out()))


def test_processes_of_a_data_parallel_trial_share_each_global_batch() -> None:
    one = list(EpochBatchSampler(50, 8, seed=2))
    shards = [list(EpochBatchSampler(50, 8, seed=2, rank=r, world=2)) for r in range(2)]
    assert [len(b) for b in shards[0]] == [4] * 6
    # Rank 0's slice then rank 1's is the single process's batch, step for step.
    assert [a + b for a, b in zip(*shards)] == one
    tensors = tensor_task()
    for rank in range(2):
        loader = make_batches(dataset_task(tensors), BASE, CPU, seed=2, rank=rank, world=2)
        tensor = make_batches(tensors, BASE, CPU, seed=2, rank=rank, world=2)
        assert loader.batch == tensor.batch == 8
        assert same(epochs(loader), epochs(tensor))


def test_workers_give_the_same_augmented_batches_as_the_main_process(folder: Path) -> None:
    data = image_folder(folder, augment=True)
    task = Task("img", build_model=data.build_model, train_data=data.train, test_data=data.test)
    plain = epochs(make_batches(task, BASE, CPU, seed=0))
    for persistent in (False, True):
        config = dataclasses.replace(BASE, num_workers=2, persistent_workers=persistent, prefetch_factor=3)
        feed = make_batches(task, config, CPU, seed=0)
        assert feed.loader.num_workers == 2 and feed.loader.prefetch_factor == 3
        assert feed.loader.persistent_workers is persistent
        # The epoch rides with each index: persistent workers, which keep their own copy of
        # the dataset, still draw epoch 1's crops in epoch 1.
        assert same(epochs(feed), plain)
        feed.close()
    assert not same(plain[:4], [b for b in epochs(make_batches(task, BASE, CPU, seed=0), 1)][4:8])


def test_pipeline_options_reach_the_loader_only_where_they_apply() -> None:
    assert loader_options(BASE, CPU, 0).keys() == {"num_workers", "pin_memory", "generator"}
    with_workers = loader_options(dataclasses.replace(BASE, num_workers=1, pin_memory=True, prefetch_factor=4), CPU, 0)
    assert with_workers["prefetch_factor"] == 4 and with_workers["persistent_workers"] is False
    assert with_workers["pin_memory"] is False  # pinned pages only help copies to a GPU


@pytest.mark.parametrize("cache", ["memory", "device"])
def test_a_cache_feeds_the_same_batches_when_nothing_is_augmented(folder: Path, cache: str) -> None:
    data = image_folder(folder, augment=False)
    task = Task("img", build_model=data.build_model, train_data=data.train, test_data=data.test)
    plain = make_batches(task, BASE, CPU, seed=4)
    cached = make_batches(task, dataclasses.replace(BASE, cache=cache), CPU, seed=4)
    assert same(epochs(plain, 3), epochs(cached, 3))
    assert same(list(plain.held_out()), list(cached.held_out()))
    assert cached.wait_s > 0  # cache=device decodes the set within the first epoch, on the clock


def test_the_memory_cache_keeps_augmenting_per_epoch(folder: Path) -> None:
    data = image_folder(folder, augment=True)
    task = Task("img", build_model=data.build_model, train_data=data.train, test_data=data.test)
    plain = epochs(make_batches(task, BASE, CPU, seed=4), 3)
    assert same(epochs(make_batches(task, dataclasses.replace(BASE, cache="memory"), CPU, seed=4), 3), plain)


def test_workers_fill_one_shared_memory_cache(folder: Path) -> None:
    data = image_folder(folder, augment=False)
    cache = MemoryCache(data.train)
    task = Task("img", build_model=data.build_model, train_data=data.train, test_data=data.test)
    config = dataclasses.replace(BASE, num_workers=2)
    feed = LoaderBatches(cache, data.test, config, CPU, seed=0)
    feed.loader.dataset.dataset = cache  # read through the cache made above, to look inside it
    list(feed.epoch())
    # Filled by the worker processes, seen here: the storage is shared, not copied per worker.
    assert int(cache.filled.sum()) == (len(cache) // 8) * 8
    index = int(cache.filled.nonzero()[0])
    assert torch.equal(cache.inputs[index], data.train.decode(index)[0])
    assert task.n_train == len(cache)


def test_a_cache_that_does_not_fit_is_out_of_memory() -> None:
    with pytest.raises(MemoryError, match="out of memory: caching the data set needs 100 MiB on cpu, 150 MiB free"):
        check_fits(100 * 2**20, "cpu", 150 * 2**20)
    x, y = materialise(TensorDataset(torch.ones(5, 2), torch.arange(5)), CPU)
    assert x.shape == (5, 2) and y.dtype == torch.int64
