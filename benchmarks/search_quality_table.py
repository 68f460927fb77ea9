"""Search quality on a recorded table: each strategy's regret over many simulated studies.

    python benchmarks/search_quality_table.py --table benchmarks/tables/mnist1d_cnn.json.gz [--repeats 100]
    python benchmarks/search_quality_table.py --table benchmarks/tables/mnist1d_gru.json.gz \
        --experiment experiments/mnist1d_gru.yaml --out benchmarks/results/search_quality_table_gru

Every strategy runs the real study loop on the table (`tuner simulate`'s machinery,
tuner/simulate/): the default experiment as it ships, and the alternatives a user would
otherwise run. The budget is compute: ``L`` trial-lengths (the table's median trial) shared
by the workers, so a study of 16 workers and ``L = 50`` has ``50 / 16`` trial-lengths of
virtual wall time. The regret of a study is its chosen configuration's true time to target
(the table's median over its seeds) over the table's best configuration's; a study that
chose nothing has an infinite regret. For each strategy, workers and budget: the median
and interquartile range of the regret, and the share of studies within 10% of the best.

  default           `tuner run` as it ships: ``pruner.name: auto``, the budget rule's strategy for the
                    cell's trial-lengths and workers (tuner/study/stopping/budget_rule.py, docs/stopping.md)
  equal-time        what shipped before the rule at every budget: TPE, equal-time pruning, capping, the
                    throughput screen, racing on seeds, confirmation (the confirmed winner)
  default+extrap    the default with extrapolated stopping (tuner/study/stopping/extrapolate.py)
  tpe-sha-time      TPE with Optuna's SuccessiveHalvingPruner on time buckets, no capping; the best trial
  tpe-hyperband-time  TPE with Optuna's HyperbandPruner on time buckets, no capping; the best trial
  tpe-median-step   TPE with Optuna's MedianPruner on step-indexed reports (1 - accuracy at
                    each evaluation, step = its index), what a user writes by hand; the best trial
  tpe               TPE, no pruning or capping; the best trial
  random            random search, no pruning or capping; the best trial
  gp                Optuna's GPSampler, no pruning or capping; the best trial

Writes benchmarks/results/search_quality_table.{json,md,png}.

    python benchmarks/search_quality_table.py --leave-one-out [--budgets 10,20] [--fit-repeats 20] [--repeats 100]

sets the budget rule's constants on every recorded table but one and judges them on the one
left out, for each in turn (benchmarks/leave_one_out.py); writes
benchmarks/results/search_quality_leave_one_out.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import optuna
from leave_one_out import leave_one_out

from tuner.environment import fingerprint
from tuner.orchestrate.logs import quiet_failed_trials
from tuner.simulate.repeats import Plan, budget_of, run_repeats
from tuner.simulate.report import markdown, plot, results, summary_line
from tuner.simulate.simulation import Replay
from tuner.simulate.table import load_table
from tuner.study.experiment.load import Budget, Confirm, Pruning
from tuner.study.hooks import StudyHooks
from tuner.study.run.experiment_file import load_experiment
from tuner.study.stopping.budget_rule import LARGE, choose
from tuner.study.stopping.extrapolate import ExtrapolatedStop
from tuner.train.result import Outcome
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import GO, Stop, Verdict

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
STRATEGIES = ("default", "equal-time", "tpe-sha-time", "tpe-hyperband-time", "tpe-median-step", "random")
PEERS = ("tpe-sha-time", "tpe-hyperband-time", "tpe-median-step", "random")
OFF = Pruning(name="none", cap_slack=None)


class StepIndexedMedian(StudyHooks):
    """What a user writes by hand: report 1 - accuracy at each evaluation with step = its index."""

    def study_started(self, study: optuna.Study, experiment: object) -> None:
        study.pruner = optuna.pruners.MedianPruner()  # Optuna's defaults, as a user would leave them

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        self.trial, self.step = trial, 0

    def on_evaluation(self, tt: object, ev: object) -> Verdict:
        self.trial.report(1.0 - ev.metric, self.step)
        self.step += 1
        if self.trial.should_prune():
            return Stop(Outcome.PRUNED, f"median pruner at evaluation {self.step - 1}")
        return GO


def median_step_hooks() -> list[StudyHooks]:
    return [StepIndexedMedian()]


def strategy(base, name: str):
    """The experiment (and each worker's extra hooks) a strategy runs."""
    if name == "default":
        return base, None
    if name == "default+extrap":
        # The incumbent is read at every evaluation: a simulation's host clock says nothing of its virtual one.
        return base, lambda: [ExtrapolatedStop(base.objective, refresh_s=0.0)]
    if name == "equal-time":
        return dataclasses.replace(base, pruner=dataclasses.replace(base.pruner, name="equal_time")), None
    sampler = dataclasses.replace(base.sampler, name={"random": "random", "gp": "gp"}.get(name, "tpe"))
    named = {"tpe-sha-time": "successive_halving", "tpe-hyperband-time": "hyperband"}
    pruner = Pruning(name=named[name], cap_slack=None) if name in named else OFF
    experiment = dataclasses.replace(base, sampler=sampler, pruner=pruner, confirm=Confirm(after_search=False), race=None, screen=None)
    return experiment, median_step_hooks if name == "tpe-median-step" else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=REPO / "benchmarks/tables/mnist1d_cnn.json.gz")
    parser.add_argument("--experiment", default=str(REPO / "experiments/mnist1d_cnn.yaml"))
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--budgets", help="trial-lengths of compute a study (default 5,10,20,50,100; 10,20 with --leave-one-out)")
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / "search_quality_table")
    parser.add_argument("--append", action="store_true", help="add these cells to OUT.json's and OUT.md (the figure stays)")
    parser.add_argument("--leave-one-out", action="store_true", help="fit the budget rule's constants on all tables but one, for each")
    parser.add_argument("--fit-repeats", type=int, default=20, help="studies a cell while fitting, with --leave-one-out")
    args = parser.parse_args()
    quiet_failed_trials()  # a failed trial is a line in the summary, not Optuna's logged traceback
    if args.leave_one_out:
        out = args.out if args.out != RESULTS / "search_quality_table" else RESULTS / "search_quality_leave_one_out"
        budgets = [float(b) for b in (args.budgets or "10,20").split(",")]
        leave_one_out(budgets, args.fit_repeats, args.repeats, args.processes, out)
        return
    args.budgets = args.budgets or "5,10,20,50,100"
    table = load_table(args.table)
    base = load_experiment(args.experiment)
    # The studies minimise the clock the regret is measured on: the table's (a table on the cpu clock
    # is replayed by a study on the cpu clock, whatever the experiment file ships with).
    base = dataclasses.replace(base, objective=dataclasses.replace(base.objective, clock=table.objective["clock"]))
    cells = []
    started = time.perf_counter()
    for workers in map(int, args.workers.split(",")):
        for budget in map(float, args.budgets.split(",")):
            ran: dict[str, list] = {}
            for name in args.strategies.split(","):
                experiment, hooks = strategy(base, name)
                replay = Replay(workers)
                timeout_s = budget_of(table, replay, budget) / workers
                experiment = dataclasses.replace(experiment, budget=Budget(timeout_s=timeout_s))
                t0 = time.perf_counter()
                if name == "equal-time" and choose(budget, workers) is LARGE and "default" in ran:
                    studies = ran["default"]  # the rule runs this very strategy here: the same studies
                else:
                    studies = run_repeats(Plan(experiment, args.table, replay, args.repeats, 0, hooks), args.processes)
                ran[name] = studies
                label = f"{name} | {workers} | {budget:g}"
                result = results(label, studies, {"strategy": name, "workers": workers, "budget": budget, "timeout_s": timeout_s})
                result["elapsed_s"] = round(time.perf_counter() - t0, 1)
                cells.append(result)
                print(summary_line(result), f"[{result['elapsed_s']} s]", flush=True)
    best_config, best_s = table.best()
    heading = (
        "# Search quality on a recorded table\n\n"
        f"`python benchmarks/search_quality_table.py --table {args.table.name} --experiment {Path(args.experiment).name}"
        f" --workers {args.workers} --budgets {args.budgets} --repeats {args.repeats}`"
        f" ({time.perf_counter() - started:.0f} s). Table: {len(table.configs())} configurations x {len(table.seeds)} seeds of "
        f"{table.objective['task']} on the {table.objective['clock']} clock (cap {table.cap_s:g} s), best {best_s:.3f} s ({best_config}); "
        f"a trial-length is {table.trial_length_s():.2f} s. "
        "Strategy | workers | budget (trial-lengths of compute); regret = the chosen configuration's true time over the best."
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    slim = [{k: v for k, v in c.items() if k != "studies"} for c in cells]
    if args.append and args.out.with_suffix(".json").exists():
        slim = json.loads(args.out.with_suffix(".json").read_text())["cells"] + slim
    heading += (
        " Repeats per cell: the `studies` column. `default` is `pruner.name: auto` as `tuner simulate` resolves it: the budget"
        " rule's strategy for the cell (docs/stopping.md); `equal-time` is the large-budget strategy at every budget"
        " (`pruner: {name: equal_time}`)."
    )
    args.out.with_suffix(".json").write_text(json.dumps({"environment": fingerprint(), "cells": slim}, indent=1, default=str) + "\n")
    args.out.with_suffix(".md").write_text(markdown(slim, heading, "strategy | workers | budget") + verdict(slim))
    if args.append:  # the figure stays the first run's
        print(f"written {args.out}.json/.md")
        return
    one_worker = [c for c in cells if c["settings"]["workers"] == min(c["settings"]["workers"] for c in cells)]
    top = max(c["settings"]["budget"] for c in one_worker)
    longest = [c for c in one_worker if c["settings"]["budget"] == top]
    plot(longest, args.out.with_suffix(".png"), max(c["settings"]["timeout_s"] for c in longest))
    print(f"written {args.out}.json/.md/.png")


def verdict(cells: list[dict]) -> str:
    """The targets, stated against what was measured: the default against the best peer in each
    cell, and the figures asked of 1 and 16 workers."""
    lines = ["", "## Against the targets", ""]
    by = {(c["settings"]["strategy"], c["settings"]["workers"], c["settings"]["budget"]): c["summary"] for c in cells}
    asked = {10: (1.3, 0.95), 20: (1.15, None), 50: (1.0, None), 100: (1.0, None)}  # median regret at most, winners in at least
    for (name, workers, budget), s in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        if name != "default":
            continue
        peers = [(p, by[(p, workers, budget)]) for p in PEERS if (p, workers, budget) in by]
        line = f"- {workers} worker(s), {budget:g} trial-lengths: median regret {s['regret_median']:.2f}"
        line += f", {s['within_10pct']:.0%} within 10%"
        if peers:
            best_name, best = min(peers, key=lambda p: (p[1]["regret_median"], -p[1]["within_10pct"]))
            worse = s["regret_median"] > best["regret_median"] + 1e-9
            line += f"; best peer {best_name} {best['regret_median']:.2f} ({best['within_10pct']:.0%}): {'worse' if worse else 'not worse'}"
        if workers == 1 and budget in asked:
            most, winners = asked[int(budget)]
            won = 1 - s["no_winner"] / s["studies"]
            met = s["regret_median"] <= most + 1e-9 and (winners is None or won >= winners)
            line += f"; asked <= {most:g}" + (f" with a winner in >= {winners:.0%} ({won:.0%})" if winners else "")
            line += f": {'met' if met else 'not met'}"
        if workers == 16 and budget == 50:
            line += f"; asked >= 80% within 10%: {'met' if s['within_10pct'] >= 0.8 else 'not met'}"
        lines.append(line)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
