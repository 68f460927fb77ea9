"""Reduced precisions whose training steps are slower than fp32's on this CPU, removed before the study starts.

A precision changes what a step costs, not what a step does to the weights beyond rounding, so a
bf16 or fp16 step slower than an fp32 one buys nothing a time to target can use. On a CPU without
16-bit matrix units autocast emulates them: the MNIST-1D CNN's steps took 1.6-16x fp32's (widths
0.5-2, batches 32-256, a 2-core AMD EPYC), and a 240-s study of the default space spent 75 of its
100 search trials on them and found nothing faster than its baseline.

Measured with the batch probe (tuner/train/batch_probe.py): training steps of the baseline's
configuration at the space's smallest width and batch, and at its largest, each precision in
turn, the fastest step of a few (a shared machine only adds time). A reduced precision is removed
when its steps take at least ``SLOWER`` times fp32's at both shapes; fp32 always stays. Only on a
CPU (a GPU's tensor cores make the reduced precisions the fast ones), only where the study
minimizes a time or a cost (a precision may win on memory or energy), only for a task whose
training tensors the probe can draw from, and only from a choice: a precision the space fixes is
trained as asked.
"""

from __future__ import annotations

import dataclasses

import torch

from tuner.study.experiment.load import Experiment
from tuner.study.reruns.baseline import baseline_configuration
from tuner.study.run.batch_ceiling import values
from tuner.study.scoring.objectives import seconds_behind
from tuner.study.space.space import Choice, SearchSpace
from tuner.tasks.base import Task
from tuner.train.batch_probe import Probe, throughput

SLOWER = 1.3  # clear of a shared machine's noise between two probes a second apart
REFERENCE = "fp32"


def slow_precisions(step_s: list[dict[str, float]], slower: float = SLOWER) -> dict[str, str]:
    """The reduced precisions at least ``slower`` times fp32's step time at every shape measured
    (each a dict of seconds per step by precision), with the reason; fp32 is never among them."""
    reduced = [p for p in step_s[0] if p != REFERENCE]
    found = {}
    for precision in reduced:
        ratios = [shape[precision] / shape[REFERENCE] for shape in step_s]
        if min(ratios) >= slower:
            found[precision] = f"its training steps take {min(ratios):.1f}-{max(ratios):.1f}x fp32's on this CPU"
    return found


def probed(experiment: Experiment, space: SearchSpace, device: torch.device) -> list[str]:
    """The precisions of the space this step would probe: none where it does not apply (module docstring)."""
    spec = space.dims.get("precision")
    if device.type != "cpu" or not isinstance(spec, Choice) or REFERENCE not in spec.choices:
        return []
    minimize, cost = experiment.objective.minimize, experiment.cost
    names = [minimize] if isinstance(minimize, str) else list(minimize)
    if any(seconds_behind(name, 1.0, cost, 1) is None for name in names):
        return []
    return list(spec.choices)


def without_slow_precisions(experiment: Experiment, task: Task, space: SearchSpace, device: torch.device) -> tuple[SearchSpace, list[str]]:
    """``space`` without the reduced precisions slower than fp32 here, with one note per removal."""
    precisions = probed(experiment, space, device)
    if len(precisions) < 2 or task.train_x is None or task.train_y is None:
        return space, []
    base = baseline_configuration(experiment, space)
    widths, batches = values(space, "width") or [base.width], values(space, "batch_size") or [base.batch_size]
    shapes = [(float(min(widths)), int(min(batches))), (float(max(widths)), int(max(batches)))]
    step_s = []
    for width, batch in shapes:
        configs = {p: dataclasses.replace(base, precision=p, width=width) for p in precisions}
        step_s.append({p: batch / throughput(Probe(task, c, device), batch, warmup=1, steps=3) for p, c in configs.items()})
    return space.without_values("precision", slow_precisions(step_s), experiment.source)
