"""Numeric precision of a trial, declared once: each precision's autocast dtype and whether it
scales the loss, and which of them this device runs.

``PRECISION_KINDS`` is the one list: the ``precision`` dimension accepts its names
(tuner/train/trial_config.py), the training step and an own loop's session take their loss
scaling from it, and the documentation's table of precisions is written from it
(tuner/docs_reference.py).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Precision:
    """One precision: the dtype a forward pass autocasts to (None: runs as written)."""

    name: str
    dtype: torch.dtype | None
    loss_scaling: bool = False  # a torch.amp.GradScaler scales the loss (a narrow exponent underflows small gradients)
    summary: str = ""


PRECISION_KINDS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision("fp32", None, summary="as written: no autocast"),
        Precision("bf16", torch.bfloat16, summary="autocast to bfloat16"),
        Precision("fp16", torch.float16, loss_scaling=True, summary="autocast to float16, with a `torch.amp.GradScaler`"),
    )
}


def scales_loss(precision: str) -> bool:
    """Whether a trial in this precision steps through a gradient scaler."""
    return PRECISION_KINDS[precision].loss_scaling


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """Autocast to the precision's dtype; fp32 runs as written."""
    dtype = PRECISION_KINDS[precision].dtype
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def unsupported_precisions(device: torch.device) -> dict[str, str]:
    """Precisions that fail a tiny forward/backward probe here, with the reason."""
    reasons: dict[str, str] = {}
    for name in (p.name for p in PRECISION_KINDS.values() if p.dtype is not None):
        try:
            layer = torch.nn.Linear(8, 8).to(device)
            with autocast(device, name):
                out = layer(torch.randn(4, 8, device=device)).float().sum()
            out.backward()
            if scales_loss(name) and not torch.amp.GradScaler(device.type).is_enabled():
                reasons[name] = f"loss scaling is not available on {device.type}"
        except Exception as err:  # noqa: BLE001 -- any failure means the trials would fail the same way
            reasons[name] = f"autocast to {name} fails on {device.type}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        if PRECISION_KINDS[name].dtype is torch.bfloat16 and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            reasons[name] = "this GPU does not support bfloat16"
    return reasons
