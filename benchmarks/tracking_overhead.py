"""Tracking overhead: the same study with MLflow tracking and without, alternating.

Both arms run the same experiment with the same seed on a fresh Optuna storage, so they
train the same configurations (every trial falls in the sampler's random start-up; keep
--n-trials at or below the experiment's sampler.n_startup_trials). Confirmation runs are
turned off to keep the study short. The tracked arm logs to a copy of an MLflow store
made beforehand: MLflow's table creation (once per project) and its import (once per
process) are measured apart and reported as one-time costs.

Tracking writes to MLflow on a background thread (tuner/track/writer.py); the study's
thread only queues them. As `tuner run` does, the study's result is ready before the queue
is drained (the summary, plots and report on the study run), and the drain comes after it.
Figures, each a median over the repeats (the machine may be shared: every repeat is printed
and kept), with the per-trial cost and the fixed per-study cost apart:
- per trial: the time the study's thread spent in the tracking hooks during trials (queueing
  a run's opening, its metrics and its closing), per trial and as a share of the study's
  time to its result; target: below 3%. It grows with the number of trials;
- per study, fixed: connecting at the start, queueing the last writes at the end, and the
  drain after the result (which delays the process's exit, not the result). It does not
  grow with the number of trials: its share shrinks as a study gets longer;
- the share of the time to the result that the study waited on tracking (per trial and
  connecting, without the drain), measured within one run without the noise between two;
- the wall-time ratio, tracked study (to its result) / untracked study (noisy on a shared machine);
- the time the writer's thread spent in writes, for scale: the work taken off the study.
Results go to benchmarks/results/tracking_overhead.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tuner.environment import fingerprint
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.run.runner import run_study

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "tracking_overhead.json"
HOOKS = ("study_started", "trial_started", "on_evaluation", "trial_finished", "study_finished", "drain")
PER_TRIAL = ("trial_started", "on_evaluation", "trial_finished")
PER_STUDY = ("study_started", "study_finished", "drain")  # connecting; queueing the last writes; the drain after the result
TARGET_SHARE = 0.03


def timed_tracking(uri: str) -> tuple[object, dict[str, float]]:
    """An MlflowTracking whose hooks add the time they take, on the study's thread, to the returned dict."""
    from tuner.track.trial_runs import MlflowTracking

    spent = {name: 0.0 for name in HOOKS}
    tracking = MlflowTracking(uri, stream=io.StringIO(), drain_later=True)
    for name in HOOKS:
        method = getattr(tracking, name)

        def wrapper(*args, _method=method, _name=name):
            start = time.perf_counter()
            try:
                return _method(*args)
            finally:
                spent[_name] += time.perf_counter() - start

        setattr(tracking, name, wrapper)
    return tracking, spent


