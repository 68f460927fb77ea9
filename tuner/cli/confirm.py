"""`tuner confirm EXPERIMENT.yaml`: re-run a study's top configurations on fresh seeds.

The runs are trials of the same study (tuner/study/reruns/confirmation.py): an interrupted confirmation
resumes with the same command, and each run is tracked like any other trial.
"""

from __future__ import annotations

import argparse

from tuner.cli.common import add_display_flags, add_study_flags, add_tracking_flag
from tuner.orchestrate import Overrides, RunOptions, orchestrate


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("confirm", help="re-run the top configurations of a study on fresh seeds; the winner is the best median")
    p.add_argument("experiment", help="experiment YAML file of the study")
    p.add_argument("--top-k", type=int, dest="top_k", help="distinct configurations to confirm (default: the experiment's confirm.top_k)")
    p.add_argument("--seeds", type=int, help="seeds per configuration (default: the experiment's confirm.seeds)")
    p.add_argument("--timeout", type=float, dest="timeout_s", help="seconds this run may take; runs left over wait for the next call")
    add_display_flags(p)
    add_study_flags(p)
    add_tracking_flag(p)
    p.set_defaults(handler=main)


def options_of(args: argparse.Namespace) -> RunOptions:
    """The flags as the orchestrator's options: no search, the top configurations confirmed; the study must exist."""
    return RunOptions.for_confirm(
        args.experiment,
        overrides=Overrides(name=args.name, storage=args.storage, tracking_uri=args.tracking_uri, timeout_s=args.timeout_s),
        top_k=args.top_k,
        seeds=args.seeds,
        tracking=args.tracking,
        quiet=args.quiet,
    )


def main(args: argparse.Namespace) -> int:
    return orchestrate(options_of(args)).code
