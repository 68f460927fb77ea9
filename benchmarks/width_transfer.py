"""Does a learning rate found at one width hold at another? The time-to-target optimum of the rate
across widths, under the standard parametrization and under muP (tuner/train/mup.py), and across
horizons under a warmup-stable-decay schedule (muP, at ``--horizon-width``).

For each arm, width (or horizon) and rate, the task's reference configuration is trained on
``--seeds`` seeds to the experiment's target (or ``--target``); a run is scored by its training
samples to the target (the time to target over the step time, which the rate does not change, so
the optimum is the same and the machine's load cannot move it; the cpu-clock seconds are kept
beside). A miss scores the sample limit. The optimum of a width is the rate with the fewest median
samples. The optimum should stay put across widths under muP and drift under the standard
parametrization. Results: ``benchmarks/results/width_transfer_TASK.{json,md,png}``.

    python benchmarks/width_transfer.py --experiment experiments/charlm_reference.yaml
    python benchmarks/width_transfer.py --experiment experiments/mnist1d_cnn_paper_default.yaml
    python benchmarks/width_transfer.py --experiment experiments/charlm_reference.yaml --arms mup --mup-base 0.5 \
        --widths 0.5 1 2 --lrs 0.002 0.004 0.008 0.016 0.032 --target 3.0 --max-samples 16000 --name charlm_base0.5
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import torch

from tuner.study.reruns.baseline import baseline_configuration
from tuner.study.run.experiment_file import load_experiment
from tuner.tasks.registry import build_task
from tuner.train.target import Target
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def reference(experiment_path: str) -> tuple[object, TrialConfig]:
    """The experiment and the configuration it fixes (its search space's values over the defaults)."""
    experiment = load_experiment(experiment_path)
    fixed = experiment.search_space.fixed_params() or {}
    fields = {k: v for k, v in fixed.items() if k in TrialConfig.__dataclass_fields__}
    config = dataclasses.replace(baseline_configuration(experiment), **fields)
    return experiment, config


def run(task, config: TrialConfig, rule, seed: int) -> dict:
    result = train_trial(task, config, rule, torch.device("cpu"), seed=seed)
    return {
        "outcome": result.outcome.value,
        "samples": result.samples_to_target,
        "cpu_s": result.time_to_target("cpu"),
    }


def earlier_rows(path: str) -> list[dict]:
    """The rows an earlier run printed (one JSON object a line), so that an interrupted sweep goes on."""
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.startswith("{") and '"sweep"' in line:
            rows.append(json.loads(line))
    return rows


def row_key(r: dict) -> tuple:
    return (r["sweep"], r["arm"], r.get("width", r.get("horizon")), r["lr"], r["seed"])


NEAR = 1.05  # rates within this factor of the best median are near-best: a tie on a coarse grid


def optimum(rows: list[dict], limit: int) -> tuple[float | None, float, list[float]]:
    """The rate with the fewest median samples to target (misses at ``limit``), that median, and
    the rates whose median is within ``NEAR`` of it."""
    by_lr: dict[float, list[float]] = {}
    for r in rows:
        by_lr.setdefault(r["lr"], []).append(r["samples"] if r["samples"] is not None else limit)
    medians = {lr: statistics.median(v) for lr, v in by_lr.items()}
    best = min(medians, key=lambda lr: (medians[lr], lr))
    if medians[best] >= limit:
        return None, medians[best], []
    return best, medians[best], sorted(lr for lr, m in medians.items() if m <= medians[best] * NEAR)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", required=True, help="an experiment that fixes the reference configuration")
    parser.add_argument("--widths", type=float, nargs="*", default=[0.25, 0.5, 1.0, 2.0], help="none: the horizon sweep alone")
    parser.add_argument("--lrs", type=float, nargs="+", help="rates to sweep (default: 7 from ref/8 to ref*8, x2 apart)")
    parser.add_argument("--horizons", type=float, nargs="*", default=[], help="horizon multiples to sweep at width 1 (WSD schedule)")
    parser.add_argument("--horizon-samples", type=int, default=None, help="the horizon at multiple 1 (default: the sample limit / 2)")
    parser.add_argument("--horizon-width", type=float, default=1.0, help="the width the horizon sweep trains at")
    parser.add_argument("--target", type=float, help="the target (default: the experiment's)")
    parser.add_argument("--max-samples", type=int, required=True, help="a run that has not reached by then is a miss")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--arms", nargs="+", default=["standard", "mup"])
    parser.add_argument("--mup-base", type=float, default=1.0, help="muP's base width (a proxy study's: the proxy's width)")
    parser.add_argument("--name", help="results file stem (default: the task's name)")
    parser.add_argument("--resume", help="the printed rows of an earlier run of the same sweep: runs already there are not trained again")
    args = parser.parse_args()
    torch.set_num_threads(1)

    experiment, base = reference(args.experiment)
    objective = experiment.objective
    if args.target is not None:
        objective = dataclasses.replace(objective, target=args.target)
    rule = dataclasses.replace(objective.stop_rule(), cap_s=1e9, max_samples=args.max_samples, clock="cpu")
    task = build_task(experiment.task, experiment.task_options)
    lrs = args.lrs or [base.lr * 2.0**k for k in range(-3, 4)]
    name = args.name or experiment.task
    rows: list[dict] = earlier_rows(args.resume) if args.resume else []
    done = {row_key(r) for r in rows}
    started = time.perf_counter()
    for seed in range(args.seeds):  # seed-major, arms alternating: the machine's drift hits every cell alike
        for width in args.widths:
            for lr in lrs:
                for arm in args.arms:
                    if ("width", arm, width, lr, seed) in done:
                        continue
                    config = dataclasses.replace(base, width=width, lr=lr, parametrization=arm, mup_base=args.mup_base)
                    row = {"sweep": "width", "arm": arm, "width": width, "lr": lr, "seed": seed, **run(task, config, rule, seed)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        for mult in args.horizons:
            horizon = round((args.horizon_samples or args.max_samples // 2) * mult)
            for lr in lrs:
                if ("horizon", "wsd", mult, lr, seed) in done:
                    continue
                config = dataclasses.replace(
                    base,
                    width=args.horizon_width,
                    lr=lr,
                    schedule="warmup_stable_decay",
                    horizon_samples=horizon,
                    parametrization="mup",
                    mup_base=args.mup_base,
                )
                row = {"sweep": "horizon", "arm": "wsd", "horizon": mult, "horizon_samples": horizon, "lr": lr, "seed": seed}
                row |= run(task, config, rule, seed)
                rows.append(row)
                print(json.dumps(row), flush=True)

    table = []
    for arm in args.arms:
        for width in args.widths:
            cell = [r for r in rows if r["sweep"] == "width" and r["arm"] == arm and r["width"] == width]
            best, samples, near = optimum(cell, args.max_samples)
            table.append({"sweep": "width", "arm": arm, "at": width, "best_lr": best, "median_samples": samples, "near_best": near})
    for mult in args.horizons:
        best, samples, near = optimum([r for r in rows if r["sweep"] == "horizon" and r["horizon"] == mult], args.max_samples)
        table.append({"sweep": "horizon", "arm": "wsd", "at": mult, "best_lr": best, "median_samples": samples, "near_best": near})
    for arm in {t["arm"] for t in table}:
        found = [t["best_lr"] for t in table if t["arm"] == arm and t["best_lr"] is not None]
        drift = max(found) / min(found) if found else None
        table.append({"sweep": "drift", "arm": arm, "at": None, "best_lr": drift, "median_samples": None})
        print(f"{arm}: optimum rates {found}; largest / smallest = {drift}")

    target = Target(objective.target, objective.metric, objective.direction or "maximize")
    meta = {
        "experiment": args.experiment,
        "task": experiment.task,
        "target": target.describe(),
        "max_samples": args.max_samples,
        "lrs": lrs,
        "seeds": args.seeds,
        "mup_base": args.mup_base,
        "machine": "shared 2-core VM, no GPU, one torch thread",
        "torch": torch.__version__,
        "minutes": round((time.perf_counter() - started) / 60, 1),  # this run's: rows read back with --resume took theirs before
        "rows_read_back": len(done),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"width_transfer_{name}.json").write_text(json.dumps({"meta": meta, "optima": table, "runs": rows}, indent=1) + "\n")
    write_markdown(RESULTS / f"width_transfer_{name}.md", meta, table, rows, args)
    plot(RESULTS / f"width_transfer_{name}.png", rows, args, meta)


def swept_words(args: argparse.Namespace) -> str:
    return " and ".join(name for name, values in (("widths", args.widths), ("horizons", args.horizons)) if values)


def write_markdown(path: Path, meta: dict, table: list[dict], rows: list[dict], args: argparse.Namespace) -> None:
    lines = [
        f"# The learning rate's optimum across {swept_words(args)}: {meta['task']}, to {meta['target']}",
        "",
        (
            f"Median training samples to the target over {meta['seeds']} seed(s) (a miss counts {meta['max_samples']}); "
            f"muP's base width {meta.get('mup_base', 1.0):g}; "
            f"{meta['machine']}, torch {meta['torch']}; {meta['minutes']} minutes"
            + (f" (and {meta['rows_read_back']} runs read back from an earlier run's rows)" if meta["rows_read_back"] else "")
            + ". Made by `benchmarks/width_transfer.py`."
        ),
        "",
        f"| sweep | arm | width or horizon | best lr | median samples | near-best (within {NEAR:g}x) |",
        "|---|---|---|---|---|---|",
    ]
    for t in table:
        if t["sweep"] == "drift":
            continue
        lr = f"{t['best_lr']:.3g}" if t["best_lr"] is not None else "none reached"
        near = ", ".join(f"{x:.3g}" for x in t["near_best"]) or "-"
        lines.append(f"| {t['sweep']} | {t['arm']} | {t['at']:g} | {lr} | {t['median_samples']:.0f} | {near} |")
    lines += ["", "Drift, the largest optimum over the smallest (1 = the optimum stayed put):", ""]
    for t in table:
        if t["sweep"] == "drift":
            lines.append(f"- {t['arm']}: " + (f"{t['best_lr']:.3g}x" if t["best_lr"] is not None else "no optimum"))
    path.write_text("\n".join(lines) + "\n")


def plot(path: Path, rows: list[dict], args: argparse.Namespace, meta: dict) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [*(args.arms if args.widths else []), *(["wsd"] if args.horizons else [])]
    fig, axes = plt.subplots(1, len(arms), figsize=(5 * len(arms), 4), sharey=True, squeeze=False)
    for ax, arm in zip(axes[0], arms, strict=True):
        key, values = ("horizon", args.horizons) if arm == "wsd" else ("width", args.widths)
        for v in values:
            cell = [r for r in rows if r["arm"] == arm and r.get(key) == v]
            by_lr: dict[float, list[float]] = {}
            for r in cell:
                by_lr.setdefault(r["lr"], []).append(r["samples"] if r["samples"] is not None else args.max_samples)
            xs = sorted(by_lr)
            ax.plot(xs, [statistics.median(by_lr[x]) for x in xs], marker="o", label=f"{key} {v:g}")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("learning rate")
        ax.set_title({"standard": "standard parametrization", "mup": "muP", "wsd": "horizons (WSD schedule)"}.get(arm, arm))
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel(f"samples to {meta['target']} (miss = limit)")
    fig.suptitle(f"{meta['task']}: the rate's optimum across {swept_words(args)}")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
