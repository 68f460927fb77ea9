"""What this machine can run: the device, the precisions it supports, the thread count."""

from __future__ import annotations

import contextlib

import torch

PRECISION_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(setting: str = "auto") -> torch.device:
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA is not available on this machine")
    return device


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    dtype = PRECISION_DTYPES[precision]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def unsupported_precisions(device: torch.device) -> dict[str, str]:
    """Precisions that fail a tiny forward/backward probe here, with the reason."""
    reasons: dict[str, str] = {}
    for name in ("bf16", "fp16"):
        try:
            layer = torch.nn.Linear(8, 8).to(device)
            with autocast(device, name):
                out = layer(torch.randn(4, 8, device=device)).float().sum()
            out.backward()
            if name == "fp16" and not torch.amp.GradScaler(device.type).is_enabled():
                reasons[name] = f"loss scaling is not available on {device.type}"
        except Exception as err:  # any failure means the trials would fail the same way
            reasons[name] = f"autocast to {name} fails on {device.type}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        if name == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            reasons[name] = "this GPU does not support bfloat16"
    return reasons


def configure_threads(threads: int) -> None:
    """Set torch's intra-op threads; more threads than cores only slows small models."""
    torch.set_num_threads(threads)


def is_out_of_memory(err: BaseException) -> bool:
    """Classify an exception as out-of-memory, on any device."""
    if isinstance(err, (torch.OutOfMemoryError, MemoryError)):
        return True
    # On a CPU the allocator raises a plain RuntimeError that never says "out of memory".
    text = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def free_memory(device: torch.device) -> None:
    import gc

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def peak_memory_mb(device: torch.device) -> float | None:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux; process-wide
    except ImportError:
        return None
