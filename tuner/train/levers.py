"""The efficiency levers of one training step: compilation, memory layout, accumulation, a
learning rate tied to the batch, and a batch that grows during training.

``batch_size`` is always the effective batch of one optimizer step when fully grown. A
growing batch (``ramp_start`` < 1) cuts each batch of the feed into 2^k optimizer steps,
halving k as training goes, so every sample is still trained on once per epoch and the
feed keeps one batch shape. ``accumulate`` cuts each optimizer step into that many
forward/backward passes: the effective batch can exceed what one pass can hold.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator

import torch

from tuner.train.compile_modes import COMPILE_MODE_KINDS
from tuner.train.precision import autocast
from tuner.train.trial_config import TrialConfig

LR_REFERENCE_BATCH = 256  # lr_scaling: the searched rate is the rate for this many samples per step
# torch.compile's modes that capture CUDA graphs, and the passes each mode's warm-up makes (tuner/train/compile_modes.py).
CUDA_GRAPH_MODES = tuple(name for name, mode in COMPILE_MODE_KINDS.items() if mode.cuda_graphs)
WARM_UP_PASSES = {name: mode.warm_up_passes for name, mode in COMPILE_MODE_KINDS.items()}


class CompilationFailed(RuntimeError):
    """torch.compile could not compile the model: the trial fails, the study goes on."""


def has_conv2d(model: torch.nn.Module) -> bool:
    """channels_last only changes 2-d convolutions (4-d activations)."""
    return any(isinstance(m, torch.nn.Conv2d) for m in model.modules())


def to_layout(x: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """The batch in the trial's memory layout (images only: other inputs pass unchanged)."""
    return x.contiguous(memory_format=torch.channels_last) if channels_last and x.dim() == 4 else x


def lr_multiplier(config: TrialConfig, step_samples: int) -> float:
    """The learning rate's factor for an optimizer step of ``step_samples`` (1 without scaling)."""
    if config.lr_scaling == "linear":
        return step_samples / LR_REFERENCE_BATCH
    if config.lr_scaling == "sqrt":
        return math.sqrt(step_samples / LR_REFERENCE_BATCH)
    return 1.0


def ramp_splits(config: TrialConfig, samples: int) -> int:
    """Optimizer steps one feed batch is cut into after ``samples``: a power of two, 1 when grown.

    The batch fraction grows linearly from ``ramp_start`` to 1 over ``ramp_frac`` of the
    horizon; the steps are the fewest (a power of two) that keep each within that fraction,
    so the whole batch is reached when the ramp ends.
    """
    if config.ramp_start >= 1.0 or config.ramp_frac <= 0.0:
        return 1
    ramp_samples = config.ramp_frac * config.horizon_samples
    fraction = config.ramp_start + (1.0 - config.ramp_start) * min(1.0, samples / ramp_samples)
    return 2 ** max(0, math.ceil(math.log2(1.0 / fraction) - 1e-9))


def split(x: torch.Tensor, y: torch.Tensor, parts: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """``parts`` consecutive slices of a batch (fewer when the batch is smaller)."""
    if parts <= 1:
        yield x, y
        return
    yield from zip(x.chunk(parts), y.chunk(parts))


def chunk_sizes(total: int, parts: int) -> set[int]:
    """The slice sizes ``split`` gives for a batch of ``total`` (torch.chunk's rule)."""
    if parts <= 1 or total <= 1:
        return {total}
    size = math.ceil(total / parts)
    return {size, total - size * (math.ceil(total / size) - 1)}


def pass_sizes(config: TrialConfig, local_batch: int) -> set[int]:
    """Every batch size one forward pass of this trial sees (what compilation must cover)."""
    sizes: set[int] = set()
    splits = ramp_splits(config, 0)
    while splits >= 1:
        for step in chunk_sizes(local_batch, splits):
            sizes |= chunk_sizes(step, config.accumulate)
        splits //= 2
    return sizes


def no_sync(net: torch.nn.Module, last: bool) -> contextlib.AbstractContextManager[None]:
    """Skip the data-parallel gradient exchange on all but the last pass of a step."""
    skip = getattr(net, "no_sync", None)
    return skip() if skip is not None and not last else contextlib.nullcontext()


def compile_model(net: torch.nn.Module, config: TrialConfig) -> torch.nn.Module:
    """``net`` compiled in the trial's mode (lazily: compilation happens at the first pass)."""
    mode = COMPILE_MODE_KINDS[config.compile]
    return torch.compile(net, mode=mode.torch_mode) if mode.compiled else net


def warm_up(
    net: torch.nn.Module,
    model: torch.nn.Module,
    loss_fn,
    held_out: Iterator[tuple[torch.Tensor, torch.Tensor]],
    config: TrialConfig,
    local_batch: int,
    device: torch.device,
) -> float:
    """Compile now, off the train clock, on held-out inputs at every batch size the trial will use
    (``warm_up_passes``); returns the seconds it took (the trial's ``compile_s``)."""
    x, y = next(iter(held_out))

    def loss_at(size: int) -> torch.Tensor:
        index = torch.arange(size, device=x.device) % len(x)  # repeat the held-out batch to the size
        return loss_fn(net(to_layout(x[index], config.channels_last)), y[index])

    return warm_up_passes(model, pass_sizes(config, local_batch), loss_at, config, device)


def warm_up_passes(
    model: torch.nn.Module, sizes: set[int], loss_at: Callable[[int], torch.Tensor], config: TrialConfig, device: torch.device
) -> float:
    """A forward and backward pass of ``loss_at`` at each of ``sizes``, largest first, as many as the
    mode needs (three with CUDA graphs: compiled, recorded, replayed once), leaving ``model``'s
    weights, buffers, gradients and random state as they were; the seconds it took. A failure is
    the trial's ``CompilationFailed``."""
    start = time.perf_counter()
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if device.type == "cuda" else None
    try:
        for size in sorted(sizes, reverse=True):
            for _ in range(WARM_UP_PASSES.get(config.compile, 1)):
                with autocast(device, config.precision):
                    loss = loss_at(size)
                loss.float().backward()
                model.zero_grad(set_to_none=True)  # as a step leaves them: a CUDA graph's outputs are not kept past the next replay
    except Exception as err:
        text = str(err).strip().splitlines()
        raise CompilationFailed(f"torch.compile(mode={config.compile}) failed: {type(err).__name__}: {text[0] if text else ''}") from err
    finally:
        model.load_state_dict(saved)
        model.zero_grad(set_to_none=True)
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start
