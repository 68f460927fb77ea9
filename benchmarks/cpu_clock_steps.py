"""The cpu clock's reading of the training thread's steps, idle and beside busy processes.

The paper's default CNN (MNIST-1D, to 90%) is trained on each seed twice, as the machine is
and beside --burners CPU-burning processes, alternating. Every optimizer step's CPU time
and host time are recorded (a wrapper around ``TimeToTarget.step`` reads both clocks; the
training itself is tuner's). Per evaluation interval each estimator turns the interval's
steps into one time per step; the clock is steps to target x the median over intervals:

  mean        the interval's mean (the cpu clock before it left interrupted steps out)
  unswitched  the mean over the steps the scheduler did not interrupt (no involuntary
              context switch during the step; all steps when fewer than 3 are left):
              what the cpu clock reads now (tuner/train/clocks.py: interval_cpu_step_s)
  q10, q25, q50   the interval's 10th, 25th and 50th percentile step
  clock       what the trial recorded on the cpu and robust clocks

and prints, per estimator, loaded / idle seed by seed and as a ratio of medians
(``switched_share``: the share of steps interrupted, loaded over idle). With
--background N, N processes multiply large matrices throughout, idle and loaded runs alike:
a host other jobs keep busy, whose caches and memory bandwidth they share.

Writes benchmarks/results/cpu_clock_steps.json (--output names another). About a minute per
seed on a quiet 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

import torch
from clock_noise import start_burners, stop_burners  # a sibling script, found through the script's folder

from tuner.environment import fingerprint
from tuner.tasks.registry import build_task
from tuner.train.time_to_target import StopRule, TimeToTarget
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
MULTIPLY = "import torch\ntorch.set_num_threads(1)\na = torch.randn(1500, 1500)\nwhile True:\n    a = a @ a\n    a = a / a.norm()\n"
RULE = StopRule(target=0.9, eval_every_samples=2000, cap_s=120.0, clock="cpu")
QUANTILES = (0.1, 0.25, 0.5)


class StepLog:
    """Host and thread CPU time at every step and evaluation of the trials it wraps."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float, float, int]] = []
        step, evaluate = TimeToTarget.step, TimeToTarget.evaluate

        def logged_step(tt: TimeToTarget, batch_samples: int) -> bool:
            self.marks.append(("step", time.perf_counter(), time.thread_time(), switches()))
            return step(tt, batch_samples)

        def logged_evaluate(tt: TimeToTarget, *args, **kwargs) -> bool:
            self.marks.append(("evaluate", time.perf_counter(), time.thread_time(), switches()))
            return evaluate(tt, *args, **kwargs)

        TimeToTarget.step, TimeToTarget.evaluate = logged_step, logged_evaluate

    def intervals(self) -> list[list[tuple[float, float, int]]]:
        """(host s, CPU s, involuntary switches) of each step, grouped by evaluation interval; a step next to an evaluation is left out."""
        found, current = [], []
        for (kind0, host0, cpu0, sw0), (kind1, host1, cpu1, sw1) in zip(self.marks, self.marks[1:]):
            if kind1 == "evaluate":
                found.append(current)
                current = []
            elif kind0 == "step":
                current.append((host1 - host0, cpu1 - cpu0, sw1 - sw0))
        return [iv for iv in found if iv]


def switches() -> int:
    """Times the scheduler took this thread's core away (involuntary context switches)."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw


def unswitched_mean(iv: list[tuple[float, float, int]], i: int, least: int = 3) -> float:
    """The mean over the interval's steps the scheduler did not interrupt (all of them when fewer than ``least`` were not)."""
    kept = [s[i] for s in iv if s[2] == 0]
    return statistics.mean(kept if len(kept) >= least else [s[i] for s in iv])


def estimators(intervals: list[list[tuple[float, float, int]]], steps: int) -> dict[str, float]:
    out = {"switched_share": sum(s[2] > 0 for iv in intervals for s in iv) / max(1, sum(len(iv) for iv in intervals))}
    for name, i in (("host", 0), ("cpu", 1)):
        out[f"{name}_mean"] = steps * statistics.median(statistics.mean(s[i] for s in iv) for iv in intervals)
        out[f"{name}_unswitched"] = steps * statistics.median(unswitched_mean(iv, i) for iv in intervals)
        out[f"{name}_unswitched1"] = steps * statistics.median(unswitched_mean(iv, i, 1) for iv in intervals)
        for q in QUANTILES:
            out[f"{name}_q{round(q * 100)}"] = steps * statistics.median(sorted(s[i] for s in iv)[int(q * len(iv))] for iv in intervals)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--background", type=int, default=0, help="processes multiplying matrices throughout")
    parser.add_argument("--output", type=Path, default=RESULTS / "cpu_clock_steps.json")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    torch.set_num_threads(1)
    task = build_task("mnist1d-cnn")
    log = StepLog()
    background = start_burners(args.background, MULTIPLY)
    runs = []
    try:
        for seed in seeds:
            for load in ("idle", "loaded"):
                burners = start_burners(args.burners) if load == "loaded" else []
                time.sleep(0.3)  # the burners take their cores
                log.marks.clear()
                try:
                    r = train_trial(task, TrialConfig(), RULE, torch.device("cpu"), seed=seed)
                finally:
                    stop_burners(burners)
                run = estimators(log.intervals(), r.steps_to_target or r.steps)
                run.update(clock_cpu=r.elapsed("cpu"), clock_robust=r.elapsed("robust"), reached=r.reached, seed=seed, load=load)
                runs.append(run)
                print(f"seed={seed} {load:<6} " + " ".join(f"{k}={v:.3f}" for k, v in run.items() if isinstance(v, float)), flush=True)
    finally:
        stop_burners(background)
    ratios = {}
    print(f"loaded / idle, seeds {seeds}, {args.burners} burners, {args.background} background:")
    for key in [k for k, v in runs[0].items() if isinstance(v, float)]:
        side = {load: {r["seed"]: r[key] for r in runs if r["load"] == load} for load in ("idle", "loaded")}
        per_seed = [side["loaded"][s] / side["idle"][s] for s in seeds]
        medians = statistics.median(side["loaded"].values()) / statistics.median(side["idle"].values())
        ratios[key] = {"per_seed": per_seed, "medians": medians}
        print(f"  {key:<13} {' '.join(f'{x:.2f}' for x in per_seed)}   medians {medians:.2f}")
    settings = {k: str(v) for k, v in vars(args).items()}
    args.output.write_text(json.dumps({"machine": fingerprint(), "args": settings, "runs": runs, "ratios": ratios}, indent=1))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
