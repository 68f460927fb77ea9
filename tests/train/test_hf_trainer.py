"""Hugging Face's Trainer under a session: the trial's batch, accumulation and precision reach its
TrainingArguments in one call, and its log dicts stay off the study's terminal."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import optuna
import pytest
from conftest import CPU, cli, write

from tuner.train.hf_trainer import training_arguments
from tuner.train.trial_config import TrialConfig

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="the huggingface extra is not installed")

# A Trainer on a two-layer network: the loop a user writes around session.training_arguments and session.quiet_trainer.
LOOP = """
import json
import tempfile
from pathlib import Path

import torch
from torch import nn
from transformers import Trainer, TrainerCallback

ARGS = ("per_device_train_batch_size", "gradient_accumulation_steps", "bf16", "fp16", "seed")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x, labels):
        logits = self.body(x)
        return {"loss": nn.functional.cross_entropy(logits.float(), labels), "logits": logits}


class Pairs(torch.utils.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


class Report(TrainerCallback):
    def __init__(self, session, step_samples):
        self.session, self.step_samples, self.samples = session, step_samples, 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.session.start_training()

    def on_step_end(self, args, state, control, **kwargs):
        self.samples += self.step_samples
        control.should_evaluate = self.session.due(self.samples)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        control.should_training_stop = self.session.report(metrics["eval_loss"], self.samples).stop


def train(config, device, seed, session):
    torch.manual_seed(seed)
    x = torch.randn(1024, 8, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] + x[:, 1] > 0).long()
    model = Net()
    optimizer = session.optimizer(model)
    with tempfile.TemporaryDirectory() as out:
        args = session.training_arguments(out, per_device_eval_batch_size=256, num_train_epochs=1000)
        with open(Path(__file__).parent / "args.jsonl", "a") as log:
            log.write(json.dumps({name: getattr(args, name) for name in ARGS}) + "\\n")
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=Pairs(x[:768], y[:768]),
            eval_dataset=Pairs(x[768:], y[768:]),
            optimizers=(optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)),
            callbacks=[Report(session, args.per_device_train_batch_size * args.gradient_accumulation_steps)],
        )
        session.quiet_trainer(trainer).train()
"""

EXPERIMENT = """
task: hf_loop:train
search_space:
  optimizer: adamw
  lr: 1.0e-2
  precision: {choices: [fp32, bf16]}
  batch_size: {choices: [32, 64]}
  accumulate: {choices: [1, 2]}
objective: {metric: loss, direction: minimize, target: 0.3, eval_every_samples: 256, cap_s: 30.0}
budget: {n_trials: 2}
confirm: {after_search: false}
race: null
screen: null
trainer: {threads: 1}
storage: sqlite:///study.db
"""


def test_the_trials_batch_accumulation_and_precision_are_the_trainers_arguments(tmp_path: Path) -> None:
    args = training_arguments(TrialConfig(precision="bf16", batch_size=64, accumulate=2), CPU, 7, str(tmp_path), num_train_epochs=3)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.bf16, args.fp16) == (32, 2, True, False)
    assert (args.seed, args.use_cpu, args.num_train_epochs) == (7, True, 3)
    assert args.disable_tqdm and args.report_to == [] and args.dataloader_drop_last  # quiet, untracked, exact counts
    assert training_arguments(TrialConfig(precision="fp16"), CPU, 0, str(tmp_path)).fp16
    assert not training_arguments(TrialConfig(), CPU, 0, str(tmp_path), disable_tqdm=False).disable_tqdm  # a default, overridden
    with pytest.raises(TypeError, match="gradient_accumulation_steps come from the trial's configuration"):
        training_arguments(TrialConfig(), CPU, 0, str(tmp_path), gradient_accumulation_steps=4)


@pytest.mark.e2e
def test_a_trainer_study_prints_no_log_dicts_and_trains_each_trials_configuration(tmp_path: Path) -> None:
    write(tmp_path / "hf_loop.py", LOOP)
    write(tmp_path / "exp.yaml", EXPERIMENT)
    study = optuna.create_study(study_name="exp", storage=f"sqlite:///{tmp_path / 'study.db'}", direction="minimize")
    enqueued = [{"precision": "bf16", "batch_size": 64, "accumulate": 2}, {"precision": "fp32", "batch_size": 32, "accumulate": 1}]
    for params in enqueued:
        study.enqueue_trial(params)
    run = cli("run", "exp.yaml", "--no-tracking", cwd=tmp_path, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    trials = optuna.load_study(study_name="exp", storage=f"sqlite:///{tmp_path / 'study.db'}").trials
    assert [t.user_attrs["outcome"] for t in trials] == ["reached", "reached"], out[-3000:]
    # Each evaluation printed {'eval_loss': ..., 'eval_runtime': ...} before; now none of the Trainer's dicts.
    assert "{'eval_loss'" not in out and not [line for line in out.splitlines() if line.lstrip().startswith("{'")], out
    trained = [json.loads(line) for line in (tmp_path / "args.jsonl").read_text().splitlines()]
    assert trained == [
        {
            "per_device_train_batch_size": p["batch_size"] // p["accumulate"],
            "gradient_accumulation_steps": p["accumulate"],
            "bf16": p["precision"] == "bf16",
            "fp16": False,
            "seed": t.user_attrs["seed"],
        }
        for p, t in zip(enqueued, trials, strict=True)
    ]
