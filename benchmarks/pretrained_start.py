"""Time to target from scratch against from a pretrained start, on the default CNN task.

1. `tuner train --save` trains the default CNN (the tuned configuration of
   benchmarks/results/tuned_vs_default.json, or the paper's default without it) on a related
   task: MNIST-1D drawn with another seed (task_options: {seed: 7}; the default task uses 42),
   the same classes and templates with other shifts, scalings and noise.
2. For each seed, trains the same configuration on the default task from scratch and from
   that checkpoint (init_from), alternately, with `tuner train --json`; a miss counts at its
   censored value.
Prints both medians of time to target (on the experiment's clock) and writes
benchmarks/results/pretrained_start.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "pretrained_start.json"
PAPER_DEFAULT = {"optimizer": "adam", "lr": 0.01, "batch_size": 100, "precision": "fp32", "width": 1.0, "schedule": "constant"}


def tuner(*args: str, cwd: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"tuner {args[0]} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1]) if "--json" in args else {"stdout": proc.stdout}


def best_config() -> dict:
    tuned = REPO / "benchmarks" / "results" / "tuned_vs_default.json"
    if tuned.exists():
        return dict(json.loads(tuned.read_text())["tuned_config"])
    return dict(PAPER_DEFAULT)


def experiment(path: Path, space: dict, task_options: dict | None = None, init_from: str | None = None) -> Path:
    raw = {
        "name": path.stem,
        "task": "mnist1d-cnn",
        "task_options": task_options or {},
        "search_space": space,
        "objective": {"target": 0.9, "eval_every_samples": 2000, "cap_s": 6.0, "clock": "robust"},
    }
    if init_from:
        raw["init_from"] = init_from
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--related-seed", type=int, default=7, help="data seed of the related task (the default task's is 42)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from tuner.environment import fingerprint

    space = best_config()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        related = experiment(cwd / "related.yaml", space, {"seed": args.related_seed})
        saved = tuner("train", str(related), "--save", "related.pt", "--json", cwd=cwd)
        scratch_file = experiment(cwd / "scratch.yaml", space)
        start_file = experiment(cwd / "pretrained.yaml", space, init_from=str(cwd / "related.pt"))
        scratch, start = [], []
        for seed in range(args.seeds):  # alternate so machine noise hits both alike
            scratch.append(tuner("train", str(scratch_file), "--seed", str(seed), "--json", cwd=cwd))
            start.append(tuner("train", str(start_file), "--seed", str(seed), "--json", cwd=cwd))
    env = fingerprint()
    out = {
        "config": space,
        "related_task": {
            "task": "mnist1d-cnn",
            "task_options": {"seed": args.related_seed},
            "value_s": saved["value"],
            "samples": saved["samples"],
            "outcome": saved["outcome"],
        },
        "seeds": args.seeds,
        "scratch_s": [r["value"] for r in scratch],
        "pretrained_s": [r["value"] for r in start],
        "scratch_samples": [r["samples"] for r in scratch],
        "pretrained_samples": [r["samples"] for r in start],
        "misses": {"scratch": sum(r["outcome"] != "reached" for r in scratch), "pretrained": sum(r["outcome"] != "reached" for r in start)},
        "machine": {k: env[k] for k in ("cpu", "cores", "gpu", "torch", "python")},
        "note": (
            "a shared machine (other processes running); eval every 2000 samples, "
            "so a start that crosses at the first evaluation is limited by that cadence"
        ),
    }
    out["scratch_median_s"] = statistics.median(out["scratch_s"])
    out["pretrained_median_s"] = statistics.median(out["pretrained_s"])
    out["speedup"] = out["scratch_median_s"] / out["pretrained_median_s"] if out["pretrained_median_s"] else None
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"related task (seed {args.related_seed}): {saved['outcome']} in {saved['value']:.3f} s, {saved['samples']} samples")
    print(
        f"from scratch:   median {out['scratch_median_s']:.3f} s over {args.seeds} seeds {[f'{v:.3f}' for v in out['scratch_s']]} "
        f"samples {out['scratch_samples']}"
    )
    print(
        f"from checkpoint: median {out['pretrained_median_s']:.3f} s over {args.seeds} seeds {[f'{v:.3f}' for v in out['pretrained_s']]} "
        f"samples {out['pretrained_samples']}"
    )
    print(f"speedup {out['speedup']:.2f}x; misses {out['misses']}; wrote {RESULTS}")


if __name__ == "__main__":
    main()
