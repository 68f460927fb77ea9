"""The command line: the root registers the study's commands and the tools around it, one module per subcommand."""

from __future__ import annotations

import argparse
import sys
import time
from typing import NoReturn

from tuner.cli.study_commands import STUDY_COMMANDS
from tuner.cli.tool_commands import TOOL_COMMANDS
from tuner.orchestrate.exits import guarded
from tuner.study.storage.owner import process_age_s

COMMANDS = (*STUDY_COMMANDS, *TOOL_COMMANDS)


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


def main(argv: list[str] | None = None, started: float | None = None) -> int:
    """Run the command ``argv``; ``started``: when it started (time.monotonic()), if before this call (a process's start)."""
    args = build_parser().parse_args(argv)
    args.started = time.monotonic() if started is None else started  # what `tuner run --timeout` counts from
    return guarded(lambda: args.handler(args), verbose=args.verbose)  # one line and an exit code, never a traceback


def entry() -> NoReturn:
    """The ``tuner`` command (and ``python -m tuner``): ``main``, then the interpreter's own exit.

    Its teardown of torch, MLflow and SQLAlchemy takes 2-6 s on a loaded 2-core machine and
    comes after a run's ``--timeout``; ending the process with ``os._exit`` instead aborted it
    (exit 134, "terminate called without an active exception") while a tracking write was
    still in flight."""
    try:
        code = main(started=time.monotonic() - process_age_s())  # the interpreter's start and imports count too
    except SystemExit as done:  # argparse's usage errors and --help
        if done.code is not None and not isinstance(done.code, int):
            raise  # a message to print: Python's own exit does that
        code = done.code or 0
    sys.exit(code)


if __name__ == "__main__":
    entry()
