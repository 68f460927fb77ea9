"""`tuner doctor STUDY`: check that MLflow holds exactly one matching run per ended trial."""

from __future__ import annotations

import argparse
import sys

from tuner.cli.common import add_study_target, study_target
from tuner.errors import first_line
from tuner.redact import redact
from tuner.study.storage.existing import load_existing_study


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check that MLflow matches the Optuna study, trial by trial")
    add_study_target(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    name, storage, uri, source = study_target(args)
    study = load_existing_study(storage, name, source)
    from tuner.track.sync import doctor, ended_trials  # mlflow is imported only by the commands that use it

    try:
        gaps = doctor(study, uri)
    except Exception as err:  # noqa: BLE001  # an unreachable or failing store: one line, not a traceback
        first = first_line(err)[:200]
        print(f"tuner: error: MLflow at {redact(uri)} failed ({type(err).__name__}: {first})", file=sys.stderr)
        return 1
    n = len(ended_trials(study))
    if not gaps:
        print(f"ok: study {name!r} and MLflow {redact(uri)} agree ({n} ended trials, one run each)")
        return 0
    print(f"study {name!r} and MLflow {redact(uri)} disagree ({len(gaps)} gap{'s' if len(gaps) != 1 else ''} over {n} ended trials):")
    for gap in gaps:
        print(f"  {gap}")
    print(f"fill MLflow in with: tuner sync {source}")
    return 1
