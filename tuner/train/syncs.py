"""Host syncs in the training steps: how often the host waited for the GPU between evaluations.

A small model on a big GPU is bound by kernel launches: the host must stay ahead of the
device, queueing the next kernels while the last ones run. Every read of a value back from
the device (``.item()``, ``float(tensor)``, a copy to the CPU, the fp16 gradient scaler's
inf check in an optimizer without a fused kernel) makes the host wait for the queue to
drain, and the GPU then idles while the next kernels are launched. The built-in loop syncs
only at evaluation boundaries (STYLE.md 9); this counts what the steps in between did.

CUDA's sync debug mode (``torch.cuda.set_sync_debug_mode("warn")``) warns at every
synchronising operation; the counter turns it on while the train clock runs
(tuner/train/clocks.py reads it where it reads the energy meter) and counts those warnings
instead of showing them. The boundary's own deliberate sync is outside the counted region.
On a CPU nothing is asynchronous and nothing is counted (``available`` False: the trial
records no figure).

The count goes through Python's warnings: a display hook in front of whatever shows warnings
(other warnings pass through to it), and a filter that lets every sync warning through, put
first again at each start of counting, so that neither another ``catch_warnings`` (a test
runner's, another thread's) nor ``-W error`` turns a counted sync into a lost count or an error.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

SYNC_WARNING = "called a synchronizing CUDA operation"  # c10's message (CUDAFunctions.cpp), at the start of the warning


_counting: HostSyncs | None = None  # the counter the display hook adds to (one trial at a time per process)


def _show_counted(shown: Callable[..., None]) -> Callable[..., None]:
    """A warnings display that counts sync warnings while a counter runs and shows the rest with ``shown``."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if _counting is not None and str(message).startswith(SYNC_WARNING):
            _counting.count += 1
        else:
            shown(message, category, filename, lineno, file, line)

    show.counts_syncs = True  # type: ignore[attr-defined]
    return show


def count_warnings_into(counter: HostSyncs | None) -> None:
    """Count sync warnings into ``counter`` from now (None: stop counting): the hook in front of the
    display, if another ``catch_warnings`` took it away, and the filter first again."""
    global _counting
    if counter is not None:
        if not getattr(warnings.showwarning, "counts_syncs", False):
            warnings.showwarning = _show_counted(warnings.showwarning)
        warnings.filterwarnings("always", message=SYNC_WARNING)  # first of the filters: every one, never an error
    _counting = counter


class HostSyncs:
    """Counts the host's waits for ``device`` while counting is on (``resume`` to ``pause``)."""

    def __init__(self, device: torch.device) -> None:
        self.available = device.type == "cuda"
        self.count = 0

    def resume(self) -> None:
        """Count from now (the train clock starts)."""
        if not self.available:
            return
        count_warnings_into(self)
        torch.cuda.set_sync_debug_mode("warn")

    def pause(self) -> None:
        """Stop counting (the train clock stops, before its own sync)."""
        if _counting is not self:
            return
        torch.cuda.set_sync_debug_mode("default")
        count_warnings_into(None)

    def per_step(self, steps: int) -> float | None:
        """Syncs per optimizer step; None where nothing can be counted (a CPU) or no step ran."""
        return self.count / steps if self.available and steps > 0 else None
