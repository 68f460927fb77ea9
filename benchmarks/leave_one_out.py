"""The budget rule judged on tables it was not fitted to (``search_quality_table.py --leave-one-out``).

The rule's constants (tuner/study/stopping/budget_rule.py: ``Constants``) are set on every
recorded table but one and judged on the one left out, for each table in turn:

1. Every candidate of a small grid of constants (``GRID``; the shipped ones among them) runs
   ``--fit-repeats`` simulated studies of the default experiment on each table at each budget,
   one worker. Cells whose resolved experiment is the same (a constant that does not act at that
   budget) are simulated once.
2. For each table left out, the candidate with the lowest mean median regret over the other
   tables' cells is chosen (ties: the lower mean regret, capped at 10 for a study without a
   winner), and its cells on the left-out table run again on ``--repeats`` fresh studies.

The figures to quote are the left-out ones: a rule fitted to the tables it is judged on
flatters itself. Written to ``OUT.json`` and ``OUT.md``.

``--add-fold TABLE`` judges a table recorded after ``OUT.json`` was written, without fitting the
grid again: the constants that run chose on all its tables (``fitted_on_all``) are the ones fitted
on every table but the new one. Its fold is appended; the earlier folds keep the tables they were
fitted on (each fold's row says which). ``--recording-of FOLD``: TABLE records the task of a fitted
table again (``JUDGED_ONLY``: the tabular task on seven seeds), so it is judged with the constants
chosen when FOLD was left out, which never saw the task.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import time
from pathlib import Path

from tuner.environment import fingerprint
from tuner.simulate.fit import fitted
from tuner.simulate.repeats import Plan, budget_of, run_repeats
from tuner.simulate.simulation import Replay
from tuner.simulate.table import load_table
from tuner.study.experiment.load import Budget
from tuner.study.run.experiment_file import load_experiment
from tuner.study.stopping.budget_rule import Constants

REPO = Path(__file__).resolve().parents[1]
# Each recorded table with the experiment it replays.
TABLES = {
    "mnist1d_cnn": ("benchmarks/tables/mnist1d_cnn.json.gz", "experiments/mnist1d_cnn.yaml"),
    "mnist1d_gru": ("benchmarks/tables/mnist1d_gru.json.gz", "experiments/mnist1d_gru.yaml"),
    "digits_ceiling": ("benchmarks/tables/digits_ceiling.json.gz", "experiments/digits_mlp_ceiling.yaml"),
    "charlm_small": ("benchmarks/tables/charlm_small.json.gz", "experiments/charlm_small.yaml"),
}
# Tables only judged (``--add-fold``), never fitted on: another recording of a fitted table's task.
JUDGED_ONLY = {
    "digits_ceiling_7": ("benchmarks/tables/digits_ceiling_7.json.gz", "experiments/digits_mlp_ceiling.yaml"),
}
# The constants that act at one worker and 10-20 trial-lengths; the others keep their values.
GRID = {
    "small_budget": (15.0, 30.0),
    "clear_margin": (1.1, 1.25, 1.5),
    "deciding_from": (8.0, 12.0),
    "startup_share": (0.125, 0.25),
}
NO_WINNER = 10.0  # the regret a study without a winner counts as in the tie-break mean


def candidates() -> list[Constants]:
    return [Constants(**dict(zip(GRID, values, strict=True))) for values in itertools.product(*GRID.values())]


def summary(regrets: list[float]) -> dict:
    return {
        "median": statistics.median(regrets),
        "mean_capped": statistics.fmean(min(r, NO_WINNER) for r in regrets),
        "within_10pct": sum(r <= 1.1 for r in regrets) / len(regrets),
        "winners": sum(r != float("inf") for r in regrets) / len(regrets),
        "studies": len(regrets),
    }


class Cells:
    """Simulated cells (table, budget, constants) by what the study resolves to, each simulated once."""

    def __init__(self, budgets: list[float], processes: int | None) -> None:
        self.budgets, self.processes = budgets, processes
        self.files = {**TABLES, **JUDGED_ONLY}
        self.tables = {name: load_table(REPO / table) for name, (table, _) in self.files.items() if (REPO / table).exists()}
        self.done: dict[tuple, dict] = {}

    def experiment(self, name: str, budget: float):
        table = self.tables[name]
        base = load_experiment(REPO / self.files[name][1])
        base = dataclasses.replace(base, objective=dataclasses.replace(base.objective, clock=table.objective["clock"]))
        return dataclasses.replace(base, budget=Budget(timeout_s=budget_of(table, Replay(1), budget)))

    def run(self, name: str, budget: float, constants: Constants, repeats: int, first_seed: int = 0) -> dict:
        experiment, table = self.experiment(name, budget), self.tables[name]
        key = (name, budget, repr(fitted(experiment, table, 0, Replay(1, rule=constants))), repeats, first_seed)
        if key not in self.done:
            started = time.perf_counter()
            plan = Plan(experiment, REPO / self.files[name][0], Replay(1, rule=constants), repeats, first_seed, None)
            studies = run_repeats(plan, self.processes)
            self.done[key] = {**summary([s.regret for s in studies]), "elapsed_s": round(time.perf_counter() - started, 1)}
        return self.done[key]


def score(cells: Cells, constants: Constants, tables: list[str], repeats: int) -> tuple[float, float]:
    """Mean median regret over ``tables``' cells, then mean regret: lower is better."""
    runs = [cells.run(t, b, constants, repeats) for t in tables for b in cells.budgets]
    return statistics.fmean(r["median"] for r in runs), statistics.fmean(r["mean_capped"] for r in runs)


