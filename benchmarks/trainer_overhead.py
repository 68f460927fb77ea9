"""Trainer throughput against a plain PyTorch loop: same model, data, optimizer and batch.

Runs the two alternately, several times each, on one fixed configuration for a fixed
number of training samples, and prints the median throughput of each and their ratio
(trainer / plain; 1.0 means no overhead). Results go to benchmarks/results/trainer_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from tuner.environment import fingerprint
from tuner.tasks import build_task
from tuner.train.optimizers import build_optimizer
from tuner.train.time_to_target import StopRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

RESULTS = Path(__file__).parent / "results" / "trainer_overhead.json"


def plain_loop(task, config: TrialConfig, samples: int, seed: int) -> float:
    """What a user writes by hand; returns training samples per second."""
    torch.manual_seed(seed)
    x, y = task.train_x, task.train_y
    model = task.build_model(config.width)
    optimizer = build_optimizer(model.parameters(), config, torch.device("cpu"))
    generator = torch.Generator().manual_seed(seed)
    n, batch, seen = len(x), config.batch_size, 0
    model.train()
    start = time.perf_counter()
    while seen < samples:
        order = torch.randperm(n, generator=generator)
        for i in range(0, n - batch + 1, batch):
            idx = order[i : i + batch]
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += batch
            if seen >= samples:
                break
    return seen / (time.perf_counter() - start)


def trainer_run(task, config: TrialConfig, samples: int, seed: int, eval_every: int) -> float:
    # An unreachable target and a sample limit make the trainer run exactly `samples`.
    rule = StopRule(target=1.0, eval_every_samples=eval_every, cap_s=1e6, max_samples=samples)
    result = train_trial(task, config, rule, torch.device("cpu"), seed=seed)
    return result.samples / result.train_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", default="mnist1d-cnn")
    parser.add_argument("--samples", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--eval-every", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    task = build_task(args.task)
    config = TrialConfig()  # the paper's default: Adam 1e-2, batch 100, fp32, width 1
    trainer_runs, plain_runs = [], []
    trainer_run(task, config, 2000, 0, args.eval_every)  # warm-up: first-call costs hit neither side
    plain_loop(task, config, 2000, 0)
    for rep in range(args.repeats):
        trainer_runs.append(trainer_run(task, config, args.samples, rep, args.eval_every))
        plain_runs.append(plain_loop(task, config, args.samples, rep))
        print(f"repeat {rep}: trainer {trainer_runs[-1]:,.0f} samples/s, plain {plain_runs[-1]:,.0f} samples/s")
    trainer_median, plain_median = statistics.median(trainer_runs), statistics.median(plain_runs)
    ratio = trainer_median / plain_median
    # On a shared machine the load drifts between repeats; a repeat's two runs sit side by
    # side in time, so the median of their ratios is the steadier figure of the two.
    paired = statistics.median(t / p for t, p in zip(trainer_runs, plain_runs))
    print(
        f"median over {args.repeats} alternating runs: trainer {trainer_median:,.0f}, plain {plain_median:,.0f} samples/s; "
        f"ratio {ratio:.3f} (median of the repeats' own ratios {paired:.3f})"
    )
    env = fingerprint()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "task": args.task,
                "config": config.as_dict(),
                "samples": args.samples,
                "repeats": args.repeats,
                "eval_every_samples": args.eval_every,
                "threads": args.threads,
                "trainer_samples_per_s": trainer_runs,
                "plain_samples_per_s": plain_runs,
                "trainer_median": trainer_median,
                "plain_median": plain_median,
                "ratio": ratio,
                "paired_ratio_median": paired,
                "machine": {k: env[k] for k in ("cpu", "cores", "gpu", "torch", "python")},
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
