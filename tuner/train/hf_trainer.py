"""Hugging Face's ``Trainer`` driven by a session: its arguments from the trial, its printing off the terminal.

A training function that runs a ``transformers.Trainer`` (examples/hf_trainer_loop.py) hands
the trial's batch, accumulation and precision to it in one call, and keeps the Trainer's own
output out of the study's::

    args = session.training_arguments(out, per_device_eval_batch_size=256, num_train_epochs=10_000)
    trainer = session.quiet_trainer(Trainer(model=model, args=args, ...))

``training_arguments`` sets ``per_device_train_batch_size`` and ``gradient_accumulation_steps``
(``config.batch_size`` in ``config.accumulate`` passes), ``bf16``/``fp16`` (``config.precision``,
by its dtype in tuner/train/precision.py), ``use_cpu`` and ``seed``; those are the trial's, and
naming one of them again is a TypeError. The rest are defaults for a Trainer the session
drives, each of which the caller may override: no progress bar, the Trainer's logger at
errors only, no periodic logging, evaluation or checkpoints (the session says when to
evaluate and stop), no tracker of its own (tuner's MLflow runs hold the trial), and full
batches only, so the samples counted per step are exact.

``quiet_trainer`` takes off the Trainer's callback that prints each log dict (``PrinterCallback``,
or its progress bar): at one evaluation per few hundred samples, its ``{'eval_loss': ...}``
lines outnumbered everything else a study printed. The dicts go to the ``tuner.hf_trainer``
logger at DEBUG instead; the metric itself reaches the trial's record and MLflow run through
``session.report``.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from tuner.train.precision import PRECISION_KINDS
from tuner.train.trial_config import TrialConfig

LOG = logging.getLogger("tuner.hf_trainer")
# A Trainer that tuner drives: the session says when to evaluate and stop, tuner tracks the trial.
QUIET = {
    "disable_tqdm": True,
    "log_level": "error",
    "log_level_replica": "error",
    "logging_strategy": "no",
    "eval_strategy": "no",
    "save_strategy": "no",
    "report_to": "none",
    "dataloader_drop_last": True,  # every step holds batch_size samples: the count stays exact
}


def trial_arguments(config: TrialConfig, device: torch.device, seed: int) -> dict[str, Any]:
    """The ``TrainingArguments`` that carry the trial's batch, accumulation and precision."""
    dtype = PRECISION_KINDS[config.precision].dtype
    passes = config.accumulate
    return {
        "per_device_train_batch_size": max(1, config.batch_size // passes),
        "gradient_accumulation_steps": passes,
        "bf16": dtype is torch.bfloat16,
        "fp16": dtype is torch.float16,  # accelerate scales the loss where the device has a scaler
        "use_cpu": device.type == "cpu",
        "seed": seed,
    }


def training_arguments(config: TrialConfig, device: torch.device, seed: int, output_dir: str, **rest: Any) -> Any:
    """A ``transformers.TrainingArguments`` for the trial (see the module's docstring)."""
    from transformers import TrainingArguments  # the optional huggingface extra, imported where it is used

    trial = trial_arguments(config, device, seed)
    taken = sorted(set(rest) & set(trial))
    if taken:
        raise TypeError(f"session.training_arguments: {', '.join(taken)} come from the trial's configuration; leave them out")
    return TrainingArguments(output_dir=output_dir, **{**QUIET, **rest, **trial})


def quiet_trainer(trainer: Any) -> Any:
    """``trainer`` without the callbacks that print its log dicts and progress; returns it."""
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    class DebugLog(TrainerCallback):
        """Stands in for the printing: each log dict to the ``tuner.hf_trainer`` logger, at DEBUG."""

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            LOG.debug("%s", logs)

    for callback in [cb for cb in trainer.callback_handler.callbacks if isinstance(cb, (PrinterCallback, ProgressCallback))]:
        trainer.remove_callback(callback)
    trainer.add_callback(DebugLog())
    return trainer
