"""A PyTorch Lightning training job tuned by tuner: a Callback reports to the session, and the
session's calls give the Trainer the searched optimizer, schedule, precision and batch.

``SessionCallback`` is the reporting: the train clock starts when Lightning starts training,
pauses while it validates, and each validation's metric is reported with the training
samples seen so far. When the session answers stop (reached, pruned, capped, out of time)
the callback asks the Trainer to stop (``trainer.should_stop = True``). Validation runs at
the experiment's cadence (``val_check_interval`` in batches). The searched dimensions:
``configure_optimizers`` returns ``session.optimizer(self)``; the callback sets the rate of
``session.schedule`` for the samples seen before each batch; ``precision_plugin`` is the
trial's precision as Lightning's (autocast, and the loss scaler for fp16); the DataLoader
takes ``config.batch_size`` in ``config.accumulate`` passes (``accumulate_grad_batches``).

Needs the optional extra: ``pip install "tuner[lightning]"``. Run it from the repository
root: ``python -m tuner run examples/lightning_loop.yaml``.
"""

from __future__ import annotations

import logging
import signal
import warnings

import lightning as L
import torch
from lightning.pytorch.plugins.precision import MixedPrecision
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from examples.plain_loop import digits, mlp


class SessionCallback(L.Callback):
    """Reports the logged ``monitor`` metric to a tuner session after every validation."""

    def __init__(self, session, monitor: str = "val_acc") -> None:
        self.session = session
        self.monitor = monitor
        self.samples = 0
        self.schedule = None

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.schedule = self.session.schedule(trainer.optimizers[0])  # the searched schedule, by samples
        self.session.start_training()  # model and data are set up: the train clock starts

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.schedule.step(self.samples)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.samples += len(batch[0])

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            self.session.pause()  # validation is not training time

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        metric = trainer.callback_metrics[self.monitor]
        answer = self.session.report(float(metric), self.samples)
        if answer.stop:
            trainer.should_stop = True


def precision_plugin(config, device: torch.device) -> list[MixedPrecision]:
    """The trial's precision as Lightning's plugin: autocast to bf16, or to fp16 with the loss
    scaler (on a CPU Lightning's ``precision="16-mixed"`` would run bf16), none for fp32."""
    if config.precision == "fp32":
        return []
    scaler = torch.amp.GradScaler(device.type) if config.precision == "fp16" else None
    return [MixedPrecision("16-mixed" if scaler is not None else "bf16-mixed", device.type, scaler)]


class DigitsClassifier(L.LightningModule):
    def __init__(self, session, width: float, dropout: float, depth: int) -> None:
        super().__init__()
        self.net = mlp(width, dropout, depth)
        self.session = session

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("val_acc", (logits.argmax(-1) == y).float().mean(), prog_bar=False)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))

    def configure_optimizers(self):
        return self.session.optimizer(self)  # the searched optimizer, rate, betas and weight decay


def train(config, device: torch.device, seed: int, session, *, dropout: float = 0.1, depth: int = 1) -> None:
    """One trial: a Lightning Trainer that validates every ``eval_every_samples`` samples."""
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)  # no banner per trial
    warnings.filterwarnings("ignore", module="lightning")
    torch.manual_seed(seed)
    x, y, x_test, y_test = digits()
    passes = config.accumulate  # each optimizer step's batch_size samples in this many passes
    train_loader = DataLoader(TensorDataset(x, y), batch_size=max(1, config.batch_size // passes), shuffle=True)
    val_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=len(x_test))
    model = DigitsClassifier(session, config.width, dropout, depth)
    trainer = L.Trainer(
        accelerator="gpu" if device.type == "cuda" else "cpu",
        devices=[device.index or 0] if device.type == "cuda" else 1,
        plugins=precision_plugin(config, device),
        accumulate_grad_batches=passes,
        max_epochs=-1,  # the session decides when to stop
        val_check_interval=max(1, session.eval_every_samples * passes // config.batch_size),
        check_val_every_n_epoch=None,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[SessionCallback(session)],
    )
    # Lightning turns a KeyboardInterrupt (Ctrl-C, or tuner's SIGTERM handling) into
    # sys.exit(1) and ignores SIGINT from then on: give tuner back the interrupt, so that the
    # trial is recorded as interrupted and the study stops cleanly.
    on_sigint = signal.getsignal(signal.SIGINT)
    try:
        trainer.fit(model, train_loader, val_loader)
    except SystemExit as err:
        raise KeyboardInterrupt("interrupted during the Lightning fit") from err
    finally:
        signal.signal(signal.SIGINT, on_sigint)
