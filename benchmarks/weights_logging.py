"""What keeping a trial's weights on its MLflow run costs (tuner/track/weights.py).

Two figures per model, each a median over ``--repeats`` (every repeat is kept):
- ``copy_ms``: what the study's thread pays per kept trial, between two trials: the trained
  weights copied to the CPU (``checkpoint_of``);
- ``write_ms``: what the background writer pays: the file written and uploaded as ``model.pt``
  to a child run of an embedded SQLite MLflow store (``TrackingStore.log_weights``).
Only ``copy_ms`` is time a study waits for; ``write_ms`` runs beside the next trial.
The machine may be shared with other jobs: the load average is recorded.
Results go to benchmarks/results/weights_logging.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from mlflow import MlflowClient

from tuner.environment import fingerprint
from tuner.tasks.hyperparameters import build_model
from tuner.tasks.registry import build_task
from tuner.track.store import TrackingStore
from tuner.track.weights import checkpoint_of
from tuner.train.result import Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

RESULTS = Path(__file__).resolve().parent / "results" / "weights_logging.json"


def measure(task_name: str, width: float, repeats: int, folder: Path) -> dict:
    task = build_task(task_name)
    config = TrialConfig(width=width)
    model = build_model(task, config)
    result = TrialResult(Outcome.REACHED, "", 0.9)
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    client = MlflowClient(f"sqlite:///{folder}/mlflow.db")
    experiment_id = client.create_experiment(f"{task_name}-{width}", artifact_location=str(folder / "artifacts"))
    store = TrackingStore(client, experiment_id, None, {})
    copy_ms, write_ms, size = [], [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        checkpoint = checkpoint_of(model, config, {"task": task_name, "task_options": {}}, result)
        copy_ms.append((time.perf_counter() - start) * 1000)
        run_id = client.create_run(experiment_id).info.run_id
        start = time.perf_counter()
        store.log_weights(run_id, checkpoint)
        write_ms.append((time.perf_counter() - start) * 1000)
        size = os.path.getsize(client.download_artifacts(run_id, "model.pt", str(folder / run_id)))
    return {
        "task": task_name,
        "width": width,
        "parameters": sum(p.numel() for p in model.parameters()),
        "file_bytes": size,
        "copy_ms_median": statistics.median(copy_ms),
        "write_ms_median": statistics.median(write_ms),
        "copy_ms": copy_ms,
        "write_ms": write_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task_name, width in (("mnist1d-cnn", 1.0), ("mnist1d-cnn", 2.0), ("mnist1d-mlp", 1.0)):
            rows.append(measure(task_name, width, args.repeats, Path(tmp) / f"{task_name}-{width}"))
    load = os.getloadavg()
    for r in rows:
        print(
            f"{r['task']} width {r['width']}: {r['parameters']} parameters, model.pt {r['file_bytes']} bytes; "
            f"study thread {r['copy_ms_median']:.2f} ms (copy), writer {r['write_ms_median']:.1f} ms (file + upload), "
            f"median of {args.repeats}"
        )
    print(f"machine shared with other jobs: load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    RESULTS.write_text(json.dumps({"repeats": args.repeats, "load_average": load, "environment": fingerprint(), "rows": rows}, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
