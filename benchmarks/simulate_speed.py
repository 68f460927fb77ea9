"""How long `tuner simulate` takes: studies of the default experiment per second of this machine.

    python benchmarks/simulate_speed.py [--repeats 100] [--budget 50] [--processes N]

Runs ``tuner simulate experiments/mnist1d_cnn.yaml --table benchmarks/tables/mnist1d_cnn.json.gz``
in a subprocess (the command a user runs, start-up included) and records the elapsed time
it reports, the whole command's wall time, the load of the machine before it started and the
git commit. Appends one entry to benchmarks/results/simulate_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tuner.environment import fingerprint

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "simulate_speed.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--budget", type=float, default=50)
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("--label", default="", help="what this run measures (for example the code's state)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    command = [
        sys.executable,
        "-m",
        "tuner",
        "simulate",
        "experiments/mnist1d_cnn.yaml",
        "--table",
        "benchmarks/tables/mnist1d_cnn.json.gz",
    ]
    command += ["--repeats", str(args.repeats), "--budget", f"{args.budget:g}", "--json", "--out", "/tmp/simulate_speed"]
    if args.processes is not None:
        command += ["--processes", str(args.processes)]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    entry = {
        "label": args.label,
        "repeats": args.repeats,
        "budget_trial_lengths": args.budget,
        "processes": args.processes or len(os.sched_getaffinity(0)),
        "simulate_elapsed_s": reported["settings"]["elapsed_s"],
        "command_wall_s": round(wall, 1),
        "load_before": round(load, 2),
        "summary": reported["summary"],
        "environment": fingerprint(),
    }
    entries = json.loads(args.out.read_text()) if args.out.exists() else []
    args.out.write_text(json.dumps([*entries, entry], indent=1) + "\n")
    elapsed = entry["simulate_elapsed_s"]
    print(f"{args.repeats} studies at {args.budget:g} trial-lengths: {elapsed} s ({wall:.1f} s with start-up), load {load:.2f}")


if __name__ == "__main__":
    main()
