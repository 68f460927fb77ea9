"""`tuner simulate`: the experiment's study replayed on a table of recorded trials, many times over.

Nothing trains: each trial replays a recorded one on a virtual clock (tuner/simulate/), so a
study of any length with any number of workers runs in seconds, and its
strategy (the experiment's sampler, pruner, cap, screen, racing, confirmation and baseline)
is judged over many repeats instead of a few noisy real studies.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from tuner.errors import ConfigError
from tuner.simulate.fit import check_table
from tuner.simulate.proxy_tables import check_proxy_tables
from tuner.simulate.repeats import Plan, budget_of, run_repeats
from tuner.simulate.report import no_winner_line, results, summary_line, write_results
from tuner.simulate.simulation import Replay
from tuner.simulate.table import NotInTable, Table, load_table
from tuner.study.run.experiment_file import load_experiment


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="replay the experiment's study on a table of recorded trials, many times, and report its regret")
    p.add_argument("experiment", help="experiment YAML: its objective, strategy and budget")
    p.add_argument("--table", required=True, help="a table of recorded trials (benchmarks/record_table.py writes one)")
    p.add_argument(
        "--proxy-table",
        default=None,
        help="a proxy study's: the table its search replays, where --table lacks the proxy's fidelity (default: --table)",
    )
    p.add_argument("--repeats", type=int, default=10, help="studies to simulate, seeds SEED, SEED+1, ... (default: 10)")
    p.add_argument("--workers", type=int, default=1, help="asynchronous workers on each study (default: 1)")
    p.add_argument("--seed", type=int, default=None, help="the first repeat's seed (default: the experiment's)")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="a time budget of this many typical trials (the table's median trial; a proxy study's: at the job's fidelity)",
    )
    p.add_argument("--n-trials", type=int, default=None, help="searched configurations per study, instead of the experiment's budget")
    p.add_argument("--timeout", type=float, default=None, help="virtual seconds per study, instead of the experiment's budget")
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiply every recorded time (600: a 0.5-s trial lasts 5 minutes); the experiment states the scaled job's cap_s",
    )
    p.add_argument("--overhead", type=float, default=0.0, help="seconds of start-up added to each trial (data loading, a container)")
    p.add_argument("--processes", type=int, default=None, help="processes sharing the repeats (default: the cores)")
    p.add_argument("--out", type=Path, default=None, help="write OUT.json, OUT.md and OUT.png (default: simulate-<study name>)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the results on stdout (the rest goes to stderr)")
    p.set_defaults(handler=main)


def _table(path: str, flag: str) -> Table:
    try:
        return load_table(path)
    except ValueError as err:
        raise ConfigError("tuner simulate", flag, "a table of recorded trials", str(err)) from None


def main(args: argparse.Namespace) -> int:
    for flag in ("repeats", "workers"):
        if getattr(args, flag) < 1:
            raise ConfigError("tuner simulate", f"--{flag}", "an integer >= 1", getattr(args, flag))
    if args.time_scale <= 0 or args.overhead < 0:
        raise ConfigError("tuner simulate", "--time-scale/--overhead", "a scale > 0 and an overhead >= 0", (args.time_scale, args.overhead))
    experiment = load_experiment(args.experiment)
    table = _table(args.table, "--table")
    replay = Replay(args.workers, args.time_scale, args.overhead)
    check_table(experiment, table, replay.time_scale)
    if experiment.proxy is not None:
        proxy_table = _table(args.proxy_table, "--proxy-table") if args.proxy_table is not None else table
        check_proxy_tables(experiment, table, proxy_table, replay.workers)
    elif args.proxy_table is not None:
        raise ConfigError(args.experiment, "proxy", "a proxy: section, for a --proxy-table to replay its search", None)
    timeout_s = budget_of(table, replay, args.budget, experiment) if args.budget is not None else args.timeout
    experiment = experiment.with_overrides(n_trials=args.n_trials, timeout_s=timeout_s)
    if experiment.budget.timeout_s is None and experiment.budget.n_trials is None:
        raise ConfigError(args.experiment, "budget", "n_trials or timeout_s (or --budget, --n-trials, --timeout)", None)
    seed = experiment.seed if args.seed is None else args.seed
    proxy_table_path = Path(args.proxy_table) if args.proxy_table is not None else None
    plan = Plan(experiment, Path(args.table), replay, args.repeats, seed, proxy_table_path=proxy_table_path)
    started = time.perf_counter()
    try:
        studies = run_repeats(plan, args.processes)
    except NotInTable as err:
        allowed = f"a recorded trial of every configuration the study runs ({err.held} held)"
        raise ConfigError(err.source, "trials", allowed, err.shown) from None
    elapsed = time.perf_counter() - started
    settings = {
        "experiment": args.experiment,
        "table": args.table,
        "budget": dataclasses.asdict(experiment.budget),
        "trial_length_s": budget_of(table, replay, 1.0, experiment),
        # The budget rule's constants are the shipped ones from here (benchmarks/leave_one_out.py varies them).
        **{k: v for k, v in dataclasses.asdict(replay).items() if k != "rule"},
        "repeats": args.repeats,
        "seed": seed,
        "elapsed_s": round(elapsed, 2),
    }
    result = results(experiment.name, studies, settings)
    out = args.out or Path(f"simulate-{experiment.name}")
    budget_s = experiment.budget.timeout_s or max(s.end_s for s in studies)
    paths = write_results([result], out, f"# `tuner simulate {args.experiment}` on {args.table}", budget_s)
    stream = sys.stderr if args.json else sys.stdout
    print(summary_line(result), file=stream)
    if (hint := no_winner_line(result, experiment.proxy is not None)) is not None:
        print(hint, file=stream)
    print(f"{args.repeats} studies in {elapsed:.1f} s; written: {', '.join(map(str, paths))}", file=stream)
    if args.json:
        print(json.dumps({"summary": result["summary"], "settings": settings}))
    return 0
