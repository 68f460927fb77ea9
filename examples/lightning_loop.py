"""A PyTorch Lightning training job tuned by tuner: a Callback reports to the session.

``SessionCallback`` is all the integration there is: the train clock starts when Lightning
starts training, pauses while it validates, and each validation's metric is reported with
the training samples seen so far. When the session answers stop (reached, pruned, capped,
out of time) the callback asks the Trainer to stop (``trainer.should_stop = True``).
Validation runs at the experiment's cadence (``val_check_interval`` in batches).

Needs the optional extra: ``pip install "tuner[lightning]"``. Run it from the repository
root: ``python -m tuner run examples/lightning_loop.yaml``.
"""

from __future__ import annotations

import logging
import signal
import warnings

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from examples.plain_loop import digits, mlp


class SessionCallback(L.Callback):
    """Reports the logged ``monitor`` metric to a tuner session after every validation."""

    def __init__(self, session, monitor: str = "val_acc") -> None:
        self.session = session
        self.monitor = monitor
        self.samples = 0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.session.start_training()  # model and data are set up: the train clock starts

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


class DigitsClassifier(L.LightningModule):
    def __init__(self, width: float, lr: float, weight_decay: float, dropout: float, depth: int) -> None:
        super().__init__()
        self.net = mlp(width, dropout, depth)
        self.lr, self.weight_decay = lr, weight_decay

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("val_acc", (logits.argmax(-1) == y).float().mean(), prog_bar=False)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)


def train(config, device: torch.device, seed: int, session, *, dropout: float = 0.1, depth: int = 1) -> None:
    """One trial: a Lightning Trainer that validates every ``eval_every_samples`` samples."""
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)  # no banner per trial
    warnings.filterwarnings("ignore", module="lightning")
    torch.manual_seed(seed)
    x, y, x_test, y_test = digits()
    train_loader = DataLoader(TensorDataset(x, y), batch_size=config.batch_size, shuffle=True)
    val_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=len(x_test))
    model = DigitsClassifier(config.width, config.lr, config.weight_decay, dropout, depth)
    trainer = L.Trainer(
        accelerator="gpu" if device.type == "cuda" else "cpu",
        devices=[device.index or 0] if device.type == "cuda" else 1,
        max_epochs=-1,  # the session decides when to stop
        val_check_interval=max(1, session.eval_every_samples // config.batch_size),
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
