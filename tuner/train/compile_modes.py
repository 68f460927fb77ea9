"""torch.compile's modes a trial can train in, declared once, with how each is warmed up.

``COMPILE_MODE_KINDS`` is the one list: the ``compile`` dimension accepts its names
(tuner/train/trial_config.py), tuner/train/levers.py compiles and warms up by it, the study
removes the CUDA-graph modes where there is no CUDA device (tuner/study/space/levers.py), and
the documentation's table of modes is written from it (tuner/docs_reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompileMode:
    """One mode: what ``torch.compile`` is given, and the passes that compile (and record) it."""

    name: str
    summary: str
    compiled: bool = True  # False: eager, torch.compile is not called
    torch_mode: str | None = None  # torch.compile's ``mode=`` (None: its default)
    # CUDA graphs are recorded at the second call of a shape (the first runs eagerly to warm the
    # allocator) and replayed from the third: a CUDA device only.
    cuda_graphs: bool = False
    warm_up_passes: int = 1  # forward and backward passes at each batch size before the clocks start


COMPILE_MODE_KINDS: dict[str, CompileMode] = {
    m.name: m
    for m in (
        CompileMode("none", "eager: not compiled", compiled=False),
        CompileMode("default", "`torch.compile` in its default mode"),
        CompileMode(
            "reduce-overhead",
            "`torch.compile(mode='reduce-overhead')`: replays the step's kernels as CUDA graphs (a CUDA device only)",
            torch_mode="reduce-overhead",
            cuda_graphs=True,
            warm_up_passes=3,
        ),
        CompileMode(
            "max-autotune-no-cudagraphs",
            "`torch.compile(mode='max-autotune-no-cudagraphs')`: tunes its kernels, without CUDA graphs",
            torch_mode="max-autotune-no-cudagraphs",
        ),
    )
}
