"""The newer optimizers and schedule against the best Adam-family configuration, tuned alike.

For a task (``mnist1d-cnn``: the tuned configuration of benchmarks/results/tuned_vs_default.json,
target accuracy 0.9; ``charlm``: experiments/charlm_reference.yaml's configuration, target
loss 2.6), four arms start from the same configuration and differ only in what is compared:

- ``adam family``: the configuration's own optimizer and schedule;
- ``adamw_schedulefree``: Schedule-Free AdamW, constant rate (it needs no horizon);
- ``muon``: Muon on the hidden 2-D weights, AdamW on the rest;
- ``warmup_stable_decay``: the configuration's optimizer with the WSD schedule (5% warm-up,
  a (1 - sqrt) cooldown over the last 20%), its horizon twice the samples the first arm
  took to the target on seed 0.

Each arm gets the same small sweep of the learning rate (the configuration's rate times each
``--lr-factors``, extended past an end where its fastest is at that end) on seed 0, keeps its
fastest rate, and is then trained on ``--seeds`` seeds (0, 1, ...), the arms alternating within
each seed so that the machine's load hits them alike.
Time to target on the cpu clock (what `auto` names with one thread: load barely moves it); a miss counts at
its censored value (tuner/study/scoring/censoring.py). One torch thread, as trials run.

Prints a table and writes benchmarks/results/levers_optimizers_<task>.json and .md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from levers import RESULTS, tuned_config

from tuner.environment import fingerprint
from tuner.study.experiment.load import Objective
from tuner.study.scoring.censoring import objective_value
from tuner.tasks.registry import build_task
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

MAX_EXTENSIONS = 3  # rates past an end of the sweep, where an arm's fastest is at that end
CHARLM_REFERENCE = {"optimizer": "adam", "lr": 3e-3, "batch_size": 32, "width": 1.0, "depth": 2, "heads": 4}


def task_setup(name: str) -> tuple[object, TrialConfig, Objective]:
    if name == "charlm":
        objective = Objective(metric="loss", direction="minimize", target=2.6, eval_every_samples=3200, cap_s=60.0, clock="cpu")
        return build_task("charlm"), TrialConfig.from_params(CHARLM_REFERENCE), objective
    return build_task(name), tuned_config(), Objective(target=0.9, eval_every_samples=2000, cap_s=30.0, clock="cpu")


def arms(base: TrialConfig, horizon: int) -> dict[str, TrialConfig]:
    on = lambda **kw: dataclasses.replace(base, **kw)
    return {
        f"adam family ({base.optimizer}, {base.schedule})": base,
        "adamw_schedulefree": on(optimizer="adamw_schedulefree", schedule="constant"),
        "muon": on(optimizer="muon"),
        "warmup_stable_decay": on(schedule="warmup_stable_decay", warmup_frac=0.05, decay_frac=0.2, horizon_samples=horizon),
    }


def measure(task, config: TrialConfig, objective: Objective, seed: int) -> dict:
    r = train_trial(task, config, objective.stop_rule(), torch.device("cpu"), seed=seed)
    return {"outcome": r.outcome.value, "time_s": objective_value(r, objective), "samples": r.samples_to_target, "lr": config.lr}


def sweep(task, config: TrialConfig, objective: Objective, factors: list[float]) -> tuple[TrialConfig, list[dict]]:
    """The fastest of ``config`` at each rate factor on seed 0, and every run of the sweep, by rate.

    Where the fastest is at an end of the sweep, the sweep goes on past that end, doubling (or
    halving) the rate, up to ``MAX_EXTENSIONS`` times: an arm whose best rate is its sweep's top
    one has not been given its best rate, and would lose for that alone."""
    runs = {f: measure(task, dataclasses.replace(config, lr=config.lr * f), objective, 0) for f in factors}
    for _ in range(MAX_EXTENSIONS):
        best = min(runs, key=lambda f: runs[f]["time_s"])
        if best not in (min(runs), max(runs)):
            break
        f = best * 2 if best == max(runs) else best / 2
        runs[f] = measure(task, dataclasses.replace(config, lr=config.lr * f), objective, 0)
    best = min(runs, key=lambda f: runs[f]["time_s"])
    return dataclasses.replace(config, lr=config.lr * best), [runs[f] for f in sorted(runs)]


def compare(name: str, seeds: int, factors: list[float]) -> dict:
    task, base, objective = task_setup(name)
    first, first_sweep = sweep(task, base, objective, factors)
    samples = next((r["samples"] for r in first_sweep if r["lr"] == first.lr), None) or base.horizon_samples
    chosen, sweeps = {}, {}
    for arm, config in arms(base, horizon=2 * samples).items():
        chosen[arm], sweeps[arm] = (first, first_sweep) if config == base else sweep(task, config, objective, factors)
        swept = ", ".join(f"{r['lr']:.3g}: {r['time_s']:.1f}" for r in sweeps[arm])
        print(f"{name}: {arm}: lr {chosen[arm].lr:.3g} from the sweep (rate: s) {swept}", flush=True)
    results: dict[str, list[dict]] = {arm: [] for arm in chosen}
    for seed in range(seeds):
        for arm, config in chosen.items():  # alternating arms within a seed
            results[arm].append(measure(task, config, objective, seed))
    rows = []
    for arm, runs in results.items():
        times = [r["time_s"] for r in runs]
        rows.append(
            {
                "arm": arm,
                "lr": chosen[arm].lr,
                "median_s": statistics.median(times),
                "times_s": times,
                "reached": sum(r["outcome"] == "reached" for r in runs),
                "sweep_s": [r["time_s"] for r in sweeps[arm]],
                "sweep_lr": [r["lr"] for r in sweeps[arm]],
            }
        )
    reference = rows[0]["median_s"]
    for row in rows:
        row["ratio"] = row["median_s"] / reference
        print(f"{name}: {row['arm']:40} median {row['median_s']:.3f} s x{row['ratio']:.2f}; reached {row['reached']}/{seeds}", flush=True)
    return {"task": name, "seeds": seeds, "lr_factors": factors, "wsd_horizon_samples": 2 * samples, "rows": rows}


def markdown(result: dict) -> str:
    lines = [
        f"{result['task']}: median time to target over {result['seeds']} seeds (cpu clock, s; a miss at its censored value)",
        "",
        "| arm | lr (after the sweep) | median s | ratio to the Adam family | per seed | reached | the sweep on seed 0 (rate: s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        per = ", ".join(f"{t:.2f}" for t in r["times_s"])
        swept = ", ".join(f"{lr:.3g}: {t:.1f}" for lr, t in zip(r.get("sweep_lr", []), r["sweep_s"], strict=False))
        reached = f"{r['reached']}/{result['seeds']}"
        lines.append(f"| {r['arm']} | {r['lr']:.3g} | {r['median_s']:.3f} | {r['ratio']:.2f}x | {per} | {reached} | {swept} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=["mnist1d-cnn", "charlm"], default="mnist1d-cnn")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per arm after the sweep (default 5)")
    parser.add_argument("--lr-factors", default="0.5,1,2", help="the sweep: the configuration's rate times each (default 0.5,1,2)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.time()
    result = compare(args.task, args.seeds, [float(f) for f in args.lr_factors.split(",")])
    result.update(
        minutes=(time.time() - started) / 60,
        environment=fingerprint(),
        note="one torch thread; arms alternating within each seed; a shared 2-core CPU unless the environment says otherwise",
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = f"levers_optimizers_{args.task.replace('-', '_')}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (RESULTS / f"{stem}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
