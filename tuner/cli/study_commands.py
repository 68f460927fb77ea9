"""The commands that run a study and read its results: one module each."""

from __future__ import annotations

from tuner.cli import best, confirm, nightly, report, run, simulate, worker

STUDY_COMMANDS = (run, worker, confirm, best, report, nightly, simulate)
