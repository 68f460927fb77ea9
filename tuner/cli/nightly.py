"""`tuner nightly EXPERIMENT.yaml --budget 2h`: tonight's sweep, then the morning report.

Exit codes: 0 all is well; 3 the canary or the best time regressed beyond the noise of
history; 75 another nightly run of this experiment holds the lock (nothing was done);
1 every trial failed the same way; 2 bad input; 130/143 stopped by SIGINT/SIGTERM (the
report is still written).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import re
import sys
from pathlib import Path

from tuner.cli.common import add_display_flags, add_tracking_flag
from tuner.errors import ConfigError
from tuner.nightly.history import night_study_name
from tuner.nightly.lock import Locked, exclusive
from tuner.nightly.night import EXIT_LOCKED, EXIT_REGRESSED, NightOptions, lock_path, run_night
from tuner.nightly.search import StudyRunner
from tuner.orchestrate import Overrides, Run, RunOptions, orchestrate
from tuner.orchestrate.tracking import sync_source
from tuner.redact import redact

EXIT_CODES = {"ok": 0, "regressed": EXIT_REGRESSED, "failed": 1}
UNITS = {"h": 3600, "m": 60, "s": 1}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("nightly", help="run tonight's sweep within a time budget and write the morning report")
    p.add_argument("experiment", help="experiment YAML file")
    p.add_argument("--budget", required=True, help="wall-clock budget for the whole night: 2h, 90m, 1h30m, 600s or seconds")
    p.add_argument("--reports", default="reports", help="folder for reports/<experiment>/<date>/ and the lock (default: reports)")
    p.add_argument("--night", help="the night's date, YYYY-MM-DD (default: today); a rerun on the same date resumes that night")
    p.add_argument("--canary-seeds", type=int, default=3, dest="canary_seeds", help="seeds the canary runs on (default: 3)")
    p.add_argument(
        "--warm-start", type=int, default=3, dest="warm_start", help="best configurations of earlier nights to run first (default: 3)"
    )
    p.add_argument("--storage", help="Optuna storage URL (default: the experiment's)")
    add_display_flags(p)
    add_tracking_flag(p)
    p.set_defaults(handler=main)


def parse_budget(text: str) -> float:
    """'2h', '90m', '1h30m', '45s' or plain seconds, as seconds > 0."""
    text = text.strip().lower()
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", text)
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        seconds = float(text)
    elif text and parts:
        seconds = sum(float(v) * u for v, u in zip(parts.groups(), UNITS.values()) if v)
    else:
        seconds = 0.0
    if seconds <= 0:
        raise ConfigError("--budget", "(flag)", "a duration > 0 such as 2h, 90m, 1h30m or 600s", text)
    return seconds


def parse_night(text: str | None) -> datetime.date:
    if text is None:
        return datetime.date.today()
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ConfigError("--night", "(flag)", "a date YYYY-MM-DD", text) from None


def main(args: argparse.Namespace) -> int:
    night = NightOptions(parse_night(args.night), parse_budget(args.budget), Path(args.reports), args.canary_seeds, args.warm_start)
    if night.canary_seeds < 0 or night.warm_start < 0:
        raise ConfigError("--canary-seeds/--warm-start", "(flag)", "an integer >= 0", min(night.canary_seeds, night.warm_start))
    given = Overrides(storage=args.storage, tracking_uri=args.tracking_uri)
    options = RunOptions.for_night(args.experiment, overrides=given, tracking=args.tracking, quiet=args.quiet)
    experiment = options.load()
    if experiment.objective.cap_auto:  # a night's canary and deadline are sized by the cap before any baseline runs
        raise ConfigError(args.experiment, "objective.cap_s", "a number of seconds for tuner nightly (auto is for tuner run)", "auto")
    tonight_study = dataclasses.replace(given, name=night_study_name(experiment.name, night.night))
    options = dataclasses.replace(options, source=sync_source(args.experiment, tonight_study))  # what `tuner sync` needs to find it
    return orchestrate(options, experiment, body=functools.partial(tonight, night)).code


def tonight(night: NightOptions, run: Run, run_study: StudyRunner) -> tuple[None, int]:
    """The night's own order, once the stores are checked and the study prepared: the lock, then
    the canary and warm start (tuner/nightly/night.py), tonight's study run by ``run_study`` (the
    orchestrator's), then the report."""
    experiment = run.experiment
    try:
        with exclusive(lock_path(night.reports, experiment.name)):
            print(
                f"night {night.night} of {experiment.name!r}: study {night_study_name(experiment.name, night.night)!r} "
                f"on {redact(experiment.storage)}, budget {night.budget_s:g} s",
                file=sys.stderr,
            )
            publish = None
            if run.options.tracking:
                from tuner.track.publish import publish_report  # importing mlflow takes seconds

                publish = functools.partial(publish_report, experiment.tracking_uri)
            report, files = run_night(experiment, night, run.prepared, run_study, publish)
    except Locked as err:
        print(
            f"tuner: another `tuner nightly` of {experiment.name!r} is running ({err.holder or 'holder unknown'}); "
            f"this run did nothing and exits {EXIT_LOCKED}. Lock: {err.path}",
            file=sys.stderr,
        )
        return None, EXIT_LOCKED
    print(f"{report['status'].upper()}: {report['summary']}")
    print(f"report: {files[1]} (and {files[0].name})")
    return None, EXIT_CODES[report["status"]]
