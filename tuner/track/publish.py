"""A night's morning report (tuner/nightly/report.py), copied onto its study's run in MLflow."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import optuna

from tuner.errors import first_line
from tuner.redact import redact
from tuner.study.study_record import night_status, study_environment, study_experiment
from tuner.track.store import TrackingStore


def publish_report(tracking_uri: str, study: optuna.Study, files: list[Path], stream: Any = None) -> None:
    """The report files on the study's parent run, under report/, and the night's status as a tag.

    A store that fails here costs the copy in MLflow only: the report is already on disk.
    """
    try:
        store = TrackingStore.connect(tracking_uri, study, study_experiment(study), study_environment(study), create=False)
        if store.parent_id is not None:
            store.log_report(files, night_status(study) or "unknown")
    except Exception as err:  # noqa: BLE001 - any failure of the store: say so, the report stays on disk
        first = first_line(err)[:200]
        print(
            f"tuner: the report could not be logged to MLflow at {redact(tracking_uri)} ({type(err).__name__}: {first})",
            file=stream or sys.stderr,
        )