def leave_one_out(budgets: list[float], fit_repeats: int, repeats: int, processes: int | None, out: Path) -> None:
    started = time.perf_counter()
    cells = Cells(budgets, processes)
    grid, shipped = candidates(), Constants()
    for constants in grid:  # every candidate on every table, at the fitting repeats
        for name in TABLES:
            for budget in budgets:
                cell = cells.run(name, budget, constants, fit_repeats)
                print(f"{name} {budget:g} {constants}: median {cell['median']:.3f} [{cell['elapsed_s']} s]", flush=True)
    folds = []
    for left_out in TABLES:
        fitted_on = [t for t in TABLES if t != left_out]
        chosen = min(grid, key=lambda c: score(cells, c, fitted_on, fit_repeats))
        # Fresh studies (seeds past the fitting ones) judge the chosen constants and the shipped ones on the table left out.
        judged = {b: cells.run(left_out, b, chosen, repeats, first_seed=fit_repeats) for b in budgets}
        as_shipped = {b: cells.run(left_out, b, shipped, repeats, first_seed=fit_repeats) for b in budgets}
        folds.append(
            {
                "left_out": left_out,
                "fitted_on": fitted_on,
                "chosen": dataclasses.asdict(chosen),
                "fit_score": score(cells, chosen, fitted_on, fit_repeats),
                "left_out_cells": {f"{b:g}": judged[b] for b in budgets},
                "shipped_cells": {f"{b:g}": as_shipped[b] for b in budgets},
            }
        )
        cells_line = ", ".join(f"{b:g}: {judged[b]['median']:.3f} (shipped {as_shipped[b]['median']:.3f})" for b in budgets)
        print(f"left out {left_out}: chosen {chosen}; its median regret {cells_line}", flush=True)
    everything = min(grid, key=lambda c: score(cells, c, list(TABLES), fit_repeats))
    result = {
        "environment": fingerprint(),
        "budgets": budgets,
        "fit_repeats": fit_repeats,
        "repeats": repeats,
        "grid": {k: list(v) for k, v in GRID.items()},
        "shipped": dataclasses.asdict(shipped),
        "fitted_on_all": dataclasses.asdict(everything),
        "folds": folds,
        "elapsed_s": round(time.perf_counter() - started),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(f"written {out}.json/.md")


def add_fold(name: str, repeats: int, processes: int | None, out: Path, recording_of: str | None = None) -> None:
    """Judge ``name``, a table ``out`` was not fitted on, with the constants ``out`` fitted on all its tables;
    or, where ``name`` is another recording of the task of fold ``recording_of``, with the constants chosen
    when that fold was left out (fitted on all of them would have seen the task)."""
    result = json.loads(out.with_suffix(".json").read_text())
    if name in [fold["left_out"] for fold in result["folds"]]:
        raise SystemExit(f"{out}.json: {name} is already a fold")
    if recording_of is None:
        fitted_on = [fold["left_out"] for fold in result["folds"] if "added" not in fold]  # the tables fitted_on_all saw
        chosen_as = result["fitted_on_all"]
    else:
        fold = next((f for f in result["folds"] if f["left_out"] == recording_of and "added" not in f), None)
        if fold is None:
            raise SystemExit(f"{out}.json: --recording-of {recording_of} is not a fitted fold")
        fitted_on, chosen_as = fold["fitted_on"], fold["chosen"]
    started = time.perf_counter()
    cells = Cells(result["budgets"], processes)
    chosen, shipped = Constants(**chosen_as), Constants()
    fit_repeats = result["fit_repeats"]  # the fresh studies start past the seeds the fitting used
    judged = {b: cells.run(name, b, chosen, repeats, first_seed=fit_repeats) for b in result["budgets"]}
    as_shipped = {b: cells.run(name, b, shipped, repeats, first_seed=fit_repeats) for b in result["budgets"]}
    result["folds"].append(
        {
            "left_out": name,
            "fitted_on": fitted_on,
            "chosen": chosen_as,
            "left_out_cells": {f"{b:g}": judged[b] for b in result["budgets"]},
            "shipped_cells": {f"{b:g}": as_shipped[b] for b in result["budgets"]},
            "added": {"environment": fingerprint(), "elapsed_s": round(time.perf_counter() - started), "recording_of": recording_of},
        }
    )
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    medians = ", ".join(f"{b:g}: {cell['median']:.3f}" for b, cell in judged.items())
    print(f"left out {name}: {medians}; written {out}.json/.md")


def markdown(result: dict) -> str:
    budgets = [f"{b:g}" for b in result["budgets"]]
    varied = list(result["grid"])
    lines = [
        "# The budget rule on tables it was not fitted to",
        "",
        (
            f"`python benchmarks/search_quality_table.py --leave-one-out` ({result['elapsed_s']} s): {len(candidates())} candidate "
            f"settings of {', '.join(varied)} (grid {result['grid']}), each fitted on {result['fit_repeats']} studies a cell; "
            f"the chosen and the shipped constants judged on {result['repeats']} fresh studies a cell of the table left out. "
            "One worker; median regret of the study's choice (its true time over the table's best)."
        ),
        "",
        "| left out | chosen on the others (fitted on) | "
        + " | ".join(f"left-out median regret at {b}" for b in budgets)
        + " | shipped constants |",
        "|---|---|" + "---|" * len(budgets) + "---|",
    ]
    for fold in result["folds"]:
        chosen = ", ".join(f"{k} {fold['chosen'][k]:g}" for k in varied) + f" ({', '.join(fold['fitted_on'])})"
        cells = " | ".join(
            f"**{fold['left_out_cells'][b]['median']:.2f}** ({fold['left_out_cells'][b]['within_10pct']:.0%} within 10%, "
            f"winner in {fold['left_out_cells'][b]['winners']:.0%})"
            for b in budgets
        )
        shipped = ", ".join(f"{fold['shipped_cells'][b]['median']:.2f}" for b in budgets)
        lines.append(f"| {fold['left_out']} | {chosen} | {cells} | {shipped} |")
    everything = ", ".join(f"{k} {result['fitted_on_all'][k]:g}" for k in varied)
    shipped = ", ".join(f"{k} {result['shipped'][k]:g}" for k in varied)
    fitted_on = ", ".join(fold["left_out"] for fold in result["folds"] if "added" not in fold)
    lines += ["", f"Fitted on all of {fitted_on}: {everything}. Shipped: {shipped}."]
    for fold in result["folds"]:
        if "added" in fold:
            lines += [
                "",
                (
                    f"{fold['left_out']} was added afterwards (`--add-fold {fold['left_out']}{recorded_again(fold)}`, "
                    f"{fold['added']['elapsed_s']} s, at commit {fold['added']['environment']['git_commit'][:7]}): judged with the "
                    f"constants fitted on all of {', '.join(fold['fitted_on'])}, which never saw its task; the folds above it "
                    "were not fitted again with it."
                ),
            ]
    return "\n".join(lines) + "\n"


def recorded_again(fold: dict) -> str:
    of = fold["added"].get("recording_of")
    return f" --recording-of {of}" if of else ""


def main() -> None:
    """``python benchmarks/leave_one_out.py``: the same as ``search_quality_table.py --leave-one-out``."""

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="10,20", help="trial-lengths of compute a study")
    parser.add_argument("--fit-repeats", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "search_quality_leave_one_out")
    parser.add_argument("--add-fold", metavar="TABLE", choices=[*TABLES, *JUDGED_ONLY], help="judge a table OUT.json was not fitted on")
    parser.add_argument("--recording-of", metavar="FOLD", choices=list(TABLES), help="with --add-fold: TABLE records FOLD's task again")
    args = parser.parse_args()
    if args.add_fold:
        return add_fold(args.add_fold, args.repeats, args.processes, args.out, args.recording_of)
    leave_one_out([float(b) for b in args.budgets.split(",")], args.fit_repeats, args.repeats, args.processes, args.out)


if __name__ == "__main__":
    main()
