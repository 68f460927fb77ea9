"""Numeric precision of a trial: the autocast dtypes, and which of them this device runs."""

from __future__ import annotations

import contextlib

import torch

PRECISION_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """Autocast to the precision's dtype; fp32 runs as written."""
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
        except Exception as err:  # noqa: BLE001 -- any failure means the trials would fail the same way
            reasons[name] = f"autocast to {name} fails on {device.type}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        if name == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            reasons[name] = "this GPU does not support bfloat16"
    return reasons
