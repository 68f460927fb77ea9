"""The charlm language model: the reference configuration against the winner of a 240-second study.

Tunes experiments/charlm.yaml for ``--timeout`` seconds (or ``--trial-lengths`` of the reference's
runs, timed first: the same budget on a faster or slower machine), exports its best, then trains
the best and the reference configuration (experiments/charlm_reference.yaml) alternately on
``--seeds`` seeds with `tuner train`, and prints the median time to the experiment's target on its
clock and their ratio (benchmarks/tuned_vs_default.py does the work); ``--best FILE`` trains an
exported file against the reference instead of tuning. Results go to benchmarks/results/charlm.json
(``--results``: another file).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tuned_vs_default import REPO, compare, train

RESULTS = REPO / "benchmarks" / "results" / "charlm.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "charlm.yaml"))
    parser.add_argument("--default", default=str(REPO / "experiments" / "charlm_reference.yaml"))
    parser.add_argument("--timeout", type=float, default=240.0, help="tuning budget in seconds")
    parser.add_argument(
        "--trial-lengths", type=float, help="tuning budget in trial-lengths instead: the reference's wall time on seed 0, timed first"
    )
    parser.add_argument("--storage", help="use this existing study storage instead of tuning")
    parser.add_argument("--best", type=Path, help="train this exported file against the reference instead of tuning")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--note", help="what else ran on the machine meanwhile, kept beside the figures")
    args = parser.parse_args()
    timeout, extra = args.timeout, {}
    if args.trial_lengths and not args.storage and not args.best:
        length_s = train(Path(args.default), 0, Path(tempfile.mkdtemp(prefix="charlm_length_")))["wall_s"]
        timeout = args.trial_lengths * length_s
        extra = {"trial_length_s": length_s, "budget_trial_lengths": args.trial_lengths}
        print(f"one trial-length: {length_s:.1f} s (the reference's wall time on seed 0); budget {timeout:.0f} s")
    figures = compare(args.experiment, args.default, 0.0 if args.storage else timeout, args.storage, args.seeds, args.results, args.best)
    if extra or args.note:  # timed training is distorted by other load: the figures say so
        args.results.write_text(json.dumps({**figures, **extra, **({"note": args.note} if args.note else {})}, indent=2) + "\n")


if __name__ == "__main__":
    main()
