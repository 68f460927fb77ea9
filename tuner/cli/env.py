"""`tuner env`: the environment fingerprint recorded with every study."""

from __future__ import annotations

import argparse

from tuner.environment import fingerprint


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("env", help="print the environment fingerprint")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    for key, value in fingerprint().items():
        print(f"{key:<14} {value}")
    return 0
