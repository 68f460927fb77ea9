"""The ``cache`` dimension of a Dataset task: decoded samples kept in RAM, or the whole set on the device.

A dataset may split its items in two (duck-typed, nothing to subclass):

- ``decode(index) -> (input, label)``: the expensive, deterministic part (read a file, decode
  it, normalise); this is what a cache keeps;
- ``transform(input, index) -> input``: the per-epoch random part (augmentation), applied
  after the cache on every read, so caching does not freeze it.

A dataset without them is cached item by item as ``dataset[index]`` returns it, which is
right when its items do not change from epoch to epoch.

``cache: memory`` keeps decoded samples in shared memory, filled on first read: the
DataLoader's worker processes (forked, or spawned with torch's sharing of tensors) write
into the same storage, so a sample is decoded once whatever the number of workers and
whether or not they persist between epochs. ``cache: device`` decodes the whole split once
into two tensors on the trial's device; batches are then cut from them as for a tensor task.
Its trade-off: ``transform`` is not applied any more (the dataset cannot run per item on
device tensors), so per-epoch augmentation is lost; the model sees the same clean samples
every epoch.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

MEMORY_SHARE = 0.5  # a cache may take at most this share of the memory that is free now
DECODE_BATCH = 256


def decode_item(dataset: Any, index: int) -> tuple[Any, Any]:
    """The cacheable part of one item: ``decode`` when the dataset has it, else the item itself."""
    decode = getattr(dataset, "decode", None)
    return decode(index) if callable(decode) else dataset[index]


def has_transform(dataset: Any) -> bool:
    """True when the dataset splits its items into a cached ``decode`` and a per-read ``transform``."""
    return callable(getattr(dataset, "decode", None)) and callable(getattr(dataset, "transform", None))


class MemoryCache(Dataset):
    """A dataset's decoded samples in shared memory, each decoded on its first read."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset
        self.transform = has_transform(dataset)
        first, _ = decode_item(dataset, 0)
        n = len(dataset)
        self.inputs: torch.Tensor | None = None
        self.other: dict[int, tuple[Any, Any]] = {}  # inputs that are not tensors of one shape: per process
        if isinstance(first, torch.Tensor):
            check_fits(n * first.numel() * first.element_size(), "memory", _free_ram())
            self.inputs = torch.empty((n, *first.shape), dtype=first.dtype).share_memory_()
        self.labels = torch.zeros(n, dtype=torch.int64).share_memory_()
        self.filled = torch.zeros(n, dtype=torch.bool).share_memory_()

    def __len__(self) -> int:
        return len(self.dataset)

    def set_epoch(self, epoch: int) -> None:
        if callable(getattr(self.dataset, "set_epoch", None)):
            self.dataset.set_epoch(epoch)

    def _decoded(self, index: int) -> tuple[Any, Any]:
        if self.filled[index]:
            if index in self.other:
                return self.other[index]
            # A copy: a user's transform may work in place, and the cache must stay as decoded.
            return self.inputs[index].clone(), int(self.labels[index])
        x, label = decode_item(self.dataset, index)
        if self.inputs is not None and isinstance(x, torch.Tensor) and x.shape == self.inputs.shape[1:]:
            self.inputs[index] = x
            self.labels[index] = int(label)
        else:
            self.other[index] = (x, label)
        self.filled[index] = True  # set last: another worker reads the sample only once it is whole
        return x, label

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        x, label = self._decoded(index)
        return (self.dataset.transform(x, index), label) if self.transform else (x, label)


def materialise(dataset: Any, device: torch.device, num_workers: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Every decoded sample of ``dataset`` as (inputs, labels) tensors on ``device``.

    Raises MemoryError (recorded as an ``oom`` trial) when the set would take more than
    half the memory free on the device.
    """
    first, _ = decode_item(dataset, 0)
    if not isinstance(first, torch.Tensor):
        raise ValueError(f"cache=device needs tensor inputs, the dataset gives {type(first).__name__}")  # noqa: TRY004  # a refused setting, as the others
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else _free_ram()
    check_fits(len(dataset) * first.numel() * first.element_size(), str(device), free)
    loader = DataLoader(_Decoded(dataset), batch_size=DECODE_BATCH, num_workers=num_workers)
    parts = [(x.to(device), y.to(device)) for x, y in loader]
    return torch.cat([x for x, _ in parts]), torch.cat([y for _, y in parts]).long()


class _Decoded(Dataset):
    """The dataset's decoded items (no per-epoch transform): what ``cache: device`` keeps."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return decode_item(self.dataset, index)


def check_fits(needed: int, where: str, free: int) -> None:
    if needed > MEMORY_SHARE * free:
        raise MemoryError(
            f"out of memory: caching the data set needs {needed / 2**20:.0f} MiB on {where}, "
            f"{free / 2**20:.0f} MiB free (a cache may take half)"
        )


def _free_ram() -> int:
    try:  # MemAvailable counts the page cache the kernel would give back; SC_AVPHYS_PAGES does not
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: do not refuse
        return 2**62
