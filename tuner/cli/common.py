"""Flags shared by several subcommands, and printing helpers."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from tuner.study.experiment.load import Experiment
from tuner.study.run.experiment_file import load_experiment


def add_study_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study-name", dest="name", help="study name (default: the experiment's name)")
    parser.add_argument("--storage", help="Optuna storage URL (default: sqlite:///tuner.db)")


def dump_yaml(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


def add_display_flags(parser: argparse.ArgumentParser) -> None:
    """--quiet and --no-tracking, for the commands that run trials."""
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--no-tracking", dest="tracking", action="store_false", help="do not log to MLflow")


def add_tracking_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tracking-uri", dest="tracking_uri", help="MLflow tracking URI (default: the experiment's, else sqlite:///mlruns/mlflow.db)"
    )


def add_study_target(parser: argparse.ArgumentParser) -> None:
    """A study named by its experiment YAML or by its name, for the commands that read a study."""
    parser.add_argument("study", help="experiment YAML, or a study name (then --storage and --tracking-uri or their defaults)")
    parser.add_argument("--study-name", dest="name", help="with an experiment YAML: the study's name, if not the experiment's")
    parser.add_argument("--storage", help="Optuna storage URL (default: the experiment's, else sqlite:///tuner.db)")
    add_tracking_flag(parser)


def study_target(args: argparse.Namespace) -> tuple[str, str, str, str]:
    """(study name, storage, tracking URI, source) for `add_study_target`; flags beat the YAML."""
    if args.study.endswith((".yaml", ".yml")) or Path(args.study).is_file():
        e = load_experiment(args.study).with_overrides(name=args.name, storage=args.storage, tracking_uri=args.tracking_uri)
        return e.name, e.storage, e.tracking_uri, args.study
    defaults = Experiment(source="", name=args.study)
    return args.study, args.storage or defaults.storage, args.tracking_uri or defaults.tracking_uri, args.study
