"""`tuner run EXPERIMENT.yaml`: run or resume a study, with a live progress display.

The result is printed as soon as the study ends; MLflow's last writes (the study's summary,
plots and report, a second or two) are drained after it, before the process exits. The run
itself is the orchestrator's (tuner/orchestrate/orchestrator.py), as for every command that runs trials.
"""

from __future__ import annotations

import argparse

from tuner.cli.run_flags import add_run_flags, overrides
from tuner.orchestrate import RunOptions, orchestrate
from tuner.orchestrate.tracking import sync_source


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run or resume a study")
    add_run_flags(p, "run")
    p.add_argument(
        "--workers", type=int, default=1, help="worker processes on the study, CPU threads split between them, or a GPU each (default: 1)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object with the results on stdout (the summary goes to stderr)")
    p.set_defaults(handler=main)


def options_of(args: argparse.Namespace) -> RunOptions:
    """The flags as the orchestrator's options (their defaults are `tuner run`'s); the study's runs
    name the flags that find the study again."""
    given = overrides(args)
    return RunOptions(
        args.experiment,
        overrides=given,
        source=sync_source(args.experiment, given),
        workers=args.workers,
        tracking=args.tracking,
        quiet=args.quiet,
        json=args.json,
        share_devices=args.share_devices,
        started=getattr(args, "started", None),
    )


def main(args: argparse.Namespace) -> int:
    return orchestrate(options_of(args)).code
