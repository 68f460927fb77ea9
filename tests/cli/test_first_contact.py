"""Two jobs written from the docs alone, run as a new user runs them: through the CLI, from another folder.

1. A training function in the experiment's own folder (found there without PYTHONPATH), which
   raises on one value of its own hyperparameter, trains with a fixed optimizer, and names its
   own hyperparameters in the baseline: one line per failed trial and no traceback; the baseline
   trained with the loop's own defaults and recorded so; `tuner best` exports only what the
   loop reads and the experiment names, and `tuner train` replays it.
2. A Dataset whose ``decode`` returns the input alone: refused when the task is built, in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import optuna
import pytest
import yaml
from conftest import cli, write

from tuner.cli import main
from tuner.study.record import COMPLETE, records
from tuner.study.reruns.winner import winner
from tuner.study.study_record import config_reads
from tuner.train.trial_config import TrialConfig

TRAIN_FN = '''
import json
from pathlib import Path

import torch
from torch import nn


def train(config, device, seed, session, *, n_layer: int = 1, dropout: float = 0.0):
    """A small MLP on separable points; its own AdamW when the configuration says adamw."""
    if n_layer == 3:
        raise ValueError(f"n_layer must be 1 or 2, got {n_layer}")
    with open(Path(__file__).parent / "trained.jsonl", "a") as log:  # what the loop really trained with, per seed
        log.write(json.dumps({"seed": seed, "optimizer": config.optimizer, "n_layer": n_layer, "dropout": dropout}) + "\\n")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(512, 8, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    hidden = [m for _ in range(n_layer - 1) for m in (nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 16))]
    model = nn.Sequential(nn.Linear(8, 16), *hidden, nn.ReLU(), nn.Linear(16, 2))
    kind = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
    opt = kind(model.parameters(), lr=config.lr)
    session.start_training()
    samples = 0
    for _ in range(200):
        for i in range(0, 384, config.batch_size):
            loss = nn.functional.cross_entropy(model(x[i:i + config.batch_size]), y[i:i + config.batch_size])
            opt.zero_grad()
            loss.backward()
            opt.step()
            samples += len(x[i:i + config.batch_size])
            if session.due(samples):
                with torch.no_grad():
                    acc = (model(x[384:]).argmax(1) == y[384:]).float().mean().item()
                if session.report(acc, samples).stop:
                    return
'''

EXPERIMENT = """
task: mm_tuner:train
search_space:
  optimizer: adamw
  lr: {low: 0.01, high: 0.05, log: true}
  beta1: {low: 0.8, high: 0.95}
  batch_size: 64
  n_layer: {choices: [1, 2, 3]}
