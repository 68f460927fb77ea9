"""`tuner sync STUDY`: fill MLflow in with what it missed, from the Optuna storage."""

from __future__ import annotations

import argparse
import sys

from tuner.cli.common import add_study_target, study_target
from tuner.errors import first_line
from tuner.redact import redact
from tuner.study.storage.existing import load_existing_study


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sync", help="fill MLflow in from the Optuna storage (after the tracking server was down)")
    add_study_target(p)
    p.add_argument("--no-plots", dest="plots", action="store_false", help="skip redrawing the study's plots")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    name, storage, uri, source = study_target(args)
    study = load_existing_study(storage, name, source)
    from tuner.report.study_run import ReportViews  # as late: the plots' libraries
    from tuner.track.sync import sync  # mlflow is imported only by the commands that use it

    try:
        report = sync(study, uri, ReportViews(), plots=args.plots)
    except Exception as err:  # noqa: BLE001  # an unreachable or failing store: one line, not a traceback
        first = first_line(err)[:200]
        print(f"tuner: error: MLflow at {redact(uri)} failed ({type(err).__name__}: {first})", file=sys.stderr)
        return 1
    counts = f"runs created {report.created}, completed {report.completed}, already complete {report.unchanged}"
    print(f"study {name!r} -> MLflow {redact(uri)}: {counts}")
    return 0
