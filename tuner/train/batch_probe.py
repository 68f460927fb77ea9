"""How large a batch one forward pass can take: timed steps on a CPU, out-of-memory on a GPU.

The study (tuner/study/run/batch_ceiling.py) bounds the batch dimension with what this module
measures for the most demanding model of the space (its widest width, in its precision and
layout):

- on a GPU, the largest batch that fits: steps at a batch doubling from the smallest until
  one runs out of memory, then a binary search between the last that fitted and the first
  that did not, as Lightning's batch-size finder does (an out-of-memory error is told apart
  from other failures, the memory freed, anything else raised);
- on a CPU, where memory rarely binds, the throughput knee: a few timed steps at each batch,
  doubling over the space's range; past the knee a larger batch buys no more samples per
  second, and only costs sample efficiency (``throughput_knee``).

A probe step is a real training step (forward, loss, backward, optimizer step) on the
task's own training inputs, repeated to fill the batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import build_model, loss_fn
from tuner.train.memory import free_memory, is_out_of_memory
from tuner.train.optimizers import build_optimizer
from tuner.train.step import TrainStep, labels_only
from tuner.train.trial_config import TrialConfig

KNEE_WITHIN = 0.10  # the knee: the smallest batch within 10% of the best throughput measured


class Probe:
    """Training steps of one model at any batch size, on inputs drawn from the task."""

    def __init__(self, task: Task, config: TrialConfig, device: torch.device, seed: int = 0) -> None:
        if task.train_x is None or task.train_y is None:
            raise ValueError("the batch probe needs a task with its training data as tensors")
        torch.manual_seed(seed)
        self.task, self.config, self.device = task, config, device
        self.x, self.y = task.train_x, task.train_y

    def _inputs(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.arange(batch) % len(self.x)  # repeated when the split is smaller than the batch
        x, y = self.x[index].to(self.device), self.y[index].to(self.device)
        if self.config.channels_last and x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        return x, y

    def steps(self, batch: int, n: int) -> list[float]:
        """Seconds of each of ``n`` training steps at ``batch`` (a fresh model and optimizer)."""
        model = build_model(self.task, self.config).to(self.device)
        if self.config.channels_last:
            model = model.to(memory_format=torch.channels_last)
        optimizer = build_optimizer(model.parameters(), self.config, self.device)
        step = TrainStep(model, labels_only(loss_fn(self.task, self.config)), optimizer, self.device, self.config.precision)
        x, y = self._inputs(batch)
        times = []
        for _ in range(n):
            start = time.perf_counter()
            step(x, y)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)  # deliberate: each probe step is timed to the device
            times.append(time.perf_counter() - start)
        return times


def throughput(probe: Probe, batch: int, warmup: int = 2, steps: int = 5) -> float:
    """Samples per second at ``batch``, from the fastest of ``steps`` timed steps after ``warmup``.

    The fastest, not the median: on a shared machine other work only ever adds time, so the
    least disturbed step is the closest to what the batch costs (timeit's reasoning).
    """
    times = probe.steps(batch, warmup + steps)[warmup:]
    return batch / min(times)


def throughputs(probe: Probe, batches: list[int], rounds: int = 2) -> dict[int, float]:
    """``throughput`` of each batch, the best of ``rounds`` passes over them all: interleaved,
    so that a spell of load elsewhere on the machine does not fall on one batch alone."""
    best: dict[int, float] = {}
    for _ in range(rounds):
        for batch in batches:
            best[batch] = max(best.get(batch, 0.0), throughput(probe, batch))
    return best


def throughput_knee(samples_per_s: dict[int, float], within: float = KNEE_WITHIN) -> int:
    """The smallest batch whose throughput is within ``within`` of the best measured."""
    best = max(samples_per_s.values())
    return min(b for b, v in samples_per_s.items() if v >= (1 - within) * best)


def fits(probe: Probe, batch: int) -> bool:
    """Whether two training steps at ``batch`` run without running out of memory."""
    try:
        probe.steps(batch, 2)  # the second step holds the optimizer's state as well
        return True
    except Exception as err:
        if not is_out_of_memory(err):
            raise
        return False
    finally:
        free_memory(probe.device)


def largest_fitting(fit: Callable[[int], bool], low: int, high: int, resolution: float = 1 / 16) -> tuple[int | None, int | None]:
    """(largest batch that fitted, smallest that did not) between ``low`` and ``high``.

    Doubling from ``low`` until a batch does not fit or ``high`` is reached, then a binary
    search until the two are within ``resolution`` of each other. (None, low) when even
    ``low`` does not fit; (high, None) when ``high`` fits.
    """
    if not fit(low):
        return None, low
    good, bad = low, None
    while bad is None:
        trial = min(good * 2, high)
        if trial == good:
            return good, None
        if fit(trial):
            good = trial
        else:
            bad = trial
    while bad - good > max(1, int(good * resolution)):
        middle = (good + bad) // 2
        if fit(middle):
            good = middle
        else:
            bad = middle
    return good, bad
