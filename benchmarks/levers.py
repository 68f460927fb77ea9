"""Each efficiency lever against its off setting on the same configuration.

For the default CNN task (MNIST-1D, target 0.9; the tuned configuration of
benchmarks/results/tuned_vs_default.json) and, with ``--image-folder``, the image-folder
task (generated PNGs, residual CNN), every lever is trained against the same configuration
with the lever off, alternating sides, ``--runs`` times each (seeds 0, 1, ...): throughput
(samples per second from the median step time) and time to target on the robust clock,
with torch.compile's one-time setup shown apart and charged. Medians over the runs; a run
that missed counts at its censored value (tuner/study/scoring/censoring.py). One torch thread, as
trials run by default.

Prints a table and writes benchmarks/results/levers.json and levers.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuner.environment import fingerprint
from tuner.study.experiment.load import Objective
from tuner.study.scoring.censoring import objective_value
from tuner.tasks.registry import build_task
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

RESULTS = REPO / "benchmarks" / "results"


def tuned_config() -> TrialConfig:
    tuned = RESULTS / "tuned_vs_default.json"
    params = json.loads(tuned.read_text())["tuned_config"] if tuned.exists() else {"lr": 0.01, "batch_size": 100}
    return TrialConfig.from_params(params)


def levers(base: TrialConfig, convolutional_2d: bool) -> list[tuple[str, TrialConfig, TrialConfig]]:
    """(lever, off, on): the same configuration with only the lever changed."""
    on = lambda **kw: dataclasses.replace(base, **kw)
    double = dataclasses.replace(base, batch_size=base.batch_size * 2)
    rows = [
        ("compile: default", base, on(compile="default")),
        ("compile: max-autotune-no-cudagraphs", base, on(compile="max-autotune-no-cudagraphs")),
        ("accumulate: 2 (same effective batch)", base, on(accumulate=2)),
        # At twice the batch, the same lr against the lr scaled by the rule (lr read per 256 samples).
        ("batch x2, lr_scaling: linear", double, dataclasses.replace(double, lr_scaling="linear", lr=base.lr * 256 / base.batch_size)),
        ("batch x2, lr_scaling: sqrt", double, dataclasses.replace(double, lr_scaling="sqrt", lr=base.lr * (256 / base.batch_size) ** 0.5)),
        ("growing batch: ramp_start 0.25, ramp_frac 0.2", base, on(ramp_start=0.25, ramp_frac=0.2)),
    ]
    if convolutional_2d:
        rows.insert(2, ("channels_last", base, on(channels_last=True)))
    return rows


def measure(task, config: TrialConfig, objective: Objective, seed: int) -> dict:
    r = train_trial(task, config, objective.stop_rule(), torch.device("cpu"), seed=seed)
    return {
        "outcome": r.outcome.value,
        "throughput": r.throughput,
        "compile_s": r.compile_s,
        "time_s": objective_value(r, dataclasses.replace(objective, charge_setup=False)),
        "charged_s": objective_value(r, objective),
    }


def compare(name: str, task, rows, objective: Objective, runs: int) -> list[dict]:
    table = []
    for lever, off, on in rows:
        sides: dict[str, list[dict]] = {"off": [], "on": []}
        for seed in range(runs):  # alternate so the machine's load hits both sides alike
            sides["off"].append(measure(task, off, objective, seed))
            sides["on"].append(measure(task, on, objective, seed))
        row = {"task": name, "lever": lever, "runs": runs}
        for side, results in sides.items():
            row[side] = {
                "throughput": statistics.median(r["throughput"] or 0.0 for r in results),
                "time_s": statistics.median(r["time_s"] for r in results),
                "charged_s": statistics.median(r["charged_s"] for r in results),
                "compile_s": statistics.median(r["compile_s"] for r in results),
                "compile_s_max": max(r["compile_s"] for r in results),  # the first compilation in this process: later ones reuse its graphs
                "reached": sum(r["outcome"] == "reached" for r in results),
            }
        row["throughput_ratio"] = row["on"]["throughput"] / row["off"]["throughput"] if row["off"]["throughput"] else None
        row["time_ratio"] = row["on"]["time_s"] / row["off"]["time_s"]
        row["charged_ratio"] = row["on"]["charged_s"] / row["off"]["charged_s"]
        print(
            f"{name:12} {lever:48} throughput x{row['throughput_ratio']:.2f}  time to target "
            f"{row['off']['time_s']:.3f} -> {row['on']['time_s']:.3f} s (x{row['time_ratio']:.2f}), with compilation charged "
            f"x{row['charged_ratio']:.2f}; reached {row['off']['reached']}/{runs} -> {row['on']['reached']}/{runs}",
            flush=True,
        )
        table.append(row)
    return table


def markdown(rows: list[dict]) -> str:
    lines = [
        (
            "| task | lever | throughput on/off | time to target off -> on (robust, s) | ratio | compile s (median, first) | "
            "ratio, compile charged | reached off/on |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['lever']} | {r['throughput_ratio']:.2f}x | {r['off']['time_s']:.3f} -> {r['on']['time_s']:.3f} | "
            f"{r['time_ratio']:.2f}x | {r['on']['compile_s']:.2f}, {r['on']['compile_s_max']:.2f} | {r['charged_ratio']:.2f}x | "
            f"{r['off']['reached']}/{r['on']['reached']} of {r['runs']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="alternating runs per side (default 3)")
    parser.add_argument("--image-folder", action="store_true", help="also the image-folder task (generated PNGs; minutes per run)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.time()
    base = tuned_config()
    cnn = build_task("mnist1d-cnn")
    table = compare(
        "mnist1d-cnn",
        cnn,
        levers(base, convolutional_2d=False),
        Objective(target=0.9, eval_every_samples=2000, cap_s=30.0, clock="robust"),
        args.runs,
    )
    if args.image_folder:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [sys.executable, str(REPO / "scripts" / "make_image_folder.py"), "--out", tmp, "--n", "2000"],
                check=True,
                capture_output=True,
            )
            images = build_task("image-folder", {"path": tmp})
            config = TrialConfig(optimizer="adamw", lr=3e-3, batch_size=64, width=0.25, cache="memory")
            table += compare(
                "image-folder",
                images,
                levers(config, convolutional_2d=True),
                Objective(target=0.3, eval_every_samples=1600, cap_s=120.0, clock="robust"),
                args.runs,
            )
    out = {
        "rows": table,
        "minutes": (time.time() - started) / 60,
        "environment": fingerprint(),
        "note": (
            f"{args.runs} alternating runs per side, medians; one torch thread; a shared 2-core CPU unless the environment says otherwise"
        ),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "levers.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
    (RESULTS / "levers.md").write_text(markdown(table))
    print(markdown(table))


if __name__ == "__main__":
    main()
