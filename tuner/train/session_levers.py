"""The trial's searched dimensions as one-line calls on an own loop's session.

A training function of one's own gets numbers in ``config``; these calls turn them into
PyTorch the way the built-in loop does, through the same functions (tuner/train/optimizers.py,
schedules.py, precision.py, step.py, levers.py)::

    model = session.compile(model, x[:config.batch_size])  # config.compile, warmed up off the clock
    optimizer = session.optimizer(model)                    # optimizer, lr, betas, AMSGrad, weight decay
    step = session.train_step(model, loss_fn, optimizer)    # precision, accumulation, the schedule, lr scaling
    ...
    loss = step(xb, yb)                                     # one optimizer step

``session.config`` records every field these calls read (tuner/train/config_reads.py), so a
searched dimension that reaches the loop through them is read, and one that does not is
named as never read. A loop that keeps its own optimizer, backward and schedule reads
``config`` itself, as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import torch

from tuner.train.levers import chunk_sizes, compile_model, lr_multiplier, warm_up_passes
from tuner.train.mup import parametrize
from tuner.train.optimizers import build_optimizer, decay_groups, has_eval_weights
from tuner.train.precision import autocast, scales_loss
from tuner.train.schedules import lr_factor
from tuner.train.step import TrainStep, labels_only
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig


class LrSchedule:
    """Sets each parameter group's rate for the training samples seen: the trial's ``lr`` (scaled
    to the batch by ``lr_scaling``) times its schedule's factor. A group built with a rate of its
    own keeps its ratio to ``lr``."""

    def __init__(self, optimizer: torch.optim.Optimizer, config: TrialConfig) -> None:
        self.optimizer = optimizer
        self.base = config.lr * lr_multiplier(config, config.batch_size)
        self.factor = lr_factor(config)
        for group in optimizer.param_groups:
            group.setdefault("lr_mult", group["lr"] / config.lr)

    def step(self, samples: int) -> float:
        """Set the rates for ``samples`` training samples seen; returns the base rate set."""
        lr = self.base * self.factor(samples)
        for group in self.optimizer.param_groups:
            group["lr"] = lr * group["lr_mult"]
        return lr


class SessionStep:
    """One optimizer step per call, as the built-in loop steps (tuner/train/step.py): the
    trial's schedule for the samples this step has seen, forward and loss under the trial's
    precision, fp16 loss scaling, ``accumulate`` passes, then ``zero_grad(set_to_none=True)``."""

    def __init__(self, step: TrainStep, schedule: LrSchedule) -> None:
        self._step, self._schedule = step, schedule
        self.samples = 0  # the training samples this step has seen

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """One optimizer step on ``(x, y)``; the mean loss, detached, on the device (no sync)."""
        self._schedule.step(self.samples)
        loss = self._step(x, y)
        self.samples += len(x)
        return loss


class SessionLevers:
    """The calls of ``Session`` that apply the searched dimensions (see the module's docstring)."""

    config: TrialConfig
    device: torch.device
    _tt: TimeToTarget
    _samples: int
    reports: int
    _fail: Callable[[str], None]  # Session's: records the contract breach and raises it

    def _init_levers(self) -> None:
        self._optimizers: list[torch.optim.Optimizer] = []
        self._schedules: dict[int, LrSchedule] = {}
        self._scaler: torch.amp.GradScaler | None = None
        self._passes = 0  # session.step's backward passes so far

    def optimizer(
        self, params: torch.nn.Module | Iterable[Any], build: Callable[[float], torch.nn.Module] | None = None
    ) -> torch.optim.Optimizer:
        """The trial's optimizer. Given the model: weight decay on its weights of 2 or more
        dimensions only (norms and biases undecayed), and Muon's split into hidden weights and
        the rest; given parameters or groups, as given (Muon then takes every 2-D one).

        ``build``: the function that makes the model at a width (``lambda width: MyNet(width)``).
        With ``parametrization: mup`` in the space, the model is parametrized for width
        transfer (tuner/train/mup.py): per-layer rates and its output layer's multiplier, read
        off the model built again at ``mup_base`` (width 1 unless set) on the meta device. Other
        parametrizations ignore it. Under muP the builder is asked for at the base width too,
        where nothing scales: a proxy study's search trains there, and a loop without it
        should fail on its first trial, not at full size."""
        if self.config.parametrization == "mup":
            if not isinstance(params, torch.nn.Module) or build is None:
                self._fail("parametrization: mup needs the model and its builder: session.optimizer(model, build=lambda width: ...)")
            scaling = parametrize(params, build, self.config.width, self.config.mup_base)
            optimizer = build_optimizer(scaling.groups(decay_groups(params)), self.config, self.device, model=params)
            for group in optimizer.param_groups:  # the schedule keeps each group's ratio to lr
                group["lr"] = self.config.lr * group["lr_mult"]
        elif isinstance(params, torch.nn.Module):
            optimizer = build_optimizer(decay_groups(params), self.config, self.device, model=params)
        else:
            optimizer = build_optimizer(params, self.config, self.device)
        self._optimizers.append(optimizer)
        return optimizer

    def schedule(self, optimizer: torch.optim.Optimizer) -> LrSchedule:
        """The trial's learning-rate schedule over ``optimizer``: call ``.step(samples)`` before
        each optimizer step (``session.step`` and ``session.train_step`` do it for you)."""
        if id(optimizer) not in self._schedules:
            self._schedules[id(optimizer)] = LrSchedule(optimizer, self.config)
        return self._schedules[id(optimizer)]

    def autocast(self) -> contextlib.AbstractContextManager:
        """The trial's precision for a forward pass and its loss: autocast to bf16 or fp16, or nothing for fp32."""
        return autocast(self.device, self.config.precision)

    def step(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer) -> bool:
        """Backward of one pass's mean loss (scaled for fp16); on the last of ``accumulate`` passes,
        the optimizer step at the schedule's rate for the samples counted so far (by ``due``) and
        ``zero_grad``. Call it once per pass of ``batch_size // accumulate`` samples; True when it stepped."""
        if self._scaler is None:
            self._scaler = torch.amp.GradScaler(self.device.type, enabled=scales_loss(self.config.precision))
        passes = self.config.accumulate
        self._passes += 1
        self._scaler.scale(loss / passes).backward()  # the step's mean over its passes
        if self._passes % passes:
            return False
        self.schedule(optimizer).step(self._samples)
        self._scaler.step(optimizer)
        self._scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return True

    def train_step(
        self, model: torch.nn.Module, loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], optimizer: torch.optim.Optimizer
    ) -> SessionStep:
        """A callable ``step(x, y) -> loss``: one optimizer step of ``model`` on ``loss_fn(model(x), y)``
        in the trial's precision, with ``accumulate`` passes and the schedule (see ``SessionStep``)."""
        c = self.config
        return SessionStep(
            TrainStep(model, labels_only(loss_fn), optimizer, self.device, c.precision, accumulate=c.accumulate), self.schedule(optimizer)
        )

    def compile(self, model: torch.nn.Module, example: torch.Tensor) -> torch.nn.Module:
        """The model compiled in the trial's ``compile`` mode (itself when ``none``), warmed up now on
        ``example`` (a batch of inputs as the steps see them): compilation is setup, recorded as
        ``compile_s`` and charged as for a built-in task. Call it before ``start_training()``."""
        if self.config.compile == "none":
            return model
        if self._samples or self.reports:
            self._fail("session.compile() came after training samples were counted; compile during setup")
        net = compile_model(model, self.config)
        self._tt.record_compile(_warm_up(net, model, example, self.device, self.config))
        self._tt.training_started()  # a loop without start_training(): the train clock starts after compilation
        return net

    def _evaluation_weights(self, on: bool) -> None:
        # Schedule-Free AdamW: evaluate (and keep) the averaged weights, train the others.
        for optimizer in self._optimizers:
            if has_eval_weights(optimizer):
                optimizer.eval() if on else optimizer.train()


def _warm_up(net: torch.nn.Module, model: torch.nn.Module, example: torch.Tensor, device: torch.device, config: TrialConfig) -> float:
    """The passes of tuner/train/levers.py ``warm_up_passes`` at each batch size a step will run (the
    example's, and its ``accumulate`` slices), on the mean of the model's first float output."""

    def loss_at(size: int) -> torch.Tensor:
        out = net(example[:size])
        first = out if isinstance(out, torch.Tensor) else next(t for t in _tensors(out))
        return first.float().mean()

    return warm_up_passes(model, chunk_sizes(len(example), config.accumulate), loss_at, config, device)


def _tensors(out: Any) -> Iterable[torch.Tensor]:
    values = out.values() if isinstance(out, dict) else out
    return (v for v in values if isinstance(v, torch.Tensor) and v.is_floating_point())
