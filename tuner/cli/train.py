"""`tuner train FILE`: train one fully fixed configuration once; no search, nothing stored."""

from __future__ import annotations

import argparse
import json

from tuner.study.experiment import load_experiment
from tuner.errors import ConfigError
from tuner.study.objective import objective_value
from tuner.study.runner import prepare
from tuner.train.loop import train_trial
from tuner.train.trial_config import TrialConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train one fixed configuration once (e.g. the output of tuner best)")
    p.add_argument("experiment", help="experiment YAML whose search space fixes every dimension")
    p.add_argument("--seed", type=int, help="training seed (default: the experiment's)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment).with_overrides(seed=args.seed)
    params = experiment.search_space.fixed_params()
    if params is None:
        loose = next(n for n, s in experiment.search_space.dims.items() if type(s).__name__ != "Fixed")
        raise ConfigError(args.experiment, f"search_space.{loose}", "a fixed value (tuner train runs one configuration)", "a range or choices")
    prepared = prepare(experiment)
    config = TrialConfig.from_params(params)
    result = train_trial(prepared.task, config, experiment.objective, prepared.device, seed=experiment.seed)
    value = objective_value(result, experiment.objective.clock, experiment.objective.cap_s)
    if args.json:
        print(json.dumps({"config": config.as_dict(), "seed": experiment.seed, "value": value, **result.to_attrs()}))
    else:
        print(f"{config.short()} seed {experiment.seed}: {result.outcome.value} ({result.reason})")
        print(f"objective {value:.3f} s ({experiment.objective.clock} clock); train {result.train_s:.3f} s, wall {result.wall_s:.3f} s, setup {result.setup_s:.3f} s, samples {result.samples}")
    return 0 if result.reached else 1
