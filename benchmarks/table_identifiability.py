"""How well a recorded table's runs can name its best configuration, whatever the search.

A simulated study's regret is its winner's true time (the median over the table's seeds,
tuner/simulate/table.py) over the best configuration's. Where the seeds of the best and of the
next configurations overlap, even a search with no budget limit cannot tell them apart from a
few runs each. This script bounds that from the table alone: it picks the configuration with the
fastest median over a subset of the recorded seeds, having run every configuration on that
subset (hundreds of trial-lengths, far past any budget the budget rule is judged at), and gives
that pick's regret, for every subset of one seed and of two.

    python benchmarks/table_identifiability.py        # every table in benchmarks/tables/

Prints a table and writes benchmarks/results/table_identifiability.{md,json}.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuner.simulate.table import Table, load_table
from tuner.train.result import Outcome

TABLES = ("mnist1d_cnn", "mnist1d_gru", "digits_ceiling", "digits_ceiling_7", "charlm_small")
RESULTS = REPO / "benchmarks" / "results" / "table_identifiability"


def seconds(table: Table, config: dict, seed: int) -> float:
    """One recorded run's time to target on the table's clock (inf for a miss)."""
    run = next(r for r in table.runs(table.config(config)) if r.seed == seed)
    t = run.result.time_to_target(table.objective["clock"]) if run.result.outcome is Outcome.REACHED else None
    return math.inf if t is None else t


def bounds(name: str) -> dict:
    table = load_table(REPO / "benchmarks" / "tables" / f"{name}.json.gz")
    configs = table.configs()
    truth = [table.true_time(c) for c in configs]
    best = min(truth)
    runs = [{s: seconds(table, c, s) for s in table.seeds} for c in configs]
    picks = {}
    for k in (1, 2):
        for subset in itertools.combinations(table.seeds, k):
            estimate = [statistics.median(r[s] for s in subset) for r in runs]
            picked = min(range(len(configs)), key=lambda i: estimate[i])
            picks[",".join(map(str, subset))] = truth[picked] / best
    ordered = sorted(truth)
    return {
        "configurations": len(configs),
        "seeds": len(table.seeds),
        "within_1.15": sum(t <= 1.15 * best for t in truth),
        "within_1.3": sum(t <= 1.3 * best for t in truth),
        "second_best": ordered[1] / best,
        "one_seed": {k: v for k, v in picks.items() if "," not in k},
        "two_seeds": {k: v for k, v in picks.items() if "," in k},
        "one_seed_median": statistics.median(v for k, v in picks.items() if "," not in k),
        "two_seeds_median": statistics.median(v for k, v in picks.items() if "," in k),
    }


def main() -> None:
    found = {name: bounds(name) for name in TABLES}
    header = "| table | configurations x seeds | within 1.15 of the best | within 1.3 | second best "
    header += "| every configuration once, by seed | median | on two seeds, by pair | median |"
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for name, b in found.items():
        one = ", ".join(f"{v:.2f}" for v in b["one_seed"].values())
        two = ", ".join(f"{v:.2f}" for v in b["two_seeds"].values())
        lines.append(
            f"| {name} | {b['configurations']} x {b['seeds']} | {b['within_1.15']} | {b['within_1.3']} | {b['second_best']:.2f} "
            f"| {one} | **{b['one_seed_median']:.2f}** | {two} | **{b['two_seeds_median']:.2f}** |"
        )
    text = "\n".join(lines)
    print(text)
    RESULTS.with_suffix(".md").write_text(
        "Regret of the configuration with the fastest median over a subset of the recorded seeds, every\n"
        "configuration run on that subset (`python benchmarks/table_identifiability.py`).\n\n" + text + "\n"
    )
    RESULTS.with_suffix(".json").write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
