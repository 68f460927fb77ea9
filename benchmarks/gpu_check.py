"""GPU check, for a machine with a GPU: a short study on mnist1d-cnn, 2 workers on one GPU.

The default search space (fp32, bf16 and fp16 among its choices) on MNIST-1D's CNN,
`tuner run --workers 2 --share-devices`, so both workers train on the one GPU at once.
Prints, per precision, the trials, how many reached the target, the median time to
target and throughput, and the peak memory; then which GPU each trial used and the
study's wall time. With 2 or more GPUs it also runs one data-parallel trial (nccl).
Results go to benchmarks/results/gpu_check.json (and to $OUT when set). About 5 minutes.

    bash scripts/setup.sh && .venv/bin/python benchmarks/gpu_check.py --trials 16 --timeout 240
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import torch
from optuna.trial import TrialState

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "gpu_check.json"
EXPERIMENT = """
name: gpu-check
task: mnist1d-cnn
search_space: {space}
objective: {{target: 0.90, eval_every_samples: 2000, cap_s: 6.0, clock: robust}}
sampler: {{name: tpe, n_startup_trials: 6}}
confirm: {{after_search: false}}
storage: sqlite:///{folder}/study.db
tracking_uri: sqlite:///{folder}/mlruns/mlflow.db
"""


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def by_precision(study: optuna.Study) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)):
        config = t.user_attrs.get("config", {})
        row = out.setdefault(config.get("precision", "?"), {"trials": 0, "reached": 0, "outcomes": {}, "_s": [], "_tput": [], "_mem": []})
        row["trials"] += 1
        outcome = t.user_attrs.get("outcome", "?")
        row["outcomes"][outcome] = row["outcomes"].get(outcome, 0) + 1
        if outcome == "reached":
            row["reached"] += 1
            row["_s"].append(t.value)
        if t.user_attrs.get("throughput"):
            row["_tput"].append(t.user_attrs["throughput"])
        if t.user_attrs.get("peak_memory_mb"):
            row["_mem"].append(t.user_attrs["peak_memory_mb"])
    for row in out.values():
        row["median_s_to_target"] = median(row.pop("_s"))
        row["median_samples_per_s"] = median(row.pop("_tput"))
        row["max_peak_memory_mb"] = round(max(row.pop("_mem") or [0.0]), 1)
    return out


def data_parallel_trial() -> dict:
    """One trial on 2 GPUs (nccl), when the machine has them."""
    from tuner.study.experiment.load import Objective
    from tuner.tasks.registry import build_task
    from tuner.train.trial import train_trial
    from tuner.train.trial_config import TrialConfig

    task = build_task("mnist1d-cnn")
    objective = Objective(target=0.9, eval_every_samples=2000, cap_s=20.0)
    out = {}
    for devices in (1, 2):
        r = train_trial(task, TrialConfig(devices=devices, batch_size=256, lr=1e-2), objective.stop_rule(), torch.device("cuda", 0), seed=0)
        out[str(devices)] = {
            "outcome": r.outcome.value,
            "train_s": round(r.train_s, 3),
            "setup_s": round(r.setup_s, 2),
            "samples": r.samples,
            "rank_samples": r.rank_samples,
            "throughput": r.throughput,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16, help="finished trials in the study")
    parser.add_argument("--timeout", type=float, default=240, help="seconds the study may take")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_check: no CUDA device here")
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    print(f"GPUs: {gpus}; torch {torch.__version__}, CUDA {torch.version.cuda}, bf16 supported: {torch.cuda.is_bf16_supported()}")
    folder = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    space = json.dumps({"file": str(REPO / "search_spaces" / "default.yaml")})
    (folder / "gpu.yaml").write_text(EXPERIMENT.format(space=space, folder=folder))
    start = time.perf_counter()
    cmd = [
        sys.executable,
        "-m",
        "tuner",
        "run",
        str(folder / "gpu.yaml"),
        "--workers",
        "2",
        "--share-devices",
        "--n-trials",
        str(args.trials),
        "--timeout",
        str(args.timeout),
    ]
    code = subprocess.run(cmd, cwd=folder, check=False).returncode  # the figures are read either way
    wall = time.perf_counter() - start
    study = optuna.load_study(study_name="gpu-check", storage=f"sqlite:///{folder}/study.db")
    trials = study.get_trials(deepcopy=False)
    report = {
        "gpus": gpus,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "exit_code": code,
        "study_wall_s": round(wall, 1),
        "finished": sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials),
        "by_precision": by_precision(study),
        "overlap_s": overlap(trials),
    }
    if len(gpus) >= 2:
        report["data_parallel"] = data_parallel_trial()
    print(json.dumps(report, indent=2))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    if os.environ.get("OUT"):
        shutil.copy(RESULTS, Path(os.environ["OUT"]) / RESULTS.name)
    print(f"wrote {RESULTS}")


def overlap(trials: list) -> float:
    """Seconds during which two trials ran at once: both workers really shared the GPU."""
    spans = sorted((t.datetime_start, t.datetime_complete) for t in trials if t.datetime_start and t.datetime_complete)
    total = 0.0
    for (_, e1), (s2, e2) in itertools.pairwise(spans):
        total += max(0.0, (min(e1, e2) - s2).total_seconds())
    return round(total, 1)


if __name__ == "__main__":
    main()
