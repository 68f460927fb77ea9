"""How training batches reach the model: cut from tensors on the device, or read through a DataLoader.

The training loop asks a feed for one epoch at a time and iterates (inputs, labels) batches
already on the trial's device; it does not know where they come from. Three feeds:

- a tensor task: the tensors go to the device once, and each epoch is a permutation of them
  cut into batches (no host work but the indexing);
- a Dataset task: a DataLoader with the trial's pipeline dimensions (``num_workers``,
  ``pin_memory``, ``persistent_workers``, ``prefetch_factor``), over the dataset or its
  decoded samples cached in shared memory (``cache: memory``, tuner/train/data_cache.py);
- a Dataset task with ``cache: device``: the decoded set as tensors on the device, made at the
  first epoch (on the train clock: it is waiting for data), then cut as for a tensor task.

Every feed draws the same order: one permutation of the training set per epoch from a
generator seeded with the trial's seed, cut into batches of ``batch_size`` (the last partial
batch dropped). A data-parallel trial cuts the same global batches and gives each process
its own slice of each (``EpochBatchSampler``, the distributed sampler of a Dataset task),
so ``devices`` changes the speed, not what is trained.

A Dataset feed measures ``wait_s``: host time blocked in ``next()`` on its iterator (and in
making the iterator, which starts the workers of a non-persistent loader), read from the
host clock only, never synchronising the device. It is training time and stays on the clock;
``wait_s / train_s`` is the trial's ``data_wait_share``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from tuner.tasks.base import Task
from tuner.train.data_cache import MemoryCache, materialise
from tuner.train.trial_config import TrialConfig

Batch = tuple[torch.Tensor, torch.Tensor]
EVAL_CHUNK = 8192  # held-out samples per forward pass of a tensor task
EVAL_BATCH = 1024  # held-out samples per batch of a Dataset task's loader


class Batches(Protocol):
    """What the training loop iterates: an epoch of batches on the device, and the held-out split."""

    batch: int  # samples per optimizer step, all processes together
    local: int  # this process's share of each batch
    wait_s: float | None  # host seconds blocked waiting for data; None where not measured (tensor tasks)

    def epoch(self) -> Iterator[Batch]: ...

    def held_out(self) -> Iterator[Batch]: ...

    def close(self) -> None: ...


def make_batches(
    task: Task,
    config: TrialConfig,
    device: torch.device,
    seed: int,
    rank: int = 0,
    world: int = 1,
    shuffle_device: torch.device | None = None,
) -> Batches:
    """The feed for this task and trial configuration (``rank`` of ``world`` processes).

    ``shuffle_device`` is where a tensor feed draws each epoch's order: the data's device
    for one process (no copy), the CPU for several (the very same order on every rank).
    """
    shuffle = shuffle_device or (device if world == 1 else torch.device("cpu"))
    if task.train_data is None:
        return TensorBatches(
            lambda: (task.train_x, task.train_y),
            lambda: (task.test_x, task.test_y),
            len(task.train_x),
            config.batch_size,
            device,
            seed,
            rank,
            world,
            shuffle,
            timed=False,
        )
    workers = config.num_workers
    if config.cache == "device":
        return TensorBatches(
            lambda: materialise(task.train_data, device, workers),
            lambda: materialise(task.test_data, device, workers),
            len(task.train_data),
            config.batch_size,
            device,
            seed,
            rank,
            world,
            shuffle,
            timed=True,
        )
    return LoaderBatches(task.train_data, task.test_data, config, device, seed, rank, world)


def split_batch(batch_size: int, n: int, world: int) -> tuple[int, int]:
    """(samples per process, samples per step): the batch split evenly, the remainder dropped."""
    local = max(1, min(batch_size, n) // world)
    return local, local * world


class TensorBatches:
    """Batches cut from tensors on the device; ``load`` and ``load_test`` give them (the test split when first asked)."""

    def __init__(
        self,
        load: Callable[[], Batch],
        load_test: Callable[[], Batch],
        n: int,
        batch_size: int,
        device: torch.device,
        seed: int,
        rank: int = 0,
        world: int = 1,
        shuffle_device: torch.device | None = None,
        timed: bool = False,
    ) -> None:
        self.load, self.load_test, self.n, self.device = load, load_test, n, device
        self.rank, self.world = rank, world
        self.local, self.batch = split_batch(batch_size, n, world)
        self.generator = torch.Generator(shuffle_device or device).manual_seed(seed)
        self.wait_s: float | None = 0.0 if timed else None
        self.train: Batch | None = None
        self.test: Batch | None = None
        if not timed:  # a tensor task's data goes to the device in setup, off the clock, as it always has
            self._load_train()
            self._load_test()

    def _load_train(self) -> Batch:
        if self.train is None:
            x, y = self.load()
            self.train = (x.to(self.device), y.to(self.device))
        return self.train

    def _load_test(self) -> Batch:
        if self.test is None:
            x, y = self.load_test()
            self.test = (x.to(self.device), y.to(self.device))
        return self.test

    def epoch(self) -> Iterator[Batch]:
        batches = self._epoch()
        return _timed(batches, self) if self.wait_s is not None else batches

    def _epoch(self) -> Iterator[Batch]:
        x, y = self._load_train()  # cache=device: the whole set decoded now, within the first timed next()
        order = torch.randperm(self.n, device=self.generator.device, generator=self.generator).to(self.device)
        for start in range(0, self.n - self.batch + 1, self.batch):
            idx = order[start + self.rank * self.local : start + (self.rank + 1) * self.local]
            yield x[idx], y[idx]

    def held_out(self) -> Iterator[Batch]:
        x, y = self._load_test()
        for start in range(0, len(x), EVAL_CHUNK):
            yield x[start : start + EVAL_CHUNK], y[start : start + EVAL_CHUNK]

    def close(self) -> None:
        self.train = self.test = None


class EpochBatchSampler(Sampler[list[tuple[int, int]]]):
    """Each epoch one permutation of ``n`` samples, cut into global batches; this process's slice of each.

    Yields lists of (epoch, index), so that a dataset with ``set_epoch`` draws that epoch's
    augmentation even in a persistent worker, which holds its own copy of the dataset.
    Seeded once: the same permutations, in the same order, as a tensor task on the CPU.
    """

    def __init__(self, n: int, batch_size: int, seed: int, rank: int = 0, world: int = 1) -> None:
        self.n, self.rank = n, rank
        self.local, self.batch = split_batch(batch_size, n, world)
        self.generator = torch.Generator().manual_seed(seed)
        self.epochs = 0

    def __len__(self) -> int:
        return self.n // self.batch

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        epoch, self.epochs = self.epochs, self.epochs + 1
        order = torch.randperm(self.n, generator=self.generator).tolist()
        for start in range(0, self.n - self.batch + 1, self.batch):
            yield [(epoch, i) for i in order[start + self.rank * self.local : start + (self.rank + 1) * self.local]]


class EpochItems(Dataset):
    """Items asked for as (epoch, index): sets the dataset's epoch (where it has one), then reads the item."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset
        self.set_epoch = getattr(dataset, "set_epoch", None)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: tuple[int, int]) -> Any:
        epoch, index = key
        if callable(self.set_epoch):
            self.set_epoch(epoch)
        return self.dataset[index]


