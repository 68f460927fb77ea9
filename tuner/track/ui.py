"""The `mlflow ui` command line that `tuner ui` starts, and the address of a study's runs in it."""

from __future__ import annotations

import sys

# The runs page in the UI's model-training mode: MLflow 3 otherwise opens an experiment on
# its GenAI overview (traces, tokens), which says nothing about a study.
RUNS_PAGE = "{base}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"


def ui_command(tracking_uri: str, host: str, port: int) -> list[str]:
    """The `mlflow ui` command line for a tracking store (SQLite artifacts are served from their folder)."""
    return [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", tracking_uri, "--host", host, "--port", str(port)]


def study_runs_url(tracking_uri: str, study_name: str, base: str) -> str | None:
    """The address of the study's runs in the UI at ``base``; None if the store has no such experiment."""
    from mlflow import MlflowClient  # seconds to import: only when an address is asked for

    try:
        found = MlflowClient(tracking_uri=tracking_uri).get_experiment_by_name(study_name)
    except Exception:  # noqa: BLE001 - a store that cannot be read: the UI will say why
        return None
    return RUNS_PAGE.format(base=base, experiment_id=found.experiment_id) if found is not None else None
