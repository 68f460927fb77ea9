"""The compression table (tuner compress) on the study's parent run in MLflow."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from tuner.errors import first_line
from tuner.redact import redact
from tuner.track.store import _artifact_root


def log_compression(
    tracking_uri: str, study_name: str, rows: list[dict[str, Any]], files: list[Path], stream: Any = None, metric: str = "accuracy"
) -> str | None:
    """The results files under compress/ and one metric per row and figure, on the study's
    parent run (the most recent one); a run named "compress" is made when the study has none.
    ``metric``: the held-out metric the rows measured (``compress.original.loss``).
    Returns the run id; a store that fails costs the copy in MLflow only (one line on stderr)."""
    try:
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        client = MlflowClient(tracking_uri=tracking_uri)
        found = client.get_experiment_by_name(study_name)
        experiment_id = (
            found.experiment_id
            if found is not None
            else client.create_experiment(study_name, artifact_location=_artifact_root(tracking_uri))
        )
        parents = client.search_runs(
            [experiment_id], "tags.`tuner.role` = 'parent'", order_by=["attributes.start_time DESC"], max_results=1
        )
        run_id = (
            parents[0].info.run_id
            if parents
            else client.create_run(experiment_id, run_name="compress", tags={"tuner.role": "compress"}).info.run_id
        )
        for path in files:
            client.log_artifact(run_id, str(path), "compress")
        for row in rows:
            slug = "".join(c if c.isalnum() else "_" for c in row["method"]).strip("_")
            for key in (metric, "size_bytes", "parameters", "latency_ms_b1", "latency_ms_b256", "train_s_added"):
                client.log_metric(run_id, f"compress.{slug}.{key}", float(row[key]))
        if not parents:
            client.set_terminated(run_id)
        return run_id
    except Exception as err:  # noqa: BLE001 - any failure of the store: say so, the results are on disk
        first = first_line(err)[:200]
        print(
            f"tuner: the compression table could not be logged to MLflow at {redact(tracking_uri)} ({type(err).__name__}: {first})",
            file=stream or sys.stderr,
        )
        return None
