"""Out of memory is a trial result (tuner/train/memory.py): which errors count as one."""

from __future__ import annotations

import pytest
import torch

from tuner.train.memory import is_out_of_memory


@pytest.mark.parametrize(
    "error",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),  # how Lightning's tests fake it
        MemoryError(),
        RuntimeError("CUDA error: out of memory"),
        RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory: you tried to allocate 4 bytes."),
    ],
)
def test_out_of_memory_is_classified(error: BaseException) -> None:
    assert is_out_of_memory(error)


@pytest.mark.parametrize("error", [RuntimeError("mat1 and mat2 shapes cannot be multiplied"), ValueError("out of memory"), KeyError("x")])
def test_other_errors_are_not_out_of_memory(error: BaseException) -> None:
    assert not is_out_of_memory(error)
