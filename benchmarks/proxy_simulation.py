"""The proxy strategy judged over many simulated studies: search at a narrow proxy, decide at
the job's width, against a search at the job's width for the same budget.

    python benchmarks/proxy_simulation.py            # 100 studies a cell, budgets 2, 4, 8 and 16

On the recorded tables of the reduced language model (experiments/charlm_small_proxy.yaml: the
job at width 1, its proxy at width 0.5 to loss 3.0), four arms a budget, each budget counted in
the job's trial-lengths (the median recorded run at width 1):

- ``proxy, muP``: the proxy study as shipped, muP based at the proxy's width; its search replays
  ``charlm_small.json.gz`` at width 0.5 (where muP at its base is the standard parametrization),
  its decision ``charlm_small_mup.json.gz`` at width 1;
- ``proxy, standard``: the same study under the standard parametrization, both phases on
  ``charlm_small.json.gz``;
- ``search at full size``: the experiment without ``proxy:``, standard, at width 1 only: the job's
  study today;
- ``search at full size, muP``: the same under muP based at 0.5, on ``charlm_small_mup.json.gz``:
  what the proxy adds beyond the parametrization.

Each study's winner is scored by its true time (the median of its recorded seeds) over the best
configuration of either table at width 1, so the arms share one yardstick. Results:
``benchmarks/results/proxy_simulation.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

from tuner.environment import fingerprint
from tuner.orchestrate.logs import quiet_failed_trials
from tuner.simulate.repeats import Plan, budget_of, run_repeats
from tuner.simulate.simulation import Replay, summary
from tuner.simulate.table import load_table
from tuner.study.run.experiment_file import load_experiment
from tuner.study.space.space import Fixed

REPO = Path(__file__).resolve().parents[1]
TABLES = REPO / "benchmarks" / "tables"
EXPERIMENT = REPO / "experiments" / "charlm_small_proxy.yaml"
STANDARD, MUP = TABLES / "charlm_small.json.gz", TABLES / "charlm_small_mup.json.gz"
JOB = {"width": 1.0}


def arms() -> dict[str, tuple]:
    """Each arm: (experiment, the job's table, the proxy's table or None)."""
    shipped = load_experiment(EXPERIMENT)
    space = shipped.search_space
    standard_dims = {**space.dims, "parametrization": Fixed("standard")}
    mup_dims = {**space.dims, "parametrization": Fixed("mup"), "mup_base": Fixed(0.5)}
    standard = dataclasses.replace(shipped, search_space=dataclasses.replace(space, dims=standard_dims))
    mup = dataclasses.replace(shipped, search_space=dataclasses.replace(space, dims=mup_dims))
    return {
        "proxy, muP": (shipped, MUP, STANDARD),
        "proxy, standard": (standard, STANDARD, None),
        "search at full size": (dataclasses.replace(standard, proxy=None, name="charlm-small-full"), STANDARD, None),
        "search at full size, muP": (dataclasses.replace(mup, proxy=None, name="charlm-small-full-mup"), MUP, None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="2,4,8,16", help="budgets in the job's trial-lengths")
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "proxy_simulation")
    args = parser.parse_args()
    quiet_failed_trials()
    started = time.perf_counter()
    tables = {path: load_table(path) for path in (STANDARD, MUP)}
    best_s = min(table.best(where=JOB)[1] for table in tables.values())
    length_s = tables[STANDARD].trial_length_s(JOB)
    cells = []
    for budget in [float(b) for b in args.budgets.split(",")]:
        for label, (experiment, table, proxy_table) in arms().items():
            timeout_s = budget_of(tables[STANDARD], Replay(), budget, experiment)  # every arm: the job's trial-length
            planned = experiment.with_overrides(n_trials=None, timeout_s=timeout_s)
            plan = Plan(planned, table, Replay(), args.repeats, 0, proxy_table_path=proxy_table)
            studies = [dataclasses.replace(s, best_true_s=best_s) for s in run_repeats(plan)]  # one yardstick for every arm
            cell = {
                "arm": label,
                "budget": budget,
                **summary(studies),
                "spent_trial_lengths_median": statistics.median(s.end_s / length_s for s in studies),
            }
            cells.append(cell)
            within = f"{cell['within_10pct']:.0%} within 10%"
            regret = f"regret {cell['regret_median']:.2f} ({cell['regret_q1']:.2f}-{cell['regret_q3']:.2f})"
            print(f"{budget:g} trial-lengths, {label}: {regret}, {within}", flush=True)
    figures = {
        "experiment": str(EXPERIMENT.relative_to(REPO)),
        "best_s": best_s,
        "trial_length_s": length_s,
        "cells": cells,
        "elapsed_s": round(time.perf_counter() - started, 1),
        "environment": fingerprint(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(figures, indent=2) + "\n")
    lines = [
        "# The proxy strategy over simulated studies",
        "",
        (
            f"`python benchmarks/proxy_simulation.py` ({figures['elapsed_s']:.0f} s): {EXPERIMENT.name} replayed on "
            f"{STANDARD.name} and {MUP.name}, {args.repeats} studies a cell, one worker. A budget is counted in the job's "
            f"trial-lengths ({length_s:.2f} s, the median recorded run at width 1); regret is the winner's true time over "
            f"the best configuration of either table at width 1 ({best_s:.2f} s on the cpu clock)."
        ),
        "",
        "| budget (trial-lengths) | arm | regret median | IQR | within 10% | no winner | searched (median) | spent (trial-lengths) |",
        "|---|---|---|---|---|---|---|---|",
        *[
            f"| {c['budget']:g} | {c['arm']} | {c['regret_median']:.2f} | {c['regret_q1']:.2f}-{c['regret_q3']:.2f} | "
            f"{c['within_10pct']:.0%} | {c['no_winner']} | {c['trials_median']:g} | {c['spent_trial_lengths_median']:.2f} |"
            for c in cells
        ],
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
