"""Host syncs in the training steps: how often the host waited for the GPU between evaluations.

A small model on a big GPU is bound by kernel launches: the host must stay ahead of the
device, queueing the next kernels while the last ones run. Every read of a value back from
the device (``.item()``, ``float(tensor)``, a copy to the CPU, the fp16 gradient scaler's
inf check in an optimizer without a fused kernel) makes the host wait for the queue to
drain, and the GPU then idles while the next kernels are launched. The built-in loop syncs
only at evaluation boundaries (STYLE.md 9); this counts what the steps in between did.

CUDA's sync debug mode (``torch.cuda.set_sync_debug_mode("warn")``) warns at every
synchronising operation of the calling thread; the counter turns it on while the train
clock runs (tuner/train/clocks.py reads it where it reads the energy meter) and counts
those warnings instead of printing them. The boundary's own deliberate sync is outside the
counted region. On a CPU nothing is asynchronous and nothing is counted (``available``
False: the trial records no figure).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

SYNC_WARNING = "called a synchronizing CUDA operation"  # c10's message (CUDAFunctions.cpp), at the start of the warning


class HostSyncs:
    """Counts the host's waits for ``device`` while counting is on (``resume`` to ``pause``)."""

    def __init__(self, device: torch.device) -> None:
        self.available = device.type == "cuda"
        self.count = 0
        self._warnings: Any = None  # the warnings state saved while counting

    def resume(self) -> None:
        """Count from now (the train clock starts)."""
        if not self.available or self._warnings is not None:
            return
        self._warnings = warnings.catch_warnings()  # restores the filters and the display at pause
        self._warnings.__enter__()
        shown = warnings.showwarning
        warnings.filterwarnings("always", message=SYNC_WARNING)  # every one, not once per line

        def show(message, category, filename, lineno, file=None, line=None) -> None:
            if str(message).startswith(SYNC_WARNING):
                self.count += 1
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        torch.cuda.set_sync_debug_mode("warn")

    def pause(self) -> None:
        """Stop counting (the train clock stops, before its own sync)."""
        if self._warnings is None:
            return
        torch.cuda.set_sync_debug_mode("default")
        self._warnings.__exit__(None, None, None)
        self._warnings = None

    def per_step(self, steps: int) -> float | None:
        """Syncs per optimizer step; None where nothing can be counted (a CPU) or no step ran."""
        return self.count / steps if self.available and steps > 0 else None
