"""The charlm language model: the reference configuration against the winner of a 240-second study.

Tunes experiments/charlm.yaml for ``--timeout`` seconds, exports its best, then trains the
best and the reference configuration (experiments/charlm_reference.yaml) alternately on
``--seeds`` seeds with `tuner train`, and prints the median time to the experiment's target
on its clock and their ratio (benchmarks/tuned_vs_default.py does the work). Results go to
benchmarks/results/charlm.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tuned_vs_default import REPO, compare

RESULTS = REPO / "benchmarks" / "results" / "charlm.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "charlm.yaml"))
    parser.add_argument("--default", default=str(REPO / "experiments" / "charlm_reference.yaml"))
    parser.add_argument("--timeout", type=float, default=240.0, help="tuning budget in seconds")
    parser.add_argument("--storage", help="use this existing study storage instead of tuning")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--note", help="what else ran on the machine meanwhile, kept beside the figures")
    args = parser.parse_args()
    figures = compare(args.experiment, args.default, 0.0 if args.storage else args.timeout, args.storage, args.seeds, Path(RESULTS))
    if args.note:  # timed training is distorted by other load: the figures say so
        RESULTS.write_text(json.dumps({**figures, "note": args.note}, indent=2) + "\n")


if __name__ == "__main__":
    main()
