"""The command line: the root only registers one module per subcommand."""

from __future__ import annotations

import argparse
import sys

from tuner.cli import (
    best,
    compress,
    confirm,
    doctor,
    env,
    init,
    nightly,
    report,
    run,
    simulate,
    storage_proxy,
    sync,
    train,
    ui,
    validate,
    worker,
)
from tuner.orchestrate.exits import guarded

COMMANDS = (init, run, worker, storage_proxy, simulate, validate, best, confirm, nightly, train, env, ui, sync, doctor, report, compress)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuner", description="Find the training configuration that reaches a target accuracy in the least time."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    for command_parser in sub.choices.values():  # after the command, where people type it
        command_parser.add_argument("-v", "--verbose", action="store_true", help="show the traceback of the first failed trial")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return guarded(lambda: args.handler(args), verbose=args.verbose)  # one line and an exit code, never a traceback


if __name__ == "__main__":
    sys.exit(main())
