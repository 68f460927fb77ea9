"""Clock noise: the same configurations timed idle and beside busy processes, on each clock.

Optionally first a probe (--probe-threads): the median step time of the default CNN with 1
and 2 torch threads, idle and beside --burners CPU-burning subprocesses (pure Python loops,
one core each). Then for each configuration (--configs, the paper's default first; with
--threads, default 1) and each seed in --seeds, the run is trained twice: once as the machine
is, once beside the burners. The same seed gives the same steps, so every difference between
the two is the clock's. Then the same for a Dataset task: the image-folder task on generated
images (--dataset-images), read by a DataLoader with 2 worker processes, on --dataset-seeds.

Clocks reported per run:
  train_s    training time to the target (host clock, evaluations excluded)
  wall_s     everything since the trial started
  robust_s   steps to target x the median step time within the trial
  cpu_s      steps to target x the median CPU time per step of the training thread and its
             DataLoader workers (``clock: cpu``): time spent waiting for a core is not in it
  auto_s     the clock ``objective.clock: auto`` (the default) names for the run
             (tuner/train/clocks.py: auto_clock; cpu with one thread, robust with two)
  shape_s    steps to target x the lowest median step time measured so far, in this run of
             the script, for the configuration's shape (model, width, batch, precision,
             devices, threads; tuner/study/scoring/shape_clock.py): what a study knows when it
             scores a trial. shape_final_s uses the lowest over all runs of that shape.

Per configuration, thread count and load: the median and the coefficient of variation
(stdev / mean) of each clock; per clock, the ratio of its loaded median to its idle median
(1.00 = load does not show) and the ratio seed by seed; and whether the default clock's ratio
is within its bar (10% in memory, 15% with loader workers). Idle and loaded runs alternate,
so a change in the machine's own load between them hits both. On a shared machine "idle"
means "without our burners".

With --study-s S, the default experiment is then tuned for S seconds per study on each
clock in --study-clocks, once as the machine is and once beside the burners (one thread,
confirmation off so the budget is all search), and each study's winner (what `tuner best`
exports) is re-measured idle on the same --measure-seeds fresh seeds on the robust clock:
a clock that holds lets the loaded study find as fast a configuration as the idle one.
--study-seed gives those studies another sampler seed than the experiment's.

Writes benchmarks/results/clock_noise.json (--output names another). With the defaults,
about 3 minutes on a quiet 2-core CPU (10 on a busy one). A smoke run: --seeds 0
--dataset-seeds 0 --probe-threads ''.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from tuner.environment import fingerprint
from tuner.study.scoring.shape_clock import shape_key
from tuner.tasks.registry import build_task
from tuner.train.clocks import CLOCK_FIELDS, auto_clock
from tuner.train.time_to_target import StopRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
CLOCKS = ("train_s", "wall_s", "robust_s", "cpu_s", "auto_s", "shape_s", "shape_final_s")
LOADS = ("idle", "loaded")
BAR, DATASET_BAR = 1.10, 1.15  # the default clock's loaded / idle must stay within 10% (in memory), 15% (loader workers)
# The paper's default; a tuned-looking one (warm-up, cosine decay, batch 128); a small narrow one.
CONFIGS = {
    "paper-default": TrialConfig(),
    "cosine-bs128": TrialConfig(lr=0.02, schedule="warmup_cosine", warmup_frac=0.1, horizon_samples=40_000, batch_size=128),
    "narrow-bs64": TrialConfig(lr=0.01, schedule="warmup_linear", warmup_frac=0.05, horizon_samples=60_000, batch_size=64, width=0.5),
}
BURN = "while True: pass"
# A Dataset task whose loading is real work (PNG decoding, crop and flip in 2 loader processes).
DATASET_LABEL = "image-folder workers=2"
DATASET_SIZE = 16
DATASET_CONFIG = TrialConfig(lr=0.01, batch_size=64, width=0.25, num_workers=2, persistent_workers=True, prefetch_factor=2)
DATASET_RULE = StopRule(target=0.3, eval_every_samples=800, cap_s=120.0, clock="robust")


def start_burners(n: int, code: str = BURN) -> list[subprocess.Popen]:
    """``n`` Python processes running ``code`` (by default a loop that burns one core each)."""
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def stop_burners(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def one_run(task, config: TrialConfig, rule: StopRule, threads: int, seed: int) -> dict:
    torch.set_num_threads(threads)
    r = train_trial(task, config, rule, torch.device("cpu"), seed=seed)
    run = {
        "reached": r.reached,
        "steps": r.steps_to_target or r.steps,
        "median_step_s": r.median_step_s,
        "train_s": r.train_s_to_target or r.train_s,
        "wall_s": r.wall_s_to_target or r.wall_s,
        "robust_s": r.robust_s_to_target or r.elapsed("robust"),
        "cpu_s": r.cpu_s_to_target or r.elapsed("cpu"),
        "data_wait_share": r.data_wait_share,
    }
    # What a study with the default clock minimises here: auto names it from the device, threads and processes.
    run["auto_clock"] = auto_clock("cpu", threads, config.devices)
    run["auto_s"] = run[CLOCK_FIELDS[run["auto_clock"]]]
    return run


def image_folder_task(root: Path, n: int):
    """The image-folder task (a Dataset read through a DataLoader) on ``n`` generated images, written once under ``root``."""
    from tuner.tasks.image_folder_gen import make_image_folder

    folder = root / f"shapes{n}"
    if not folder.exists():
        make_image_folder(folder, n, size=DATASET_SIZE, classes=10, seed=0, test_fraction=0.2)
    return build_task("image-folder", {"path": str(folder), "size": DATASET_SIZE})


def timed_pairs(label: str, task, config: TrialConfig, rule: StopRule, threads: int, seeds: list[int], args, runs, lowest) -> None:
    """Each seed trained twice, as the machine is and beside the burners, alternating; each run appended to ``runs``."""
    for seed in seeds:
        for load in ("idle", "loaded"):
            burners = start_burners(args.burners) if load == "loaded" else []
            try:
                time.sleep(0.3 if burners else 0.0)  # let the burners take their cores
                run = one_run(task, config, rule, threads, seed)
            finally:
                stop_burners(burners)
            shape = shape_key(config, threads)
            if run["median_step_s"]:
                lowest[shape] = min(lowest.get(shape, float("inf")), run["median_step_s"])
            run["shape_s"] = run["steps"] * lowest.get(shape, run["median_step_s"] or float("nan"))
            run.update(config=label, threads=threads, load=load, seed=seed, shape=shape)
            runs.append(run)
            print(
                f"{label:<22} seed={seed} {load:<6} reached={run['reached']} steps={run['steps']:>5} "
                + " ".join(f"{c}={run[c]:.3f}" for c in ("train_s", "wall_s", "robust_s", "cpu_s", "shape_s")),
                flush=True,
            )


def step_time_probe(task, threads: int, steps: int = 120, chunk: int = 10) -> float:
    """Median milliseconds per training step of the default CNN (batch 100), over chunks of steps."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = task.build_model(1.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = task.train_x, task.train_y
    times = []
    for c in range(steps // chunk + 1):
        start = time.perf_counter()
        for i in range(chunk):
            idx = torch.randint(0, len(x), (100,))
            loss = task.loss(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if c:  # the first chunk warms up
            times.append((time.perf_counter() - start) / chunk * 1e3)
    return statistics.median(times)


def threads_probe(task, threads_list: list[int], burners: int, repeats: int = 3) -> dict[str, float]:
    """Step time per thread count, idle and beside ``burners`` busy processes (alternating)."""
    found: dict[str, list[float]] = {}
    for _ in range(repeats):
        for threads in threads_list:
            for load in ("idle", "loaded"):
                procs = start_burners(burners) if load == "loaded" else []
                try:
                    time.sleep(0.3 if procs else 0.0)
                    found.setdefault(f"threads={threads} {load}", []).append(step_time_probe(task, threads))
                finally:
                    stop_burners(procs)
    return {k: statistics.median(v) for k, v in found.items()}


def twice_studies(args, rule: StopRule) -> list[dict]:
    """The default experiment tuned idle and loaded on each clock; the winners re-measured idle."""
    import dataclasses
    import tempfile

    import optuna

    from tuner.errors import ConfigError
    from tuner.study.experiment.load import Budget, Confirm
    from tuner.study.record import OUTCOME
    from tuner.study.reruns.winner import best_choice
    from tuner.study.run.experiment_file import load_experiment
    from tuner.study.run.prepare import prepare
    from tuner.study.run.progress import Progress
    from tuner.study.run.runner import run_study

    optuna.logging.disable_default_handler()
    base = load_experiment(REPO / "experiments" / "mnist1d_cnn.yaml")
    base = dataclasses.replace(
        base,
        trainer=dataclasses.replace(base.trainer, threads=1),
        confirm=Confirm(after_search=False),
        seed=base.seed if args.study_seed is None else args.study_seed,
    )
    work = Path(tempfile.mkdtemp(prefix="clock_noise_"))
    studies = []
    for clock in args.study_clocks.split(","):
        for load in ("idle", "loaded"):
            exp = dataclasses.replace(
                base,
                name=f"{clock}-{load}",
                storage=f"sqlite:///{work / f'{clock}-{load}.db'}",
                budget=Budget(n_trials=None, timeout_s=args.study_s),
                objective=dataclasses.replace(base.objective, clock=clock),
            )
            prepared = prepare(exp)
            burners = start_burners(args.burners) if load == "loaded" else []
            try:
                study = run_study(exp, progress=Progress(quiet=True), prepared=prepared)
            finally:
                stop_burners(burners)
            outcomes = dict(collections.Counter(t.user_attrs.get(OUTCOME, t.state.name.lower()) for t in study.trials))
            entry = {"clock": clock, "load": load, "seed": exp.seed, "trials": len(study.trials), "outcomes": outcomes, "winner": None}
            studies.append(entry)
            try:
                choice = best_choice(study)
            except ConfigError:  # nothing reached the target in the time: recorded, not measured
                print(f"study on the {clock} clock, {load}: {len(study.trials)} trials {outcomes}, none reached the target", flush=True)
                continue
            entry.update(winner=choice.trial.config.as_dict(), winner_study_s=choice.trial.value)
            print(
                f"study on the {clock} clock, {load}: {len(study.trials)} trials {outcomes}, "
                f"winner {choice.trial.value:.3f} s in the study",
                flush=True,
            )
    task = build_task("mnist1d-cnn")
    studies_won = [s for s in studies if s["winner"]]
    for s in studies_won:  # idle, one seed at a time for every winner, so that drift hits them alike
        s["measured_s"] = []
    for seed in range(args.measure_seeds):
        for s in studies_won:
            r = one_run(task, TrialConfig(**s["winner"]), rule, 1, 900_000 + seed)
            s["measured_s"].append(r["robust_s"] if r["reached"] else None)
    for s in studies_won:
        reached = [v for v in s["measured_s"] if v is not None]
        s["measured_median_s"] = statistics.median(reached) if reached else None
        print(
            f"winner of the {s['clock']} clock study, {s['load']}: re-measured idle {s['measured_median_s']} s "
            f"(robust clock, {len(reached)}/{args.measure_seeds} reached)",
            flush=True,
        )
    return studies


def cv(values: list[float]) -> float | None:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else None


def summarise(runs: list[dict]) -> dict[str, dict]:
    """Per configuration and thread count: each clock's median and spread idle and loaded, their
    ratio, and the ratio seed by seed (each seed's loaded run over its idle run)."""
    groups: dict[str, dict] = {}
    for label, threads in dict.fromkeys((r["config"], r["threads"]) for r in runs):
        sel = {load: [r for r in runs if r["config"] == label and r["threads"] == threads and r["load"] == load] for load in LOADS}
        entry: dict = {"auto_clock": sel["idle"][0]["auto_clock"], "seeds": sorted({r["seed"] for r in sel["idle"]})}
        for load in LOADS:
            entry[load] = {c: {"median": statistics.median(r[c] for r in sel[load]), "cv": cv([r[c] for r in sel[load]])} for c in CLOCKS}
            entry[load]["median_step_ms"] = statistics.median(r["median_step_s"] * 1e3 for r in sel[load])
            entry[load]["reached"] = sum(r["reached"] for r in sel[load])
        entry["loaded_over_idle"] = {c: entry["loaded"][c]["median"] / entry["idle"][c]["median"] for c in CLOCKS}
        entry["loaded_over_idle_by_run"] = {
            c: [round(lo[c] / idle[c], 3) for idle, lo in zip(sel["idle"], sel["loaded"], strict=True)] for c in CLOCKS
        }
        groups[f"{label} threads={threads}"] = entry
    return groups


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=1, help="idle+loaded pairs per configuration, seed and thread count (default 1)")
    ap.add_argument("--configs", type=int, default=1, help="how many of the configurations to time, paper default first (default 1)")
    ap.add_argument("--seeds", default="0,1,2", help="training seeds of every configuration (default 0,1,2)")
    ap.add_argument("--threads", default="1", help="torch thread counts for the runs to the target (default 1)")
    ap.add_argument("--probe-threads", default="1,2", help="thread counts whose step time is probed idle and loaded ('' for none)")
    ap.add_argument("--burners", type=int, default=2, help="CPU-burning subprocesses for the loaded runs (default 2)")
    ap.add_argument("--dataset-seeds", default="0,1,2", help="seeds of the image-folder runs with 2 loader workers ('' for none)")
    ap.add_argument("--dataset-images", type=int, default=2000, help="images the image-folder task is generated with (default 2000)")
    ap.add_argument(
        "--study-s", type=float, default=0.0, dest="study_s", help="seconds per study for the studies run idle and loaded (default 0: none)"
    )
    ap.add_argument(
        "--study-clocks", default="robust,cpu", dest="study_clocks", help="the objective clocks of those studies (default robust,cpu)"
    )
    ap.add_argument("--study-seed", type=int, dest="study_seed", help="sampler seed of those studies (default: the experiment's, 0)")
    ap.add_argument(
        "--measure-seeds", type=int, default=3, dest="measure_seeds", help="fresh seeds each study's winner is re-measured on (default 3)"
    )
    ap.add_argument("--output", default="clock_noise", help="results file name under benchmarks/results/ (default clock_noise)")
    args = ap.parse_args()

    task = build_task("mnist1d-cnn")
    rule = StopRule(target=0.9, eval_every_samples=2000, cap_s=60.0, clock="robust")
    threads_list = [int(t) for t in args.threads.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    configs = dict(list(CONFIGS.items())[: args.configs])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the burners are stopped on the way out
    one_run(task, TrialConfig(), StopRule(0.5, 2000, 5.0), 1, 0)  # warm-up: data to memory, kernels loaded
    probe_threads = [int(t) for t in args.probe_threads.split(",") if t]
    probe = threads_probe(task, probe_threads, args.burners) if probe_threads else {}
    if probe:
        print("median step time of the default CNN, batch 100 (ms):", ", ".join(f"{k}: {v:.2f}" for k, v in probe.items()), flush=True)
    runs: list[dict] = []
    lowest: dict[str, float] = {}
    started = time.time()
    for _ in range(args.repeats):
        for name, config in configs.items():
            for threads in threads_list:
                timed_pairs(name, task, config, rule, threads, seeds, args, runs, lowest)
    dataset_seeds = [int(s) for s in args.dataset_seeds.split(",") if s]
    if dataset_seeds:
        images = image_folder_task(Path(tempfile.gettempdir()) / "clock_noise_images", args.dataset_images)
        one_run(images, DATASET_CONFIG, DATASET_RULE, 1, 0)  # warm-up: the files in the page cache
        for _ in range(args.repeats):
            timed_pairs(DATASET_LABEL, images, DATASET_CONFIG, DATASET_RULE, 1, dataset_seeds, args, runs, lowest)
    for run in runs:
        run["shape_final_s"] = run["steps"] * lowest[run["shape"]]

    groups = summarise(runs)
    print("\nloaded / idle median, per clock (1.00 = load does not show):")
    print(f"{'configuration':<34}" + "".join(f"{c:>14}" for c in CLOCKS) + f"{'step ms idle/loaded':>22}")
    for label, e in groups.items():
        step = f"{e['idle']['median_step_ms']:.2f}/{e['loaded']['median_step_ms']:.2f}"
        print(f"{label:<34}" + "".join(f"{e['loaded_over_idle'][c]:>14.2f}" for c in CLOCKS) + f"{step:>22}")
    print("\ncoefficient of variation within each condition (stdev/mean over seeds and repeats):")
    for label, e in groups.items():
        for load in LOADS:
            print(f"{label:<26}{load:<8}" + "".join(f"{(e[load][c]['cv'] or 0):>14.3f}" for c in CLOCKS))
    bars = {}
    for label, e in groups.items():
        bar = DATASET_BAR if label.startswith(DATASET_LABEL) else BAR
        ratio = e["loaded_over_idle"]["auto_s"]
        bars[label] = {"auto_clock": e["auto_clock"], "loaded_over_idle": round(ratio, 3), "bar": bar, "met": abs(ratio - 1) <= bar - 1}
        verdict = "met" if bars[label]["met"] else "MISSED"
        print(f"default clock (auto = {e['auto_clock']}) on {label}: loaded / idle {ratio:.2f}, bar {bar:.2f}: {verdict}")
    studies = twice_studies(args, rule) if args.study_s > 0 else []
    elapsed = time.time() - started
    out = {
        "what": "same configurations and seeds trained to the target, idle vs beside CPU burners, alternating: "
        f"mnist1d-cnn to 0.90; image-folder ({args.dataset_images} images, {DATASET_SIZE} px, 2 loader workers) "
        f"to {DATASET_RULE.target.value:.2f}",
        "repeats": args.repeats,
        "seeds": seeds,
        "dataset_seeds": dataset_seeds,
        "burners": args.burners,
        "threads": threads_list,
        "seconds": round(elapsed, 1),
        "note": "a shared 2-core machine: 'idle' means without this script's burners; other processes may have run",
        "environment": fingerprint(),
        "step_ms_by_threads": probe,
        "groups": groups,
        "bars": bars,
        "runs": runs,
        "studies": studies,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.output}.json").write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{len(runs)} runs in {elapsed:.0f} s; written to benchmarks/results/{args.output}.json (cores: {os.cpu_count()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
