"""A new user's loop, written from docs/own-job.md: 25 lines (data, model, the session's calls)
search optimizer, lr, schedule, precision and batch size in a 6-trial study through the CLI;
each trial trained with the optimizer it drew, and `tuner best` exports only what the loop read."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
import yaml
from conftest import cli, write

from tuner.study.study_record import config_reads

LOOP = """
import json
from pathlib import Path

import torch
from torch import nn


def train(config, device, seed, session):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1024, 8, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = session.optimizer(model)
    step = session.train_step(model, nn.functional.cross_entropy, optimizer)
    with open(Path(__file__).parent / "trained.jsonl", "a") as log:  # what each trial trained with
        log.write(json.dumps({"seed": seed, "optimizer": type(optimizer).__name__}) + "\\n")
    session.start_training()
    samples = 0
    while True:
        for i in range(0, 768, config.batch_size):
            loss = step(x[i : i + config.batch_size], y[i : i + config.batch_size])
            samples += len(x[i : i + config.batch_size])
            if session.due(samples):
                with torch.no_grad(), session.autocast():
                    accuracy = (model(x[768:]).argmax(1) == y[768:]).float().mean().item()
                if session.report(accuracy, samples, train_loss=loss).stop:
                    return
"""

EXPERIMENT = """
task: user_loop:train
search_space:
  optimizer: {choices: [adam, adamw, nadam, adamw_schedulefree]}
  lr: {low: 3.0e-3, high: 3.0e-2, log: true}
  schedule: {choices: [constant, warmup_cosine, warmup_stable_decay]}
  horizon_samples: {choices: [8192, 16384], when: {schedule: [warmup_cosine, warmup_stable_decay]}}
  precision: {choices: [fp32, bf16]}
  batch_size: {choices: [32, 64]}
  channels_last: {choices: [false, true]}
objective: {target: 0.9, eval_every_samples: 256, cap_s: 10.0}
sampler: {name: random}
budget: {n_trials: 6}
race: null
screen: null
confirm: {after_search: false}
storage: sqlite:///study.db
seed: 3
"""

CLASSES = {"adam": "Adam", "adamw": "AdamW", "nadam": "NAdam", "adamw_schedulefree": "AdamWScheduleFree"}


@pytest.mark.e2e
def test_a_new_users_loop_searches_the_joint_space_and_best_exports_what_it_read(tmp_path: Path) -> None:
    assert len(LOOP.strip().splitlines()) <= 30  # imports included; the function itself is 24 lines
    write(tmp_path / "user_loop.py", LOOP)
    write(tmp_path / "exp.yaml", EXPERIMENT)
    validate = cli("validate", "exp.yaml", cwd=tmp_path)
    assert validate.returncode == 0, validate.stderr
    sampled = validate.stdout.split("# search space as sampled on this machine")[1]
    assert "channels_last" not in sampled.split("# removed")[0]  # removed for an own loop, so not listed as sampled
    assert "# removed channels_last: task user_loop:train trains with its own loop" in sampled

    run = cli("run", "exp.yaml", "--no-tracking", cwd=tmp_path, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "never read" not in out and "Traceback" not in out
    study = optuna.load_study(study_name="exp", storage=f"sqlite:///{tmp_path / 'study.db'}")
    searched = [t for t in study.trials if "optimizer" in t.params]
    outcomes = [t.user_attrs["outcome"] for t in searched]
    assert len(searched) == 6 and "reached" in outcomes and not {"failed", "diverged"} & set(outcomes), [t.user_attrs for t in searched]
    trained = [json.loads(line) for line in (tmp_path / "trained.jsonl").read_text().splitlines()]
    drawn = [CLASSES[t.params["optimizer"]] for t in sorted(searched, key=lambda t: t.number)]
    assert [t["optimizer"] for t in trained][-6:] == drawn  # each trial trained with the optimizer it drew

    read = set(config_reads(study)["read"])
    assert {"optimizer", "lr", "schedule", "precision", "batch_size", "beta1", "weight_decay", "accumulate"} <= read
    best = cli("best", "exp.yaml", "-o", "best.yaml", cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    space = yaml.safe_load((tmp_path / "best.yaml").read_text())["search_space"]
    exported = set(space)
    used = {"optimizer", "lr", "schedule", "precision", "batch_size"} | ({"horizon_samples"} if space["schedule"] != "constant" else set())
    assert used <= exported <= read  # the searched dimensions the winner's choices use, and the loop read
    assert not exported & {"width", "compile", "channels_last", "num_workers", "freeze_frac", "ramp_start", "muon_momentum"}