objective: {target: 0.85, eval_every_samples: 256, cap_s: 5.0}
sampler: {name: random}
budget: {n_trials: 6}
race: null
screen: null
confirm: {top_k: 1, seeds: 2}
baseline: {n_layer: 2, lr: 0.02}
storage: sqlite:///job.db
seed: 1
"""


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, Path]:
    """(the experiment's folder with its training function, another folder to run from)."""
    folder = tmp_path / "job"
    folder.mkdir()
    write(folder / "mm_tuner.py", TRAIN_FN)
    write(folder / "exp.yaml", EXPERIMENT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return folder, elsewhere


def no_pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run_tuner(*args: str, cwd: Path) -> tuple[int, str]:
    env = no_pythonpath()
    proc = cli(*args, cwd=cwd, env=env, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.e2e
def test_a_training_function_of_ones_own_runs_without_a_workaround(job: tuple[Path, Path]) -> None:
    folder, elsewhere = job
    rc, out = run_tuner("run", str(folder / "exp.yaml"), "--no-tracking", cwd=elsewhere)  # mm_tuner found beside exp.yaml
    assert rc == 0, out
    assert "Traceback" not in out and "[W " not in out  # nothing from Optuna's logger
    failed = [line for line in out.splitlines() if " failed " in f" {line} " and line.startswith("trial")]
    assert failed, out  # n_layer 3 was drawn: a failure the study went on past
    reason = "ValueError: n_layer must be 1 or 2, got 3"
    assert all(reason in line for line in failed)
    assert out.count(reason) == len(failed)  # said once per failed trial, on its own line
    assert "search space: the training function never read config.beta1: searching it is wasted (fix or remove)" in out

    study = optuna.load_study(study_name="exp", storage=f"sqlite:///{elsewhere / 'job.db'}")
    baseline = [r for r in records(study, COMPLETE) if r.is_baseline]
    assert len(baseline) == 2
    recorded = baseline[0].config
    assert (recorded.optimizer, recorded.lr, dict(recorded.hyper)) == ("adamw", 0.02, {"n_layer": 2, "dropout": 0.0})
    trained = [json.loads(line) for line in (folder / "trained.jsonl").read_text().splitlines()]
    for run in baseline:  # the loop trained what the record says
        assert {"seed": run.seed, "optimizer": "adamw", "n_layer": 2, "dropout": 0.0} in trained
    reads = config_reads(study)
    assert reads is not None and {"optimizer", "lr", "batch_size"} <= set(reads["read"]) and "beta1" not in reads["read"]

    rc, out = run_tuner("best", str(folder / "exp.yaml"), "-o", str(folder / "best.yaml"), cwd=elsewhere)
    assert rc == 0, out
    exported = yaml.safe_load((folder / "best.yaml").read_text())
    # Which trial wins depends on the machine's speed: a search trial, or the baseline when the
    # search found nothing faster. Whichever it is, the export is that trial, with what the
    # experiment names plus that trial's own hyperparameters (the baseline records the loop's
    # defaults, dropout among them), and nothing the loop neither reads nor is given.
    chosen = winner(study)
    assert chosen is not None and exported["seed"] == chosen.trial.seed
    own = dict(chosen.trial.config.hyper)
    # beta1 was searched but never read: kept only where it differs from its default (the
    # baseline's does not), so that the export still replays the trial's configuration.
    never_read = {"beta1"} if chosen.trial.config.beta1 != TrialConfig().beta1 else set()
    assert set(exported["search_space"]) == {"optimizer", "lr", "batch_size"} | never_read | set(own)  # no warmup_frac, ...
    if not never_read:
        assert "left out, as this configuration does not use them (each at its default): beta1" in (folder / "best.yaml").read_text()
    assert set(own) == ({"n_layer", "dropout"} if chosen.trial.is_baseline else {"n_layer"})
    assert {k: exported["search_space"][k] for k in own} == own
    rc, out = run_tuner("train", str(folder / "best.yaml"), cwd=elsewhere)  # found beside best.yaml, no PYTHONPATH
    assert rc in (0, 1) and "Traceback" not in out and " seed " in out, out  # trained once, reached or not


@pytest.mark.e2e
def test_verbose_shows_the_first_failures_traceback_once(job: tuple[Path, Path]) -> None:
    folder, elsewhere = job
    write(folder / "exp.yaml", EXPERIMENT.replace("{choices: [1, 2, 3]}", "3"))  # every trial fails alike
    rc, out = run_tuner("run", str(folder / "exp.yaml"), "--no-tracking", cwd=elsewhere)
    assert rc == 1 and out.count("Traceback") == 0, out
    assert out.strip().splitlines()[-1] == "tuner: error: 3 trials in a row failed with: ValueError: n_layer must be 1 or 2, got 3"
    rc, out = run_tuner("run", str(folder / "exp.yaml"), "--no-tracking", "--study-name", "again", "--verbose", cwd=elsewhere)
    assert rc == 1 and out.count("Traceback") == 1, out
    assert 'mm_tuner.py", line' in out  # the user's own frame, where the error was raised


def test_a_task_module_nowhere_to_be_found_says_to_set_pythonpath(tmp_path: Path) -> None:
    path = write(tmp_path / "exp.yaml", "task: not_here:train\n")
    rc, out = run_tuner("validate", str(path), cwd=tmp_path)
    assert rc == 2 and len(out.strip().splitlines()) == 1, out
    assert "(No module named 'not_here' beside the experiment either; set PYTHONPATH to its folder)" in out


DATASET_TASK = '''
import torch
from torch import nn
from torch.utils.data import Dataset
from tuner import Task


class Points(Dataset):
    """Items split as the docs describe: decode (what a cache keeps), then transform."""

    def __init__(self, n):
        g = torch.Generator().manual_seed(n)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self):
        return len(self.x)

    def decode(self, index):
        return self.x[index]            # the input alone

    def transform(self, x, index):
        return x

    def __getitem__(self, index):
        return self.transform(self.decode(index), index), int(self.y[index])


def task():
    return Task("points", build_model=lambda width: nn.Linear(8, 2), train_data=Points(256), test_data=Points(128), target=0.8)
'''


def test_a_dataset_whose_decode_returns_the_input_alone_is_refused_at_build(tmp_path: Path) -> None:
    write(tmp_path / "points_task.py", DATASET_TASK)
    path = write(
        tmp_path / "exp.yaml", "task: points_task:task\nsearch_space: {cache: memory}\nbudget: {n_trials: 2}\nstorage: sqlite:///p.db\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rc, out = run_tuner("run", str(path), "--no-tracking", cwd=elsewhere)
    assert rc == 2 and "Traceback" not in out, out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    assert lines[0].startswith(f"tuner: error: {path}: task: expected a task that builds, got ")
    assert "train_data.decode(index) results must be (input, label) pairs, got a Tensor" in lines[0]
    assert not (elsewhere / "p.db").exists()


def test_best_without_an_experiment_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["best", "-o", "x.yaml"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == "tuner: error: tuner best: EXPERIMENT: expected the experiment file (tuner best EXPERIMENT.yaml) or --study-name NAME, got None"
    )
    assert not (tmp_path / "x.yaml").exists() and not (tmp_path / "tuner.db").exists()
