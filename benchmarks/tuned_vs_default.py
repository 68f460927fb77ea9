"""Tuned against default: does the study's best configuration reach the target faster?

1. Runs `tuner run EXPERIMENT --timeout T` into a fresh storage (skip with --storage of an
   existing study).
2. Exports its best with `tuner best`.
3. Trains the best and the paper's default configuration alternately with `tuner train`,
   one seed at a time, and prints both medians of time to target (on the experiment's
   clock) and their ratio. A miss counts at its censored value, and misses are reported.
Results go to benchmarks/results/tuned_vs_default.json (--output names another file).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "tuned_vs_default.json"


def tuner(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, capture_output=True, text=True, check=False)


def train(config_file: Path, seed: int, cwd: Path) -> dict:
    proc = tuner("train", str(config_file), "--seed", str(seed), "--json", cwd=cwd)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"tuner train failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(
    experiment: str, default: str, timeout: float, storage: str | None, seeds: int, results: Path, best: Path | None = None
) -> dict:
    """Tune ``experiment`` for ``timeout`` seconds (or read ``storage``), then train its best and ``default``
    alternately on ``seeds`` seeds; write and return the figures. ``best``: an exported file to train
    instead of tuning (a winner of an earlier run, on this day's machine)."""
    work = Path(tempfile.mkdtemp(prefix="tuned_vs_default_"))
    storage = storage or f"sqlite:///{work / 'study.db'}"
    tuning_s = None
    if best is None and timeout:
        start = time.perf_counter()
        proc = tuner("run", experiment, "--timeout", str(timeout), "--storage", storage, "--quiet", cwd=work)
        tuning_s = time.perf_counter() - start
        print(proc.stdout)
        if proc.returncode != 0:
            raise SystemExit(f"tuner run failed:\n{proc.stderr}")
    best_file = best or work / "best.yaml"
    if best is None:
        proc = tuner("best", experiment, "--storage", storage, "-o", str(best_file), cwd=work)
        if proc.returncode != 0:
            raise SystemExit(f"tuner best failed:\n{proc.stderr}")
        print(proc.stdout)

    tuned, reference = [], []
    for seed in range(seeds):  # alternate so machine noise hits both alike
        tuned.append(train(best_file, seed, work))
        reference.append(train(Path(default), seed, work))
        print(
            f"seed {seed}: tuned {tuned[-1]['value']:.3f} ({tuned[-1]['outcome']}), "
            f"default {reference[-1]['value']:.3f} ({reference[-1]['outcome']})"
        )
    tuned_median = statistics.median(r["value"] for r in tuned)
    default_median = statistics.median(r["value"] for r in reference)
    ratio = default_median / tuned_median
    misses = {"tuned": sum(r["outcome"] != "reached" for r in tuned), "default": sum(r["outcome"] != "reached" for r in reference)}
    print(
        f"median time to target over {seeds} seeds: tuned {tuned_median:.3f} s, default {default_median:.3f} s; "
        f"default/tuned = {ratio:.2f}x; misses {misses}"
    )

    sys.path.insert(0, str(REPO))
    from tuner.environment import fingerprint

    env = fingerprint()
    figures = {
        "experiment": Path(experiment).name,
        "default": Path(default).name,
        "tuning_budget_s": (timeout or None) if best is None else None,
        "best_file": str(best) if best is not None else None,
        "tuning_wall_s": tuning_s,
        "seeds": seeds,
        "tuned_config": tuned[0]["config"],
        "tuned_s": [r["value"] for r in tuned],
        "default_s": [r["value"] for r in reference],
        "tuned_median_s": tuned_median,
        "default_median_s": default_median,
        "speedup": ratio,
        "misses": misses,
        "machine": {k: env[k] for k in ("cpu", "cores", "gpu", "torch", "python")},
    }
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {results}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "mnist1d_cnn.yaml"))
    parser.add_argument("--default", default=str(REPO / "experiments" / "mnist1d_cnn_paper_default.yaml"))
    parser.add_argument("--timeout", type=float, default=240.0, help="tuning budget in seconds")
    parser.add_argument("--storage", help="use this existing study storage instead of tuning")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS, help="results file (default benchmarks/results/tuned_vs_default.json)")
    args = parser.parse_args()
    compare(args.experiment, args.default, 0.0 if args.storage else args.timeout, args.storage, args.seeds, args.output)


if __name__ == "__main__":
    main()
