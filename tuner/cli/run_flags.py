"""The flags of the commands that run a study's trials, `tuner run` and `tuner worker`, defined once."""

from __future__ import annotations

import argparse

from tuner.cli.common import add_display_flags, add_study_flags, add_tracking_flag
from tuner.orchestrate.options import Overrides


def add_run_flags(parser: argparse.ArgumentParser, who: str) -> None:
    """The experiment, its budget and seed, the display, the stores, and sharing GPUs; ``who``
    ("run" or "worker") says whose time --timeout bounds and what --share-devices shares."""
    over = ", over all workers" if who == "worker" else ""
    parser.add_argument("experiment", help="experiment YAML file")
    parser.add_argument(
        "--n-trials",
        type=int,
        dest="n_trials",
        help=f"searched configurations wanted in the study{over}; race, confirmation and baseline runs come on top",
    )
    parser.add_argument("--timeout", type=float, dest="timeout_s", help=f"seconds this {who} may take")
    parser.add_argument("--seed", type=int, help="seed for the sampler and the trials (every worker of a study should use the same)")
    parser.add_argument(
        "--share-devices", action="store_true", dest="share_devices", help="on GPUs: allow two trials on one GPU when none is free"
    )
    add_display_flags(parser)
    add_study_flags(parser)
    add_tracking_flag(parser)


def overrides(args: argparse.Namespace) -> Overrides:
    """The flags of ``add_run_flags`` that beat the experiment file."""
    return Overrides(
        name=args.name,
        storage=args.storage,
        tracking_uri=args.tracking_uri,
        seed=args.seed,
        n_trials=args.n_trials,
        timeout_s=args.timeout_s,
    )
