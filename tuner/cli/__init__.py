"""The command line: the root only registers one module per subcommand."""

from __future__ import annotations

import argparse
import sys
import warnings

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
from tuner.cli.logs import quiet_failed_trials
from tuner.errors import ConfigError
from tuner.signals import exit_code
from tuner.study.storage import storage_errors

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
    warnings.filterwarnings("ignore", category=FutureWarning)
    quiet_failed_trials(verbose=args.verbose)
    storage_errors.quiet_storage_logs(args.verbose)
    try:
        return args.handler(args)
    except ConfigError as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print(f"tuner: {err or 'interrupted'}", file=sys.stderr)
        return exit_code(err)
    except Exception as err:
        failed = storage_errors.failure_line(err)  # a storage lost, a full disk: one line, never a library's traceback
        if failed is None:
            raise
        print(f"tuner: error: {failed[0]}", file=sys.stderr)
        return failed[1]


if __name__ == "__main__":
    sys.exit(main())
