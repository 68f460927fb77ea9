"""Data pipeline: does the right DataLoader setting shorten time to target, and does a study find it?

On a generated image folder (scripts/make_image_folder.py; 5,000 32x32 PNGs by default) and
the built-in ``image-folder`` task, with the model and its hyperparameters fixed:

1. A study of ``--study-s`` seconds (default 240) over the pipeline dimensions only
   (num_workers, persistent_workers, prefetch_factor, pin_memory, cache): which setting does
   it pick as fastest?
2. The naive pipeline (num_workers 0, no cache) against that setting, alternately, ``--runs``
   times each (default 3), same seed: median time to target on the train clock (which counts
   the waits for data, the workers' start and a cache's filling; see the README for why not
   the robust clock) and on the wall clock, and each one's data-wait share.

Prints the figures and writes benchmarks/results/data_pipeline.json. The machine may be
shared: the JSON records the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuner.api import best_configuration, run, train_once
from tuner.study.run.experiment_file import load_experiment
from tuner.tasks.image_folder_gen import make_image_folder
from tuner.train.trial_config import TrialConfig

RESULTS = REPO / "benchmarks" / "results" / "data_pipeline.json"
# The model and its training, fixed: only the data path varies.
MODEL = {"optimizer": "adam", "lr": 0.01, "batch_size": 128, "width": 0.25, "schedule": "constant", "precision": "fp32"}
NAIVE = {"num_workers": 0, "cache": "none", "pin_memory": False, "persistent_workers": False, "prefetch_factor": 2}
PIPELINE_SPACE = {
    "num_workers": {"choices": [0, 1, 2]},
    "persistent_workers": {"choices": [False, True], "when": {"num_workers": [1, 2]}},
    "prefetch_factor": {"choices": [2, 4], "when": {"num_workers": [1, 2]}},
    "pin_memory": {"choices": [False, True]},
    "cache": {"choices": ["none", "memory", "device"]},
}
PIPELINE_KEYS = tuple(NAIVE)


def experiment_file(work: Path, data: Path, target: float, cap_s: float) -> Path:
    spec = {
        "name": "data-pipeline",
        "task": "image-folder",
        "task_options": {"path": str(data), "size": 32},
        "search_space": {**MODEL, **PIPELINE_SPACE},
        "objective": {"target": target, "eval_every_samples": 2000, "cap_s": cap_s, "clock": "train"},
        "sampler": {"name": "tpe", "n_startup_trials": 5},
        "confirm": {"after_search": False},
        "storage": f"sqlite:///{work / 'study.db'}",
        "seed": 0,
    }
    path = work / "data_pipeline.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def pipeline_of(config: TrialConfig) -> dict:
    return {k: getattr(config, k) for k in PIPELINE_KEYS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="an existing image folder (default: generate one)")
    parser.add_argument("--n", type=int, default=5000, help="images to generate (default 5000)")
    parser.add_argument("--target", type=float, default=0.4)
    parser.add_argument("--cap-s", type=float, default=120.0)
    parser.add_argument("--study-s", type=float, default=240.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="data_pipeline_"))
    data = Path(args.data) if args.data else work / "shapes"
    if not args.data:
        start = time.perf_counter()
        make_image_folder(data, args.n)
        print(f"generated {args.n} images in {time.perf_counter() - start:.1f} s at {data}")
    n_images = sum(1 for _ in data.rglob("*.png"))
    experiment = load_experiment(experiment_file(work, data, args.target, args.cap_s))

    start = time.perf_counter()
    study = run(experiment, tracking=False, timeout_s=args.study_s)
    study_s = time.perf_counter() - start
    best = best_configuration(study)
    if best is None:
        raise SystemExit("the study reached the target in no trial: lower --target or raise --cap-s")
    chosen = pipeline_of(best[0])
    trials = [
        {
            "number": t.number,
            "state": t.state.name,
            "value": t.value,
            **{k: t.params.get(k) for k in PIPELINE_KEYS},
            "data_wait_share": t.user_attrs.get("data_wait_share"),
        }
        for t in study.trials
    ]
    finished = sum(t["state"] in ("COMPLETE", "PRUNED") for t in trials)
    # No trial starts that could not finish by the deadline (tuner/study/storage/deadline.py): with a
    # cap of C seconds, the study stops starting trials C seconds before its budget ends.
    print(f"study: {finished} finished trials in {study_s:.0f} s; chose {chosen} at {best[1]:.2f} s")

    runs: dict[str, list[dict]] = {"naive": [], "chosen": []}
    for i in range(args.runs):  # alternating: a load change on the shared machine hits both alike
        for name, pipeline in (("naive", NAIVE), ("chosen", chosen)):
            result = train_once(experiment, TrialConfig(**{**MODEL, **pipeline}), seed=0)
            runs[name].append(
                {
                    "outcome": result.outcome.value,
                    "train_s_to_target": result.train_s_to_target,
                    "wall_s_to_target": result.wall_s_to_target,
                    "setup_s": result.setup_s,
                    "data_wait_share": result.data_wait_share,
                    "samples_to_target": result.samples_to_target,
                }
            )
            print(
                f"run {i} {name:<6} {result.outcome.value:<8} train {result.train_s_to_target or float('nan'):6.2f} s  "
                f"wall {result.wall_s_to_target or float('nan'):6.2f} s  data wait {result.data_wait_share or 0:.2f}",
                flush=True,
            )

    def median(name: str, key: str) -> float | None:
        values = [r[key] for r in runs[name] if r[key] is not None]
        return statistics.median(values) if values else None

    summary = {name: {key: median(name, key) for key in ("train_s_to_target", "wall_s_to_target", "data_wait_share")} for name in runs}
    naive_s, chosen_s = summary["naive"]["train_s_to_target"], summary["chosen"]["train_s_to_target"]
    speedup = naive_s / chosen_s if naive_s and chosen_s else None
    out = {
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "device": "cpu",
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
            "note": "shared machine: other processes ran beside this benchmark",
        },
        "data": {"images": n_images, "size": 32, "classes": 10, "train_images": len(list((data / "train").rglob("*.png")))},
        "model": MODEL,
        "target": args.target,
        "clock": "train",
        "runs_each": args.runs,
        "study": {"budget_s": args.study_s, "elapsed_s": round(study_s, 1), "trials": trials, "chosen": chosen, "chosen_value_s": best[1]},
        "naive": NAIVE,
        "chosen": chosen,
        "medians": summary,
        "speedup_train_clock": speedup,
        "runs": runs,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({"medians": summary, "speedup_train_clock": speedup, "chosen": chosen}, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
