"""The training loop: one configuration, trained until its bookkeeping says stop.

One loop serves every trial. A single-process trial runs it with ``SingleProcess``; each
process of a data-parallel trial runs the very same loop with ``DataParallelRank``
(tuner/train/data_parallel.py), which wraps the model in DistributedDataParallel, gives
each rank its share of every batch, and makes the ranks agree on the step they stop at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

import torch

from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import bind_hyperparameters, build_model, loss_fn
from tuner.train.batches import Batch, Batches, make_batches
from tuner.train.checkpoint import parameter_groups, set_body_frozen
from tuner.train.levers import compile_model, lr_multiplier, ramp_splits, split, warm_up
from tuner.train.mup import WidthScaling, parametrize
from tuner.train.optimizers import build_optimizer, evaluation_weights
from tuner.train.precision import autocast
from tuner.train.schedules import lr_factor
from tuner.train.step import TrainStep, labels_only
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig


class Parallelism(Protocol):
    """How the processes of one trial share the work (``world`` processes, this one is ``rank``)."""

    rank: int
    world: int

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """The module the optimizer steps (the model itself, or a DDP wrapper around it)."""
        ...

    def shuffle_device(self, device: torch.device) -> torch.device:
        """Where each epoch's random order is drawn (every rank must draw the same one)."""
        ...

    def agree_to_stop(self, stop: bool) -> bool:
        """Rank 0's verdict after this step, the same on every rank."""
        ...


class SingleProcess:
    """A trial in this process alone: the model as built, whole batches, stop when told."""

    rank = 0
    world = 1

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        return model

    def shuffle_device(self, device: torch.device) -> torch.device:
        return device  # drawn where the data lives: no copy each epoch

    def agree_to_stop(self, stop: bool) -> bool:
        return stop


def train(
    task: Task,
    config: TrialConfig,
    device: torch.device,
    seed: int,
    tt: TimeToTarget | None,
    parallel: Parallelism,
    keep: Callable[[torch.nn.Module], None] | None = None,
) -> int:
    """Train until ``tt`` ends the trial; returns the samples this process trained on.

    ``tt`` keeps the books (rank 0 only: other ranks of a data-parallel trial pass None and
    stop when rank 0 says so). ``config.batch_size`` is the effective batch of one step,
    split evenly between the ranks (the remainder is dropped). ``keep`` sees the model once
    the trial has ended (rank 0, clocks stopped), e.g. to save the weights.
    """
    torch.manual_seed(seed)  # every rank builds the same model
    feed = make_batches(task, config, device, seed, parallel.rank, parallel.world, parallel.shuffle_device(device))
    try:
        return _train(feed, task, config, device, tt, parallel, keep)
    finally:
        if tt is not None and feed.wait_s is not None:
            tt.record_data_wait(feed.wait_s)  # a trial that failed mid-interval: the waits up to here
        feed.close()


def _train(
    feed: Batches,
    task: Task,
    config: TrialConfig,
    device: torch.device,
    tt: TimeToTarget | None,
    parallel: Parallelism,
    keep: Callable[[torch.nn.Module], None] | None,
) -> int:
    model = build_model(task, config).to(device)  # with the task's own hyperparameters
    scaling = _width_scaling(model, task, config)  # before compile and DDP: its hooks are part of the model
    if task.init_state is not None:  # a pretrained start, checked against the model by prepare
        model.load_state_dict(task.init_state)
    if config.channels_last:
        model = model.to(memory_format=torch.channels_last)
    frozen_until = int(config.freeze_frac * config.horizon_samples)  # samples with the body frozen
    if frozen_until:
        set_body_frozen(model, True)
    train_loss_fn = loss_fn(task, config)
    net = compile_model(parallel.wrap(model), config)  # evaluation runs the eager model: no recompile for it
    optimizer = build_optimizer(scaling.groups(parameter_groups(net, config.head_lr_mult)), config, device, model=model)
    train_step = TrainStep(net, labels_only(train_loss_fn), optimizer, device, config.precision, config.channels_last, config.accumulate)
    factor = lr_factor(config)
    samples = 0
    loss_sum = torch.zeros((), device=device)
    steps_in_interval = 0
    if config.compile != "none":  # setup, off the train clock: recorded as compile_s
        compile_s = warm_up(net, model, train_loss_fn, feed.held_out(), config, feed.local, device)
        if tt is not None:
            tt.record_compile(compile_s)
    if tt is not None:
        _, initial_loss = evaluate(model, task, feed.held_out(), device, config.precision)  # setup: untimed
        tt.set_reference_loss(initial_loss)
    net.train()
    if tt is not None:
        tt.training_started()
    while True:
        for x, y in feed.epoch():  # this rank's share of each batch, on the device
            # A growing batch cuts the feed's batch into several optimizer steps (tuner/train/levers.py).
            for xs, ys in split(x, y, ramp_splits(config, samples)):
                step_samples = len(xs) * parallel.world
                lr = config.lr * lr_multiplier(config, step_samples) * factor(samples)
                if frozen_until and samples >= frozen_until:
                    set_body_frozen(model, False)
                    frozen_until = 0
                for group in optimizer.param_groups:
                    group["lr"] = lr * group["lr_mult"]
                step_loss = train_step(xs, ys)
                samples += step_samples
                stop = False
                if tt is not None:
                    loss_sum += step_loss
                    steps_in_interval += 1
                    if tt.step(step_samples) and not tt.done:  # done: screened after this step (tuner/train/screen.py)
                        train_loss = (loss_sum / steps_in_interval).item()  # deliberate sync: evaluation boundary
                        loss_sum.zero_()
                        steps_in_interval = 0
                        if feed.wait_s is not None:
                            tt.record_data_wait(feed.wait_s)  # the waits summed up to this evaluation
                        with evaluation_weights(optimizer):  # Schedule-Free AdamW evaluates its averaged weights
                            metric, test_loss = evaluate(model, task, feed.held_out(), device, config.precision, tt.goal.metric)
                        net.train()
                        stop = tt.evaluate(metric, loss=test_loss, train_loss=train_loss)
                    stop = stop or tt.done
                if parallel.agree_to_stop(stop):
                    if keep is not None and tt is not None:
                        with evaluation_weights(optimizer, back=lambda: False):  # the weights as evaluated
                            keep(model)  # the trial is over: its clocks no longer run
                    return samples // parallel.world


def _width_scaling(model: torch.nn.Module, task: Task, config: TrialConfig) -> WidthScaling:
    """muP's rates and output multipliers for ``parametrization: mup`` (tuner/train/mup.py); none otherwise."""
    if config.parametrization != "mup":
        return WidthScaling({}, [])
    return parametrize(model, bind_hyperparameters(task.build_model, config.hyper), config.width, config.mup_base)


@torch.no_grad()
def evaluate(
    model: torch.nn.Module, task: Task, held_out: Iterator[Batch], device: torch.device, precision: str, metric: str = "accuracy"
) -> tuple[float, float]:
    """The named held-out metric (the target's: accuracy, loss, or one the task declares) and the
    loss on the held-out split (its batches, from the feed), in the trial's precision."""
    model.eval()
    logits, labels = [], []
    with autocast(device, precision):
        for x, y in held_out:
            logits.append(model(x))
            labels.append(y)
    all_logits, all_labels = torch.cat(logits).float(), torch.cat(labels)
    loss = float(task.loss(all_logits, all_labels))
    return (loss if metric == "loss" else float(task.metric_fn(metric)(all_logits, all_labels))), loss
