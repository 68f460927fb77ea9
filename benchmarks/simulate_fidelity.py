"""Fidelity of the simulator: real studies on this machine against the simulated distribution.

    python benchmarks/simulate_fidelity.py [--studies 5] [--budget 240] [--parallel 2] [--repeats 100]

1. Runs ``--studies`` real studies of the default experiment (real training, ``--budget``
   seconds each, seeds 1, 2, ...), searching the table's grid the way a simulated study
   does (``GridSpace``), so that every winner is a configuration of the table and has a
   true time there (its median over the recorded seeds). ``--parallel`` run at once, as the
   table was recorded (two workers on two cores).
2. Simulates ``--repeats`` studies of the same experiment and budget on the table, and
   places each real winner's true time in the simulated distribution (its percentile).
3. Replays the first real study on its own recorded trials, with its seed
   (tuner/simulate/study_table.py), and counts how many of its first trials made the same
   decisions: the same configuration, the same outcome, at the same step.

Writes benchmarks/results/simulate_fidelity.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing as mp
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tuner.study.hooks import StudyHooks

RESULTS = REPO / "benchmarks" / "results"


def real_study(args: tuple[str, str, float, int, str]) -> dict:
    """One real study on the table's grid; returns its winner's grid values and its trials' decisions."""
    experiment_path, table_path, budget_s, seed, storage = args
    import optuna
    import torch

    from tuner.orchestrate.logs import quiet_failed_trials
    from tuner.simulate.grid_space import GridSpace
    from tuner.simulate.simulation import decisions
    from tuner.simulate.table import load_table
    from tuner.study.experiment.load import Budget
    from tuner.study.record import best_reached
    from tuner.study.reruns.winner import best_choice
    from tuner.study.run.experiment_file import load_experiment
    from tuner.study.run.prepare import prepare
    from tuner.study.run.runner import run_study

    torch.set_num_threads(1)
    quiet_failed_trials()
    table = load_table(table_path)
    experiment = dataclasses.replace(
        load_experiment(experiment_path), name=f"fidelity-{seed}", storage=storage, seed=seed, budget=Budget(timeout_s=budget_s)
    )
    try:  # a study already in --work is read, not resumed: a time budget would search again
        study = optuna.load_study(study_name=experiment.name, storage=storage)
    except KeyError:
        study = run_study(experiment, prepared=dataclasses.replace(prepare(experiment), space=GridSpace(table)))
    # Returned, not raised: an exception with its own arguments would not come back through the pool.
    config = best_choice(study).trial.config if best_reached(study) is not None else None
    winner = {d: getattr(config, d) for d in table.dims} if config is not None else None
    return {"seed": seed, "storage": storage, "winner": winner, "decisions": [list(d) for d in decisions(study)]}


