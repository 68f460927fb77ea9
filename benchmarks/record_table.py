"""Record a table of learning curves: a grid of the default experiment's configurations, each
trained on a few seeds to the target or the cap, every evaluation kept on every clock.

    python benchmarks/record_table.py --workers 2            # records, resumes where it stopped
    python benchmarks/record_table.py --pack                 # writes benchmarks/tables/mnist1d_cnn.json.gz

No pruning, no capping at an incumbent, no deadline: a trial ends at the first crossing of the
target or at the experiment's per-trial cap (``objective.cap_s``), as a trial of a study would
without the study's rules. Its throughput pre-screen times the usual window and never stops
it, so a replay can time its screen as this trial's was (``screen_step_s``). Each worker uses
one torch thread and appends one JSON line per trial to its own part file; a re-run skips
what the parts hold. ``--pack`` gathers the parts into the table `tuner simulate` replays
(tuner/simulate/table.py), with the grid, the objective and the machine it was recorded on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# 3 optimizers x 5 learning rates x 4 batch sizes x 2 schedules x 3 widths = 360 configurations,
# in fp32: the size that records in about an hour with two workers on a shared 2-core CPU, where
# bf16 only runs slower (a GPU's table would grid it too). The rest of each configuration is the
# default space's default.
GRID: dict[str, list] = {
    "optimizer": ["adam", "adamw", "nadam"],
    "lr": [0.0025, 0.0063, 0.016, 0.04, 0.1],
    "batch_size": [32, 64, 128, 256],
    "schedule": ["constant", "warmup_cosine"],
    "width": [0.5, 1.0, 2.0],
    "precision": ["fp32"],
}
# What every configuration of the grid shares (a schedule's warm-up and horizon).
FIXED = {"warmup_frac": 0.1, "horizon_samples": 60_000}
SEEDS = (0, 1)


def grid_configs() -> list[dict]:
    """Every configuration of the grid, in a fixed shuffled order, so that a table cut short covers it evenly."""
    configs = [dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())]
    random.Random(0).shuffle(configs)
    return configs


def baseline_values(experiment_path: str) -> dict:
    """The grid dimensions of the experiment's baseline configuration, recorded beside the grid so that a
    simulated study's baseline runs replay it (its other fields are the baseline's own, not ``FIXED``)."""
    from tuner.study.experiment.load import load_experiment
    from tuner.study.reruns.baseline import baseline_configuration

    base = baseline_configuration(load_experiment(experiment_path))
    return {d: getattr(base, d) for d in GRID}


def trial_config(values: dict, baseline: dict, experiment):
    from tuner.study.reruns.baseline import baseline_configuration
    from tuner.train.trial_config import TrialConfig

    return baseline_configuration(experiment) if values == baseline else TrialConfig.from_params({**FIXED, **values})


def in_grid(config: dict) -> bool:
    return all(config.get(d) in values for d, values in GRID.items())


def key(config: dict, seed: int) -> str:
    return json.dumps({**config, "seed": seed}, sort_keys=True)


def done_keys(out: Path) -> set[str]:
    done = set()
    for part in out.glob("part-*.jsonl"):
        for line in part.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a killed worker: recorded again
            done.add(key(row["config"], row["seed"]))
    return done


def record(worker: int, items: list[tuple[dict, int]], experiment_path: str, out: Path) -> None:
    import torch

    from tuner.simulate.record import record_trial
    from tuner.simulate.table import trial_row
    from tuner.study.experiment.load import load_experiment
    from tuner.tasks.registry import build_task

    torch.set_num_threads(1)
    experiment = load_experiment(experiment_path)
    task = build_task(experiment.task, experiment.task_options)
    baseline = baseline_values(experiment_path)
    with (out / f"part-{worker}.jsonl").open("a") as sink:
        for n, (config, seed) in enumerate(items, 1):
            result = record_trial(experiment, task, trial_config(config, baseline, experiment), seed)
            sink.write(json.dumps(trial_row(config, seed, result)) + "\n")
            sink.flush()
            print(f"worker {worker}: {n}/{len(items)} {result.outcome.value} {result.wall_s:.2f} s", flush=True)


def pack(out: Path, experiment_path: str, table: Path) -> None:
    from tuner.environment import fingerprint
    from tuner.simulate.table import write_table
    from tuner.study.experiment.load import load_experiment

    rows, seen, baseline = [], set(), baseline_values(experiment_path)
    for part in sorted(out.glob("part-*.jsonl")):
        for line in part.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            k = key(row["config"], row["seed"])
            if k not in seen and (row["config"] == baseline or in_grid(row["config"])):
                seen.add(k)
                rows.append(row)
    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    experiment = load_experiment(experiment_path)
    write_table(table, experiment, GRID, FIXED, rows, {**meta, "environment": fingerprint()})
    print(f"{table}: {len(rows)} trials of {(len(grid_configs()) + 1) * len(SEEDS)} (the grid and the baseline)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(REPO / "experiments/mnist1d_cnn.yaml"))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/tables/parts")
    parser.add_argument("--table", type=Path, default=REPO / "benchmarks/tables/mnist1d_cnn.json.gz")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="record at most this many trials (a trial run)")
    parser.add_argument("--pack", action="store_true", help="gather the parts into the table and stop")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.pack:
        pack(args.out, args.experiment, args.table)
        return
    meta_path = args.out / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "workers": []}
    meta["workers"].append(args.workers)
    meta_path.write_text(json.dumps(meta))
    done = done_keys(args.out)
    configs = [baseline_values(args.experiment), *grid_configs()]
    todo = [(c, s) for c in configs for s in SEEDS if key(c, s) not in done][: args.limit]
    print(f"{len(done)} recorded, {len(todo)} to record with {args.workers} workers", flush=True)
    procs = [mp.Process(target=record, args=(w, todo[w :: args.workers], args.experiment, args.out)) for w in range(args.workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()


if __name__ == "__main__":
    main()
