"""Tuned against default: does the study's best configuration reach the target faster?

1. Runs `tuner run EXPERIMENT --timeout T` into a fresh storage (skip with --storage of an
   existing study).
2. Exports its best with `tuner best`.
3. Trains the best and the paper's default configuration alternately with `tuner train`,
   one seed at a time, and prints both medians of time to target (on the experiment's
   clock) and their ratio. A miss counts at its censored value, and misses are reported.
Results go to benchmarks/results/tuned_vs_default.json.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "mnist1d_cnn.yaml"))
    parser.add_argument("--default", default=str(REPO / "experiments" / "mnist1d_cnn_paper_default.yaml"))
    parser.add_argument("--timeout", type=float, default=240.0, help="tuning budget in seconds")
    parser.add_argument("--storage", help="use this existing study storage instead of tuning")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tuned_vs_default_"))
    storage = args.storage or f"sqlite:///{work / 'study.db'}"
    tuning_s = None
    if not args.storage:
        start = time.perf_counter()
        proc = tuner("run", args.experiment, "--timeout", str(args.timeout), "--storage", storage, "--quiet", cwd=work)
        tuning_s = time.perf_counter() - start
        print(proc.stdout)
        if proc.returncode != 0:
            raise SystemExit(f"tuner run failed:\n{proc.stderr}")
    best_file = work / "best.yaml"
    proc = tuner("best", args.experiment, "--storage", storage, "-o", str(best_file), cwd=work)
    if proc.returncode != 0:
        raise SystemExit(f"tuner best failed:\n{proc.stderr}")
    print(proc.stdout)

    tuned, default = [], []
    for seed in range(args.seeds):  # alternate so machine noise hits both alike
        tuned.append(train(best_file, seed, work))
        default.append(train(Path(args.default), seed, work))
        print(
            f"seed {seed}: tuned {tuned[-1]['value']:.3f} s ({tuned[-1]['outcome']}), "
            f"default {default[-1]['value']:.3f} s ({default[-1]['outcome']})"
        )
    tuned_median = statistics.median(r["value"] for r in tuned)
    default_median = statistics.median(r["value"] for r in default)
    ratio = default_median / tuned_median
    misses = {"tuned": sum(r["outcome"] != "reached" for r in tuned), "default": sum(r["outcome"] != "reached" for r in default)}
    print(
        f"median time to target over {args.seeds} seeds: tuned {tuned_median:.3f} s, default {default_median:.3f} s; "
        f"default/tuned = {ratio:.2f}x; misses {misses}"
    )

    sys.path.insert(0, str(REPO))
    from tuner.environment import fingerprint

    env = fingerprint()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "experiment": Path(args.experiment).name,
                "tuning_budget_s": args.timeout if not args.storage else None,
                "tuning_wall_s": tuning_s,
                "seeds": args.seeds,
                "tuned_config": tuned[0]["config"],
                "tuned_s": [r["value"] for r in tuned],
                "default_s": [r["value"] for r in default],
                "tuned_median_s": tuned_median,
                "default_median_s": default_median,
                "speedup": ratio,
                "misses": misses,
                "machine": {k: env[k] for k in ("cpu", "cores", "gpu", "torch", "python")},
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