class Decisions(StudyHooks):
    """Each trial of a replayed study as it finishes: (number, configuration key, outcome, last step)."""

    def __init__(self) -> None:
        self.rows: list[list] = []

    def trial_finished(self, trial, result, value) -> None:
        from tuner.study.record import TrialRecord

        config = TrialRecord.of(trial).config
        if config is not None:
            self.rows.append([trial.number, TrialRecord.key_of(config), result.outcome.value, result.steps])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(REPO / "experiments/mnist1d_cnn.yaml"))
    parser.add_argument("--table", default=str(REPO / "benchmarks/tables/mnist1d_cnn.json.gz"))
    parser.add_argument("--studies", type=int, default=5)
    parser.add_argument("--budget", type=float, default=240.0)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--out", type=Path, default=RESULTS / "simulate_fidelity")
    parser.add_argument("--work", type=Path, default=None, help="where the real studies' storages go (a finished one is read, not re-run)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    import optuna

    from tuner.environment import fingerprint
    from tuner.simulate.grid_space import GridSpace
    from tuner.simulate.repeats import Plan, run_repeats
    from tuner.simulate.simulation import Replay, simulate_study
    from tuner.simulate.study_table import study_table
    from tuner.simulate.table import NotInTable, load_table
    from tuner.study.experiment.load import Budget
    from tuner.study.run.experiment_file import load_experiment
    from tuner.tasks.registry import build_task

    work = args.work or Path(tempfile.mkdtemp(prefix="fidelity-"))
    work.mkdir(parents=True, exist_ok=True)
    jobs = [
        (args.experiment, args.table, args.budget, seed, f"sqlite:///{work / f'study-{seed}.db'}") for seed in range(1, args.studies + 1)
    ]
    with mp.get_context("spawn").Pool(args.parallel) as pool:
        real = pool.map(real_study, jobs, chunksize=1)
    table = load_table(args.table)
    base = dataclasses.replace(load_experiment(args.experiment), budget=Budget(timeout_s=args.budget))
    simulated = run_repeats(Plan(base, Path(args.table), Replay(), args.repeats, 1))
    sim_times = sorted(s.winner_true_s for s in simulated)
    best_s = table.best()[1]
    for r in real:
        t = table.true_time(r["winner"]) if r["winner"] is not None else math.inf
        r["winner_true_s"] = t
        # Mid-rank: a real winner tied with half the simulated ones sits at the middle of them, not at their top.
        r["percentile"] = 100.0 * (sum(s < t for s in sim_times) + 0.5 * sum(s == t for s in sim_times)) / len(sim_times)
    # The first real study, replayed on its own trials with its seed.
    first = real[0]
    experiment = dataclasses.replace(base, name=f"fidelity-{first['seed']}", seed=first["seed"])
    study = optuna.load_study(study_name=experiment.name, storage=first["storage"])
    own = study_table(study, table.objective, first["storage"])
    seen = Decisions()
    task = build_task(base.task, base.task_options)
    try:  # once a decision differs, the replay samples what the real study never ran: the table refuses it
        simulate_study(experiment, own, task, Replay(), first["seed"], hooks=lambda: [seen], space=GridSpace(table))
    except NotInTable:
        pass
    same = 0
    replayed = seen.rows
    for a, b in zip(first["decisions"], replayed, strict=False):
        if a[1:] != b[1:]:
            break
        same += 1
    out = {
        "environment": fingerprint(),
        "budget_s": args.budget,
        "table_best_s": best_s,
        "simulated": {"repeats": args.repeats, "winner_true_s": sim_times},
        "real": [{k: v for k, v in r.items() if k != "decisions"} for r in real],
        "replay": {"seed": first["seed"], "same_first_decisions": same, "real_trials": len(first["decisions"]), "first_difference": None},
    }
    if same < min(len(first["decisions"]), len(replayed)):
        out["replay"]["first_difference"] = {"real": first["decisions"][same], "replayed": replayed[same]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    lines = [
        "# Simulator fidelity",
        "",
        (
            f"{args.studies} real {args.budget:g}-s studies of the default experiment on the table's grid ({args.parallel} at once), "
            f"against {args.repeats} simulated studies of the same budget. Table best: {best_s:.3f} s."
        ),
        "",
        "| real study (seed) | winner's true time (s) | percentile in the simulated distribution |",
        "|---|---|---|",
        *[f"| {r['seed']} | {r['winner_true_s']:.3f} | {r['percentile']:.0f} |" for r in real],
        "",
        (
            f"Simulated winners' true times: median {sim_times[len(sim_times) // 2]:.3f} s, "
            f"10th-90th percentile {sim_times[len(sim_times) // 10]:.3f}-{sim_times[9 * len(sim_times) // 10]:.3f} s."
        ),
        "",
        f"Study {first['seed']} replayed on its own trials with its seed: the first {same} of its {len(first['decisions'])} "
        "finished trials made the same decisions (configuration, outcome, last step)"
        + (
            f"; the first difference: real {out['replay']['first_difference']['real']}, replayed "
            f"{out['replay']['first_difference']['replayed']}."
            if out["replay"]["first_difference"]
            else "."
        ),
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