def one_time_costs(folder: Path) -> dict[str, float]:
    """Seconds to import mlflow in a fresh process, and to create an MLflow store's tables."""
    code = "import time; t = time.perf_counter(); import mlflow; print(time.perf_counter() - t)"
    imported = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    from mlflow import MlflowClient

    start = time.perf_counter()
    MlflowClient(f"sqlite:///{folder / 'template.db'}").search_experiments()
    return {"import_mlflow_s": imported, "create_store_s": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "mnist1d_cnn.yaml"))
    parser.add_argument("--n-trials", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    base = load_experiment(args.experiment)
    base = dataclasses.replace(base, confirm=dataclasses.replace(base.confirm, after_search=False))
    folder = Path(tempfile.mkdtemp(prefix="tracking-overhead-"))
    load = [os.getloadavg()[0]]
    costs = one_time_costs(folder)
    prepared = prepare(base)  # the task is built once and shared: both arms train the same data
    untracked, tracked, hook_s, per_trial_s, writer_s = [], [], [], [], []
    per_study: dict[str, list[float]] = {name: [] for name in PER_STUDY}
    for rep in range(-1, args.repeats):  # rep -1 warms up both arms (imports, caches); not counted
        n = 1 if rep < 0 else args.n_trials
        for arm in ("untracked", "tracked") if rep % 2 else ("tracked", "untracked"):
            run = folder / f"{arm}-{rep}"
            run.mkdir()
            experiment = base.with_overrides(n_trials=n, storage=f"sqlite:///{run / 'study.db'}")
            hooks, spent, tracking = [], {}, None
            if arm == "tracked":
                (run / "mlruns").mkdir()
                shutil.copy(folder / "template.db", run / "mlruns" / "mlflow.db")
                tracking, spent = timed_tracking(f"sqlite:///{run / 'mlruns' / 'mlflow.db'}")
                hooks = [tracking]
            start = time.perf_counter()
            run_study(experiment, prepared=prepared, hooks=hooks)
            wall = time.perf_counter() - start  # to the study's result
            if tracking is not None:
                tracking.drain()  # after the result, as `tuner run` does
            if rep < 0:
                continue
            if arm == "tracked":
                tracked.append(wall)
                hook_s.append(sum(v for k, v in spent.items() if k != "drain"))  # what the result waited for
                per_trial_s.append(sum(spent[k] for k in PER_TRIAL) / n)
                for name in PER_STUDY:
                    per_study[name].append(spent[name])
                writer_s.append(tracking.writer.busy_s)
                parts = ", ".join(f"{k} {v:.3f}" for k, v in spent.items())
                print(
                    f"repeat {rep}: tracked {wall:.1f} s to its result, which waited {hook_s[-1]:.2f} s on tracking; "
                    f"then a drain of {spent['drain']:.2f} s ({parts}); the writer's thread wrote for {writer_s[-1]:.2f} s",
                    flush=True,
                )
            else:
                untracked.append(wall)
                print(f"repeat {rep}: untracked {wall:.1f} s", flush=True)
    load.append(os.getloadavg()[0])
    ratios = [t / u for t, u in zip(tracked, untracked, strict=True)]
    shares = [h / t for h, t in zip(hook_s, tracked, strict=True)]
    ratio, share = statistics.median(ratios), statistics.median(shares)
    trial_share = statistics.median((t * args.n_trials) / w for t, w in zip(per_trial_s, tracked, strict=True))
    study_s = {name: statistics.median(v) for name, v in per_study.items()}
    before_result_s = study_s["study_started"] + study_s["study_finished"]  # fixed, and waited for before the result
    budget = base.budget.timeout_s or 240.0
    projected = trial_share + before_result_s / budget  # the per-trial share holds at any length; the fixed cost is spread
    print(
        f"\n{base.name}, {args.n_trials} trials, {args.repeats} alternating repeats, load average {load[0]:.1f} -> {load[1]:.1f}"
        f" (a shared machine: read the repeats, not only the medians):"
    )
    per_repeat = ", ".join(f"{100 * s:.2f}%" for s in shares)
    verdict = "below" if share < TARGET_SHARE else "ABOVE"
    trial_verdict = "below" if trial_share < TARGET_SHARE else "ABOVE"
    print(
        f"  per trial: {1000 * statistics.median(per_trial_s):.1f} ms, {100 * trial_share:.2f}% of the time to the result, "
        f"{trial_verdict} the {100 * TARGET_SHARE:.0f}% target"
    )
    print(
        f"  per study (fixed): connecting {study_s['study_started']:.2f} s and queueing the last writes "
        f"{study_s['study_finished']:.3f} s before the result; the drain after it {study_s['drain']:.2f} s "
        "(summary, plots, report; delays the exit, not the result)"
    )
    print(
        f"  the result waited on tracking: median {100 * share:.2f}% of the time to it in this {args.n_trials}-trial study, "
        f"{verdict} the {100 * TARGET_SHARE:.0f}% target (per repeat: {per_repeat}); "
        f"projected for a {budget:.0f}-s study: {100 * projected:.2f}%"
    )
    print(f"  time to the result, tracked / untracked: median ratio {ratio:.3f} (per repeat: {', '.join(f'{r:.3f}' for r in ratios)})")
    print(f"  the writer's thread wrote for a median {statistics.median(writer_s):.2f} s per study (off the study's thread)")
    once = f"import mlflow {costs['import_mlflow_s']:.1f} s per process; a new MLflow store {costs['create_store_s']:.1f} s per project"
    print(f"  one-time: {once}")
    env = fingerprint()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "experiment": str(Path(args.experiment).relative_to(REPO))
                if Path(args.experiment).resolve().is_relative_to(REPO)
                else args.experiment,
                "n_trials": args.n_trials,
                "repeats": args.repeats,
                "eval_every_samples": base.objective.eval_every_samples,
                "untracked_s": untracked,
                "tracked_s": tracked,
                "hook_s": hook_s,  # per tracked study: seconds its own thread spent in the tracking hooks before the result
                "median_wall_ratio": ratio,
                "median_hook_share": share,
                "target_share": TARGET_SHARE,
                "writer_busy_s": writer_s,
                "shared_machine": True,
                "per_trial_hook_s": per_trial_s,
                "median_per_trial_ms": 1000 * statistics.median(per_trial_s),
                "median_per_trial_share": trial_share,
                # Fixed per study, whatever its number of trials: connecting, queueing the last writes, the drain after the result.
                "per_study_s": per_study,
                "median_per_study_s": study_s,
                "projected_share": {"study_s": budget, "share": projected},
                "one_time": costs,
                "load_average_1min": load,
                "machine": {k: env[k] for k in ("cpu", "cores", "gpu", "torch", "mlflow", "optuna", "python")},
            },
            indent=2,
        )
        + "\n"
    )
    shutil.rmtree(folder, ignore_errors=True)
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