def loader_options(config: TrialConfig, device: torch.device, seed: int) -> dict[str, Any]:
    """DataLoader arguments from the trial's pipeline dimensions (those that apply to it)."""
    options: dict[str, Any] = {
        "num_workers": config.num_workers,
        "pin_memory": config.pin_memory and device.type == "cuda",  # pinned pages only speed copies to a GPU
        # Its own generator: the loader draws worker seeds from it, not from the global RNG the model uses.
        "generator": torch.Generator().manual_seed(seed),
    }
    if config.num_workers > 0:  # the DataLoader refuses these without workers
        options["persistent_workers"] = config.persistent_workers
        options["prefetch_factor"] = config.prefetch_factor
    return options


class LoaderBatches:
    """Batches read through DataLoaders (training: shuffled per epoch; held-out: in order)."""

    def __init__(self, train: Any, test: Any, config: TrialConfig, device: torch.device, seed: int, rank: int = 0, world: int = 1) -> None:
        if config.cache == "memory":
            train, test = MemoryCache(train), MemoryCache(test)
        self.device = device
        self.sampler = EpochBatchSampler(len(train), config.batch_size, seed, rank, world)
        self.batch, self.local = self.sampler.batch, self.sampler.local
        options = loader_options(config, device, seed)
        self.loader: DataLoader | None = DataLoader(EpochItems(train), batch_sampler=self.sampler, **options)
        self.test_loader: DataLoader | None = DataLoader(test, batch_size=EVAL_BATCH, **options)
        self.non_blocking = bool(options["pin_memory"])  # a copy from pinned memory can overlap the step
        self.wait_s: float | None = 0.0

    def epoch(self) -> Iterator[Batch]:
        assert self.loader is not None, "the feed is closed"
        return _timed(self._to_device(self.loader), self)

    def held_out(self) -> Iterator[Batch]:
        assert self.test_loader is not None, "the feed is closed"
        return self._to_device(iter(self.test_loader))

    def _to_device(self, batches: Any) -> Iterator[Batch]:
        for x, y in batches:
            yield x.to(self.device, non_blocking=self.non_blocking), y.to(self.device, non_blocking=self.non_blocking)

    def close(self) -> None:
        # Persistent workers stop when their loader's iterator goes: drop the references now,
        # not whenever the trial's objects are collected.
        self.loader = self.test_loader = None


def _timed(batches: Iterator[Batch], feed: Any) -> Iterator[Batch]:
    """The same batches; host time blocked in each ``next()`` added to ``feed.wait_s``."""
    clock = time.perf_counter
    while True:
        start = clock()
        try:
            batch = next(batches)
        except StopIteration:
            feed.wait_s += clock() - start
            return
        feed.wait_s += clock() - start
        yield batch
