"""One training step, written once: forward, loss, backward and the optimizer step, in the
trial's precision (autocast, and loss scaling for fp16), in one or several passes.

The trial loop (tuner/train/loop.py), the batch probe (tuner/train/batch_probe.py) and the
compression fine-tune (tuner/compress/finetune.py) all train through it. It never reads a
value back from the device: the step's loss comes back as a detached device tensor, and
whoever needs the number syncs at an evaluation boundary.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tuner.train.levers import no_sync, split, to_layout
from tuner.train.precision import autocast, scales_loss

# (model output, inputs, labels) -> loss; the inputs are there for a loss that needs them (distillation)
StepLoss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def labels_only(loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> StepLoss:
    """A ``loss(output, labels)`` as a step loss."""
    return lambda output, _inputs, labels: loss(output, labels)


class TrainStep:
    """Optimizer steps of ``net`` on ``loss``, each ``__call__`` one step.

    ``accumulate`` passes per step sum their gradients (a data-parallel model exchanges them
    on the last pass only); ``channels_last`` puts image inputs in that layout. Gradients are
    dropped after the step (``zero_grad(set_to_none=True)``), so the next one starts clean.
    """

    def __init__(
        self,
        net: torch.nn.Module,
        loss: StepLoss,
        optimizer: torch.optim.Optimizer,
        device: torch.device,
        precision: str = "fp32",
        channels_last: bool = False,
        accumulate: int = 1,
    ) -> None:
        self.net = net
        self.loss = loss
        self.optimizer = optimizer
        self.device = device
        self.precision = precision
        self.channels_last = channels_last
        self.accumulate = accumulate
        self.scaler = torch.amp.GradScaler(device.type, enabled=scales_loss(precision))

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """One optimizer step on the batch ``(x, y)``; its mean loss (detached, on the device)."""
        step_loss = self._gradients(x, y)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return step_loss

    def _gradients(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.accumulate <= 1:
            with autocast(self.device, self.precision):
                loss = self.loss(self.net(to_layout(x, self.channels_last)), x, y)
            self.scaler.scale(loss).backward()  # under DDP the gradients are averaged over the ranks here
            return loss.detach().float()
        passes = list(split(x, y, self.accumulate))
        total = torch.zeros((), device=self.device)
        for i, (xm, ym) in enumerate(passes):
            with no_sync(self.net, last=i == len(passes) - 1), autocast(self.device, self.precision):
                loss = self.loss(self.net(to_layout(xm, self.channels_last)), xm, ym) * (
                    len(xm) / len(x)
                )  # the step's mean over its passes
            self.scaler.scale(loss).backward()
            total += loss.detach().float()
        return total
