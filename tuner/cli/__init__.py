"""The command line: the root registers the study's commands and the tools around it, one module per subcommand."""

from __future__ import annotations

import argparse
import sys

from tuner.cli.study_commands import STUDY_COMMANDS
from tuner.cli.tool_commands import TOOL_COMMANDS
from tuner.orchestrate.exits import guarded

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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return guarded(lambda: args.handler(args), verbose=args.verbose)  # one line and an exit code, never a traceback


if __name__ == "__main__":
    sys.exit(main())
