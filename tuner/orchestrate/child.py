"""A worker process of `tuner run --workers N` (tuner/study/run/workers.py): ``python -m
tuner.orchestrate.child`` reads its ``RunOptions`` as JSON on stdin (its parent's options with its
share of the machine and of the budget) and runs them as `tuner worker` would."""

from __future__ import annotations

import sys

from tuner.orchestrate.exits import guarded
from tuner.orchestrate.options import RunOptions
from tuner.orchestrate.orchestrator import orchestrate


def main() -> int:
    options = RunOptions.from_json(sys.stdin.read())
    return guarded(lambda: orchestrate(options).code)


if __name__ == "__main__":
    sys.exit(main())
