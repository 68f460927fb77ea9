"""`tuner run EXPERIMENT.yaml`: run or resume a study, with a live progress display."""

from __future__ import annotations

import argparse
import sys

from tuner.cli.common import add_study_flags
from tuner.config import load_experiment
from tuner.progress import Progress, top_trials_table
from tuner.study import StudyFailed, best_trial, finished_trials, prepare, run_study


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run or resume a study")
    p.add_argument("experiment", help="experiment YAML file")
    p.add_argument("--n-trials", type=int, dest="n_trials", help="total finished trials wanted in the study")
    p.add_argument("--timeout", type=float, dest="timeout_s", help="seconds this run may take")
    p.add_argument("--seed", type=int, help="seed for the sampler and the trials")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    add_study_flags(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment).with_overrides(n_trials=args.n_trials, timeout_s=args.timeout_s, seed=args.seed, name=args.name, storage=args.storage)
    prepared = prepare(experiment)
    for note in prepared.notes:
        print(f"search space: {note}", file=sys.stderr)
    progress = Progress(quiet=args.quiet)
    print(f"study {experiment.name!r} on {experiment.storage}: task {experiment.task}, target {experiment.objective.target} ({experiment.objective.clock} clock), device {prepared.device}", file=sys.stderr)
    try:
        study = run_study(experiment, progress=progress, prepared=prepared)
    except StudyFailed as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return 1
    print(f"\n{len(finished_trials(study))} finished trials in study {experiment.name!r}. Top trials (seconds to {experiment.objective.target} on the {experiment.objective.clock} clock):")
    print(top_trials_table(study))
    best = best_trial(study)
    if best is None:
        print("no trial reached the target yet")
    else:
        print(f"best: trial {best.number}, {best.value:.3f} s. Export it with: tuner best {args.experiment}" + (f" --study-name {experiment.name}" if args.name else ""))
    return 0
