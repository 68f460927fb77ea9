"""A night's morning report (tuner/nightly/report.py), copied onto its study's run in MLflow."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import optuna

from tuner.redact import redact
from tuner.study.record import study_environment, study_experiment
from tuner.track.store import TrackingStore


def publish_report(tracking_uri: str, study: optuna.Study, files: list[Path], stream: Any = None) -> None:
    """The report files on the study's parent run, under report/, and the night's status as a tag.

    A store that fails here costs the copy in MLflow only: the report is already on disk.
    """
    try:
        store = TrackingStore.connect(tracking_uri, study, study_experiment(study), study_environment(study), create=False)
        if store.parent_id is not None:
            store.log_report(files, study.user_attrs.get("status", "unknown"))
    except Exception as err:  # noqa: BLE001 - any failure of the store: say so, the report stays on disk
        first = (str(err).strip().splitlines() or [""])[0][:200]
        print(
            f"tuner: the report could not be logged to MLflow at {redact(tracking_uri)} ({type(err).__name__}: {first})",
            file=stream or sys.stderr,
        )
