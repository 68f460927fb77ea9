"""`tuner compress FILE`: the winner, quantized, pruned and distilled, each measured as a row."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from tuner.compress.table import SPARSITIES, Plan, compress_all, markdown, write_results
from tuner.errors import ConfigError
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.tasks.hyperparameters import build_model
from tuner.train.checkpoint import CheckpointError, first_mismatch, read_checkpoint
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compress", help="quantize, prune and distill the winner; one measured row each")
    p.add_argument("experiment", help="experiment YAML whose search space fixes every dimension (e.g. the output of tuner best)")
    p.add_argument(
        "--from", dest="from_path", metavar="PATH", help="a model written by tuner train --save (default: train the configuration now)"
    )
    p.add_argument(
        "--out", default="compress_results.json", help="results file: JSON, and Markdown beside it (default: compress_results.json)"
    )
    p.add_argument(
        "--sparsities",
        default=",".join(f"{s:g}" for s in SPARSITIES),
        help="global pruning sparsities, comma-separated (default: %(default)s)",
    )
    p.add_argument(
        "--finetune-samples", type=int, help="samples of each pruned model's fine-tune (default: one pass over the training split)"
    )
    p.add_argument("--repeats", type=int, default=30, help="latency repeats after warm-up; the median is reported (default: 30)")
    p.add_argument("--no-mlflow", action="store_true", help="do not log the table to the study's MLflow run")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = resolve_clock(load_experiment(args.experiment))  # clock: auto, for this machine
    params = experiment.search_space.fixed_params()
    if params is None:
        raise ConfigError(
            args.experiment, "search_space", "every dimension fixed (tuner compress takes one configuration)", "a range or choices"
        )
    sparsities = _sparsities(args.sparsities)
    prepared = prepare(experiment)
    config = TrialConfig.from_params(params)
    o = experiment.objective
    if args.from_path:
        model, train_s = _load(args.from_path, prepared.task, config), 0.0
    else:
        kept: dict = {}
        result = train_trial(
            prepared.task, config, o.stop_rule(), prepared.device, seed=experiment.seed, keep=lambda m: kept.update(m.state_dict())
        )
        if not kept:
            raise ConfigError(args.experiment, "search_space", "a configuration that trains", f"{result.outcome.value}: {result.reason}")
        model = build_model(prepared.task, config)
        model.load_state_dict(kept)
        train_s = result.train_s
        print(f"trained {config.short()}: {result.outcome.value} ({result.reason})")
    plan = Plan(
        target=o.goal,
        eval_every=o.eval_every_samples,
        cap_s=o.stop_rule().cap_s,  # cap_s: auto is the fallback here: no baseline runs to set it
        sparsities=sparsities,
        finetune_samples=args.finetune_samples,
        repeats=args.repeats,
        seed=experiment.seed,
    )
    rows = compress_all(model, prepared.task, config, prepared.device, plan, train_s)
    table = markdown(rows, o.goal)
    print(table)
    files = write_results(
        rows,
        o.goal,
        Path(args.out),
        {"experiment": experiment.name, "task": experiment.task, "config": config.as_dict(), "from": args.from_path},
    )
    print("wrote " + ", ".join(str(f) for f in files))
    if not args.no_mlflow:
        from tuner.track.compressed import log_compression  # MLflow takes a second to import: only when it is used

        log_compression(experiment.tracking_uri, experiment.name, [r.as_dict() for r in rows], files, metric=o.goal.metric)
    return 0


def _sparsities(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or not all(0 < v < 1 for v in values):
        raise ConfigError("--sparsities", "--sparsities", "numbers in (0, 1), comma-separated", text)
    return values


def _load(path: str, task, config: TrialConfig) -> torch.nn.Module:
    """The model a --save file holds, at the configuration's width; refused when it does not fit."""
    try:
        state = read_checkpoint(path)["state_dict"]
    except CheckpointError as err:
        raise ConfigError(path, "--from", "a file written by tuner train --save", str(err)) from None
    model = build_model(task, config)
    mismatch = first_mismatch(model, state)
    if mismatch is not None:
        key, model_shape, ckpt_shape = mismatch
        raise ConfigError(
            path, "--from", f"weights of the model at width {config.width:g}; key {key}: model {model_shape}", f"checkpoint {ckpt_shape}"
        )
    model.load_state_dict(state)
    return model
