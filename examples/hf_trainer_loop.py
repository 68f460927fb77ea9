"""A Hugging Face ``Trainer`` job tuned by tuner: a small GPT-2, built from a config (nothing
downloaded), learns the charlm corpus (the Python standard library's docstrings) to a
held-out loss; a TrainerCallback reports to the session.

``SessionCallback`` is the reporting: the train clock starts when the Trainer starts
training; after each optimizer step it counts the step's samples and, when the session's
``due()`` says an evaluation is due (the clock pauses), asks the Trainer to evaluate; the
evaluation's ``eval_loss`` is reported, and when the session answers stop (reached,
pruned, capped, out of time) the callback stops the Trainer. The searched dimensions come
from the session's calls: the optimizer (``session.optimizer(model)``, passed to the
Trainer), the schedule (the callback sets ``session.schedule``'s rate for the samples seen
before each step), and the batch, accumulation and precision in one call:
``session.training_arguments(...)`` returns the Trainer's ``TrainingArguments`` with
``per_device_train_batch_size``, ``gradient_accumulation_steps`` and ``bf16``/``fp16`` set from
the trial. ``session.quiet_trainer(trainer)`` takes off the Trainer's printing of each
evaluation's log dict: the study prints one line per trial.

Needs the optional extra: ``pip install "tuner[huggingface]"``. Run it from the repository
root: ``python -m tuner run examples/hf_trainer_loop.yaml``.
"""

from __future__ import annotations

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback

from tuner.tasks.charlm import ALPHABET, HELD_OUT_SHARE, corpus_arrays, windows


class SessionCallback(TrainerCallback):
    """Reports the Trainer's ``eval_loss`` to a tuner session at the experiment's cadence."""

    def __init__(self, session, optimizer: torch.optim.Optimizer, step_samples: int) -> None:
        self.session = session
        self.schedule = session.schedule(optimizer)  # the searched schedule, by samples
        self.step_samples = step_samples  # samples per optimizer step (all its accumulated passes)
        self.samples = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.session.start_training()  # model and data are set up: the train clock starts

    def on_step_begin(self, args, state, control, **kwargs):
        self.schedule.step(self.samples)

    def on_step_end(self, args, state, control, **kwargs):
        self.samples += self.step_samples
        if self.session.due(self.samples):  # the train clock is paused until report() answers
            control.should_evaluate = True

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        answer = self.session.report(metrics["eval_loss"], self.samples, loss=metrics["eval_loss"])
        if answer.stop:
            control.should_training_stop = True


class Windows(torch.utils.data.Dataset):
    """Windows of characters as a causal language model's examples (its labels are its inputs)."""

    def __init__(self, ids: torch.Tensor) -> None:
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def charlm_windows(block: int = 64, n_test: int = 128, max_chars: int = 400_000) -> tuple[Windows, Windows]:
    """The charlm task's corpus and split: training windows, and the held-out tenth's first ``n_test``."""
    arrays, _ = corpus_arrays(None, max_chars)
    ids = torch.from_numpy(arrays["ids"]).long()
    split = int(len(ids) * (1 - HELD_OUT_SHARE))
    train_x, _ = windows(ids[:split], block, block // 2)
    test_x, _ = windows(ids[split:], block, block)
    return Windows(train_x), Windows(test_x[:n_test])


def train(config, device: torch.device, seed: int, session, *, n_layer: int = 2, n_head: int = 4) -> None:
    """One trial: a Trainer on a GPT-2 of ``n_layer`` blocks, 64 x width wide."""
    torch.manual_seed(seed)
    train_set, held_out = charlm_windows()
    width = max(n_head, round(64 * config.width) // n_head * n_head)
    # No GPT-2 tokenizer here: its begin and end tokens (50256) lie outside the characters' vocabulary.
    gpt2 = GPT2Config(
        vocab_size=len(ALPHABET), n_positions=64, n_embd=width, n_layer=n_layer, n_head=n_head, bos_token_id=None, eos_token_id=None
    )
    model = GPT2LMHeadModel(gpt2)
    optimizer = session.optimizer(model)  # the searched optimizer, rate, betas and weight decay
    constant = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)  # the callback sets the rate
    with tempfile.TemporaryDirectory() as out:
        # The trial's batch, accumulation, precision and seed; no evaluation, logging or saving of the Trainer's own.
        args = session.training_arguments(out, per_device_eval_batch_size=len(held_out), num_train_epochs=10_000)
        step_samples = args.per_device_train_batch_size * args.gradient_accumulation_steps
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=train_set,
            eval_dataset=held_out,
            optimizers=(optimizer, constant),
            callbacks=[SessionCallback(session, optimizer, step_samples)],  # evaluations come when the session says
        )
        session.quiet_trainer(trainer)  # no log dict printed per evaluation: the study prints one line per trial
        session.keep(model)
        trainer.train()
