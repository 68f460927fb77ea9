"""`tuner init [EXPERIMENT.yaml] [--loop [MODULE.py]]`: write a commented experiment file, and a
training-function skeleton for a loop of one's own; never over an existing file unless --force."""

from __future__ import annotations

import argparse
from pathlib import Path

from tuner.docs_reference import Key, experiment_keys, yaml_value
from tuner.errors import ConfigError
from tuner.tasks.registry import BUILTIN_TASKS

# The keys an experiment from `tuner init` sets; every other key is written commented out, at its default.
PLAIN_VALUES = {"objective.target": 0.9, "objective.eval_every_samples": 2000, "objective.cap_s": 20.0, "budget.n_trials": 20}
LOOP_VALUES = {"objective.target": 0.9, "objective.eval_every_samples": 500, "objective.cap_s": 10.0, "budget.n_trials": 20}
# The loop's search space: the dimensions the skeleton reads from its config.
LOOP_SPACE = """\
search_space:                   # the joint space: the session's calls apply each of these in the skeleton's loop
  optimizer: {choices: [adam, adamw, nadam]}
  lr: {low: 1.0e-3, high: 3.0e-2, log: true}
  weight_decay: {low: 1.0e-5, high: 1.0e-2, log: true, when: {optimizer: [adamw]}}
  schedule: {choices: [constant, warmup_cosine]}
  horizon_samples: {low: 5000, high: 50000, log: true, when: {schedule: [warmup_cosine]}}
  batch_size: {choices: [32, 64, 128]}
  precision: {choices: [fp32, bf16]}
  width: {choices: [0.5, 1.0, 2.0]}
"""
# The training-function skeleton `--loop` writes: examples/plain_loop.py's loop, with the data and model left to fill in.
SKELETON = '''"""A training function of your own, tuned by tuner (written by `tuner init --loop`).

tuner calls ``train`` once per trial. Fill in ``build_model`` (and ``load_data``, with your
data); the rest is a plain PyTorch loop around the session's calls. ``optimizer(model)``
builds the trial's optimizer and ``train_step(...)`` its optimizer step (precision, loss
scaling, accumulation, the learning-rate schedule): the search space reaches the loop
through them. ``start_training()`` starts the train clock, ``due(samples)`` says when the
experiment's cadence wants an evaluation (and pauses the clock), and ``report(metric,
samples)`` records the held-out metric with the training samples seen so far and answers
whether to stop (the target was reached, or the trial was pruned, capped or ran out of
time). The loop never times itself.
From this folder (``python -m`` puts it on the import path, so MODULE imports):

    python -m tuner validate EXPERIMENT
    python -m tuner run EXPERIMENT
"""

from __future__ import annotations

import torch
from torch import nn


def load_data(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Training inputs and labels, then held-out inputs and labels: replace with your data.

    The placeholder: 4 Gaussian clusters in 16 dimensions, 2,000 training and 500 held-out samples.
    """
    g = torch.Generator().manual_seed(seed)
    centers = 0.8 * torch.randn(4, 16, generator=g)  # overlapping clusters: 0.9 takes a few hundred samples
    labels = torch.randint(0, 4, (2500,), generator=g)
    inputs = centers[labels] + torch.randn(2500, 16, generator=g)
    return inputs[:2000], labels[:2000], inputs[2000:], labels[2000:]


def build_model(width: float) -> nn.Module:
    """Your model; ``width`` scales its size (1.0 is your reference model)."""
    raise NotImplementedError("build_model in MODULE: put your model here")


def train(config, device: torch.device, seed: int, session) -> None:
    """One trial: train until the session says stop. ``config`` holds the trial's values of the
    experiment's search space (batch_size and width here; the session's calls read the rest)."""
    torch.manual_seed(seed)
    x, y, x_test, y_test = (t.to(device) for t in load_data())
    model = build_model(config.width).to(device)
    session.keep(model)  # the weights `tuner train --save` writes: read after the trial, off the clock
    loss_fn = nn.CrossEntropyLoss()
    optimizer = session.optimizer(model)  # the trial's optimizer, rate, betas, weight decay (none on biases and norms)
    step = session.train_step(model, loss_fn, optimizer)  # precision, loss scaling, accumulation, the schedule
    session.start_training()  # data and model are ready: the train clock starts here
    samples = 0
    while True:
        for idx in torch.randperm(len(x), device=device).split(config.batch_size):
            model.train()
            loss = step(x[idx], y[idx])  # one optimizer step
            samples += len(idx)
            if session.due(samples):  # an evaluation is due: the train clock is paused until report() answers
                model.eval()
                with torch.no_grad(), session.autocast():
                    logits = model(x_test).float()
                accuracy = (logits.argmax(-1) == y_test).float().mean().item()
                answer = session.report(accuracy, samples, loss=loss_fn(logits, y_test).item(), train_loss=loss.item())
                if answer.stop:  # reached the target, pruned, capped or out of time
                    return
'''


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="write a commented experiment file (and, with --loop, a training-function skeleton)")
    p.add_argument("experiment", nargs="?", default="experiment.yaml", help="experiment YAML to write (default: experiment.yaml)")
    p.add_argument(
        "--loop",
        nargs="?",
        const="train_loop.py",
        metavar="MODULE.py",
        help="also write a training-function skeleton (default: train_loop.py) and make it the task",
    )
    p.add_argument("--task", help="a built-in task or package.module:function (default: mnist1d-cnn; not with --loop)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = Path(args.experiment)
    if experiment.suffix not in (".yaml", ".yml"):
        raise ConfigError(args.experiment, "tuner init", "an experiment file name ending in .yaml or .yml", experiment.name)
    if args.loop is not None and args.task is not None:
        raise ConfigError(args.experiment, "--task", "no --task with --loop (the skeleton's train function is the task)", args.task)
    written = [experiment]
    if args.loop is not None:
        module = Path(args.loop)
        if module.suffix != ".py" or not module.stem.isidentifier():
            raise ConfigError(args.loop, "--loop", "a Python file name that imports as a module, such as train_loop.py", module.name)
        written.append(module)
    for path in written:  # all checked before any is written: a refusal leaves nothing half done
        if path.exists() and not args.force:
            raise ConfigError(str(path), "tuner init", "a file that does not exist yet (--force overwrites it)", "an existing file")
    if args.loop is not None:
        task, values, space = f"{module.stem}:train", LOOP_VALUES, LOOP_SPACE
    else:
        task, values, space = args.task or "mnist1d-cnn", PLAIN_VALUES, None
    experiment.parent.mkdir(parents=True, exist_ok=True)
    experiment.write_text(experiment_text(experiment, task, values, space))
    if args.loop is not None:
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(SKELETON.replace("EXPERIMENT", experiment.name).replace("MODULE", module.name))
    print("wrote " + " and ".join(str(p) for p in written))
    print(next_steps(experiment, args.loop))
    return 0


def next_steps(experiment: Path, loop: str | None) -> str:
    """What to do next, as commands to copy."""
    lines = ["next:"]
    if loop is not None:
        lines.append(f"  fill in build_model (and load_data, with your data) in {loop}, then, from the folder that holds it:")
        prefix = "python -m tuner"  # puts the current folder on the import path, so the skeleton imports
    else:
        prefix = "tuner"
    lines += [f"  {prefix} validate {experiment}", f"  {prefix} run {experiment}"]
    return "\n".join(lines)


def _comment(key: Key) -> str:
    return f"{key.meaning}; {key.allowed}"


def experiment_text(path: Path, task: str, values: dict[str, object], space: str | None) -> str:
    """The experiment file: the keys in ``values`` set, every other key commented out at its default.

    Removing the ``# `` in front of any commented key gives a valid file (the tests do so).
    """
    out = [
        "# An experiment for tuner, written by `tuner init`. Every key has a default: a line that",
        "# starts with '# ' and a key shows it; remove the '# ' to change it. Every key and its check:",
        "# the documentation's experiment-file page. Check this file without training anything with",
        f"#   tuner validate {path.name}",
        f"name: {path.stem}",
        _line(0, "task", task, "a built-in task (" + ", ".join(BUILTIN_TASKS) + "), package.module:function", live=True),
    ]
    keys = experiment_keys()
    for key in keys:
        if key.path in ("name", "task") or "." in key.path:
            continue
        if key.path == "search_space" and space is not None:
            out.append(space.rstrip("\n"))
            continue
        if key.path == "proxy":  # off unless written: its fidelities must be ones the space fixes
            out.append(_line(0, "proxy", "", "off; a job that takes hours: search it at a cheaper fidelity (docs/proxy.md)", live=False))
            continue
        children = [k for k in keys if k.path.startswith(key.path + ".")]
        if not key.section:
            out.append(_line(0, key.path, key.default, _comment(key), live=False))
            continue
        live = any(k.path in values for k in children)
        out.append(f"{key.path}:" if live else f"# {key.path}:")
        for child in children:
            name = child.path.split(".", 1)[1]
            if child.path in values:
                out.append(_line(1, name, yaml_value(values[child.path]), _comment(child), live=True))
            else:
                out.append(_line(1, name, child.default, _comment(child), live=False))
    return "\n".join(out) + "\n"


def _line(depth: int, name: str, value: str, comment: str, live: bool) -> str:
    body = f"{'  ' * depth}{name}: {value}"
    if not live:
        body = "# " + body  # a commented-out key starts with '# ' so that removing it gives valid YAML
    return f"{body:<31} # {comment}"
