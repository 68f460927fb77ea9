"""Device memory: out-of-memory errors told apart from other failures, freed, and measured."""

from __future__ import annotations

import gc

import torch


def is_out_of_memory(err: BaseException) -> bool:
    """Classify an exception as out-of-memory, on any device."""
    if isinstance(err, (torch.OutOfMemoryError, MemoryError)):
        return True
    # On a CPU the allocator raises a plain RuntimeError that never says "out of memory".
    text = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def free_memory(device: torch.device) -> None:
    """Release what a failed trial left behind, so the next trial starts with the memory free."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def peak_memory_mb(device: torch.device) -> float | None:
    """The trial's peak device memory in MiB (on a CPU, the process's peak resident size)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux; process-wide
    except ImportError:
        return None
