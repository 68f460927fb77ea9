"""`tuner train FILE`: train one fully fixed configuration once; no search, nothing stored."""

from __future__ import annotations

import argparse
import json

from tuner.errors import ConfigError
from tuner.study.run.auto_cap import provisional_cap, with_cap
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.scoring.censoring import objective_value
from tuner.train.checkpoint import checkpoint_meta, save_checkpoint
from tuner.train.result import TrialResult
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train one fixed configuration once (e.g. the output of tuner best)")
    p.add_argument("experiment", help="experiment YAML whose search space fixes every dimension")
    p.add_argument("--seed", type=int, help="training seed (default: the experiment's)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument(
        "--save",
        metavar="PATH",
        help="write the trained weights and their configuration here (at the first crossing of the target, where the trial stops)",
    )
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = resolve_clock(load_experiment(args.experiment).with_overrides(seed=args.seed))  # clock: auto, for this machine
    if experiment.objective.cap_auto:  # one run measures no baseline to take the cap from: the fallback bounds it
        experiment = with_cap(experiment, provisional_cap(None))
    params = experiment.search_space.fixed_params()
    if params is None:
        loose = next(n for n, s in experiment.search_space.dims.items() if type(s).__name__ != "Fixed")
        raise ConfigError(
            args.experiment, f"search_space.{loose}", "a fixed value (tuner train runs one configuration)", "a range or choices"
        )
    prepared = prepare(experiment)
    config = TrialConfig.from_params(params)
    kept: dict = {}
    keep = (lambda model: kept.update(model.state_dict())) if args.save else None  # called after the clocks stop
    result = train_trial(prepared.task, config, experiment.objective.stop_rule(), prepared.device, seed=experiment.seed, keep=keep)
    if args.save:
        save_trained(args.save, kept, experiment, config, result, own_loop=prepared.task.train_fn is not None)
    value = objective_value(result, experiment.objective)
    if args.json:
        print(json.dumps({"config": config.as_dict(), "seed": experiment.seed, "value": value, **result.to_attrs()}))
    else:
        print(f"{config.short()} seed {experiment.seed}: {result.outcome.value} ({result.reason})")
        print(
            f"objective {value:.3f} s ({experiment.objective.clock} clock); "
            f"train {result.train_s:.3f} s, wall {result.wall_s:.3f} s, setup {result.setup_s:.3f} s, samples {result.samples}"
        )
    return 0 if result.reached else 1


def save_trained(path: str, state: dict, experiment, config: TrialConfig, result: TrialResult, own_loop: bool = False) -> None:
    """Write the weights with what they are (tuner/train/checkpoint.py); a trial that failed
    before its first evaluation has no weights worth keeping: say so, write nothing."""
    if not state:
        why = (
            "the training function named no model with session.keep(model)"
            if own_loop and result.outcome.value != "failed"
            else "the trial ended without a trained model"
        )
        print(f"tuner: nothing saved to {path}: {why} ({result.outcome.value})")
        return
    save_checkpoint(path, state, **checkpoint_meta(config, experiment.task, experiment.task_options, result))
    print(
        f"saved {path} (held-out {result.final_metric:.4f} after {result.samples} samples, "
        f"{'reached' if result.reached else 'not reached'})"
    )
