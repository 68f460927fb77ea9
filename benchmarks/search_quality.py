"""Search quality: which strategy finds a configuration that reaches the target fastest, and how soon?

On an experiment (default: mnist1d-cnn to 90%), each strategy gets the same tuning budget
(wall seconds) and runs --repeats times with different sampler seeds; within a repeat all
strategies share the seed, and their order rotates from repeat to repeat so that machine
noise hits them alike:

  default           `tuner run` as it ships: TPE, equal-time pruning, capping at the
                    incumbent, racing on seeds, confirmation at the end (inside the budget);
                    its choice is what `tuner best` exports
  tpe-median-step   TPE with Optuna's MedianPruner on step-indexed reports (1 - accuracy at
                    every evaluation, step = evaluation index): what a user writes by hand;
                    its choice is the study's best trial
  random            random search; no pruning, no capping; the best trial
  tpe               TPE; no pruning, no capping; the best trial
  sha-time          TPE with Optuna's SuccessiveHalvingPruner on time buckets (our
                    `pruner.name: successive_halving`), no capping; the best trial

Then every chosen configuration, and every configuration a run held as its best so far
(for the anytime curves; those whose single run was over --screen x the fastest single
run are skipped), is re-measured by one shared function (``measure``) on the same
--measure-seeds fresh seeds, seed by seed, configurations shuffled, with no pruning or
capping; a miss counts at its censored value. For each strategy:

  chosen_s    re-measured median (and interquartile range) of the configuration it chose
  within_s    tuning time at which it first held a configuration whose re-measured median is
              within --within (1.25) x the best re-measured median of any strategy

The baseline (the experiment's ``baseline:``, by default the task's reference
configuration) is re-measured on the same seeds, so that each of the default's winners
has its speed-up over it, and its repeats (independent studies, seeds 1000, 2000, ...) how
far apart they land.

Writes benchmarks/results/search_quality.{json,md,png}. With ``--table FILE`` it asks the same
question of a recorded table over many simulated studies instead (benchmarks/search_quality_table.py). The issue's full size is
``--repeats 5 --budget 240`` (about 2 hours on a 2-core CPU); a smoke run:
``--budget 20 --repeats 1 --measure-seeds 1``. ``--resume benchmarks/results/search_quality.json
--repeats 2`` adds two repeats to an earlier run's and re-measures them all together.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import optuna

from tuner.environment import fingerprint
from tuner.errors import ConfigError
from tuner.study import record
from tuner.study.experiment.baseline_spec import baseline_config
from tuner.study.experiment.load import Budget, Confirm, Pruning
from tuner.study.reruns.winner import best_choice
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.run.progress import Progress
from tuner.study.run.runner import run_study
from tuner.study.scoring.censoring import objective_value
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from search_quality_table import StepIndexedMedian  # a sibling script, found through the path above

RESULTS = REPO / "benchmarks" / "results"
STRATEGIES = ("default", "tpe-median-step", "random", "tpe", "sha-time")
OFF = Pruning(name="none", cap_slack=None)
MEASURE_SEED = 900_000  # far from the search's seeds (1000 * repeat + trial number), racing's and confirmation's


def strategy_experiment(base, strategy: str, repeat: int, budget_s: float, work: Path):
    """The experiment each strategy runs: the default is the experiment file as it is."""
    common = {
        "name": f"{strategy}-{repeat}",
        "storage": f"sqlite:///{work / f'{strategy}-{repeat}.db'}",
        "seed": 1000 * (repeat + 1),
        "budget": Budget(n_trials=None, timeout_s=budget_s),
    }
    if strategy == "default":
        return dataclasses.replace(base, **common)
    sampler = dataclasses.replace(base.sampler, name="random" if strategy == "random" else "tpe")
    pruner = Pruning(name="successive_halving", cap_slack=None) if strategy == "sha-time" else OFF
    return dataclasses.replace(base, sampler=sampler, pruner=pruner, confirm=Confirm(after_search=False), race=None, **common)


def run_one(base, prepared, strategy: str, repeat: int, budget_s: float, work: Path) -> dict:
    """One tuning run; returns its trials, the trajectory of its incumbent, and its choice."""
    exp = strategy_experiment(base, strategy, repeat, budget_s, work)
    hooks = [StepIndexedMedian()] if strategy == "tpe-median-step" else []
    start = time.time()
    study = run_study(exp, progress=Progress(quiet=True), prepared=prepared, hooks=hooks)
    spent = time.time() - start
    trials = sorted(record.records(study, record.FINISHED), key=lambda r: r.trial.datetime_complete)
    outcomes: dict[str, int] = {}
    incumbents, best = [], math.inf
    for r in trials:
        outcome = r.outcome.value if r.outcome is not None else "?"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if r.reached and r.value is not None and r.value < best and not r.is_measurement:
            best = r.value
            incumbents.append(
                {"t": r.trial.datetime_complete.timestamp() - start, "trial": r.number, "single_s": r.value, "config": r.config.as_dict()}
            )
    chosen = None
    if strategy == "default":
        try:
            choice = best_choice(study)  # what `tuner best` exports
            chosen = {"trial": choice.trial.number, "config": choice.trial.config.as_dict(), "confirmed": choice.confirmation is not None}
        except ConfigError:
            chosen = None  # nothing reached the target
    elif incumbents:
        chosen = {"trial": incumbents[-1]["trial"], "config": incumbents[-1]["config"], "confirmed": False}
    return {
        "strategy": strategy,
        "repeat": repeat,
        "seed": exp.seed,
        "tuning_s": spent,
        "trials": len(trials),
        "outcomes": outcomes,
        "incumbents": incumbents,
        "chosen": chosen,
    }


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def measure(task, config: TrialConfig, objective, device, seeds: list[int]) -> list[tuple[float, bool]]:
    """The one measurement every strategy's choice gets: a full run per seed, no pruning or capping."""
    out = []
    for seed in seeds:
        r = train_trial(task, config, objective.stop_rule(), device, seed=seed)
        out.append((objective_value(r, objective), r.reached))
    return out


def measure_all(runs: list[dict], base, prepared, n_seeds: int, screen: float, rng: random.Random, baseline: dict) -> dict[str, dict]:
    """Re-measure the baseline, the chosen configurations and the incumbents worth it, seed by seed; values by configuration."""
    singles = [i["single_s"] for r in runs for i in r["incumbents"]]
    bar = screen * min(singles) if singles else math.inf
    configs = {key(baseline): baseline}
    configs.update({key(r["chosen"]["config"]): r["chosen"]["config"] for r in runs if r["chosen"]})
    configs.update({key(i["config"]): i["config"] for r in runs for i in r["incumbents"] if i["single_s"] <= bar})
    results = {k: {"config": c, "values": [], "reached": 0} for k, c in configs.items()}
    order = list(configs)
    for s in range(n_seeds):
        rng.shuffle(order)
        for k in order:
            ((value, hit),) = measure(prepared.task, TrialConfig(**configs[k]), base.objective, prepared.device, [MEASURE_SEED + s])
            results[k]["values"].append(value)
            results[k]["reached"] += hit
        print(f"measurement seed {s + 1}/{n_seeds}: {len(order)} configurations", file=sys.stderr)
    for v in results.values():
        v["median_s"] = statistics.median(v["values"])
        v["iqr_s"] = list(_quartiles(v["values"]))
    return results


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return round(q[0], 3), round(q[2], 3)


def summarise(runs: list[dict], measured: dict[str, dict], within: float) -> tuple[float | None, dict[str, dict]]:
    eligible = [v["median_s"] for v in measured.values() if v["reached"] > 0]
    best = min(eligible) if eligible else None
    for r in runs:
        chosen = measured.get(key(r["chosen"]["config"])) if r["chosen"] else None
        r["chosen_s"] = chosen["median_s"] if chosen else None
        r["chosen_iqr_s"] = chosen["iqr_s"] if chosen else None
        r["within_s"] = None
        for i in r["incumbents"]:
            c = measured.get(key(i["config"]))
            i["measured_s"] = c["median_s"] if c else None
            if best is not None and r["within_s"] is None and c and c["reached"] > 0 and c["median_s"] <= within * best:
                r["within_s"] = i["t"]
    summary = {}
    for s in dict.fromkeys(r["strategy"] for r in runs):
        mine = [r for r in runs if r["strategy"] == s]
        chosen = [r["chosen_s"] if r["chosen_s"] is not None else math.inf for r in mine]
        reach = [r["within_s"] if r["within_s"] is not None else math.inf for r in mine]
        summary[s] = {
            "chosen_median_s": _finite(statistics.median(chosen)),
            "within_median_s": _finite(statistics.median(reach)),
            "chosen_s": [_finite(c) for c in chosen],
            "chosen_iqr_s": [r["chosen_iqr_s"] for r in mine],
            "within_s": [_finite(w) for w in reach],
            "never_within": sum(math.isinf(w) for w in reach),
            "trials_median": statistics.median(r["trials"] for r in mine),
        }
    return best, summary


def _finite(x: float) -> float | None:
    return None if math.isinf(x) else round(x, 3)


def _show(x: float | None, unit: str = "s") -> str:
    """A confirmed time ("-" when no configuration was held) or a tuning time ("never")."""
    if x is None:
        return "-" if unit == "s" else "never"
    return f"{x:.2f} s" if unit == "s" else f"{x:.0f} s"


def table(summary: dict[str, dict], best: float | None, within: float) -> str:
    head = (
        "| strategy | chosen config, re-measured (median over repeats) | per repeat: median [IQR] over seeds | "
        f"tuning time to within {within}x of best {_show(best)} (median) | per repeat | trials (median) |"
    )
    rows = [head, "|---|---|---|---|---|---|"]
    for s, v in summary.items():
        per = [f"{_show(c)} [{q[0]:.2f}-{q[1]:.2f}]" if q else _show(c) for c, q in zip(v["chosen_s"], v["chosen_iqr_s"])]
        rows.append(
            f"| {s} | {_show(v['chosen_median_s'])} | {', '.join(per)} | "
            f"{_show(v['within_median_s'], 't')} | {', '.join(_show(w, 't') for w in v['within_s'])} | {v['trials_median']:g} |"
        )
    return "\n".join(rows)


def run_to_run(summary: dict[str, dict], baseline_s: float) -> list[str]:
    """The default's independent runs: each winner against the baseline, and how far apart their medians lie."""
    ours = summary.get("default")
    if not ours or not ours["chosen_s"]:
        return []
    chosen = ours["chosen_s"]
    ratios = ", ".join(f"{baseline_s / c:.2f}x" if c else "nothing chosen" for c in chosen)
    found = [c for c in chosen if c]
    spread = f"{max(found) / min(found) - 1:.0%}" if len(found) > 1 else "n/a"
    return [
        f"baseline (the task's reference configuration) re-measured on the same seeds: {baseline_s:.2f} s",
        f"default's winners against the baseline, per repeat: {ratios} (bar: each at least 2.5x)",
        f"default's winners' medians lie within {spread} of each other (largest / smallest - 1; bar: 25%)",
    ]


def verdict(summary: dict[str, dict]) -> list[str]:
    """The issue's bar: the default's choice at most 0.85x the step-median's, and within reach in at most half its time."""
    ours, step = summary.get("default"), summary.get("tpe-median-step")
    if not ours or not step:
        return []
    o, m = ours["within_median_s"], step["within_median_s"]
    faster = o is not None and (m is None or o <= m / 2)
    oc, mc = ours["chosen_median_s"], step["chosen_median_s"]
    ratio = f"{oc / mc:.2f}x" if oc and mc else "n/a"
    better = oc is not None and (mc is None or oc <= 0.85 * mc)
    return [
        (
            "default's chosen configuration at most 0.85x tpe-median-step's (re-measured medians): "
            f"{'yes' if better else 'no'} ({_show(oc)} vs {_show(mc)}, {ratio})"
        ),
        (
            f"default within {1.25}x of the best in at most half the tuning time tpe-median-step needed: "
            f"{'yes' if faster else 'no'} ({_show(o, 't')} vs {_show(m, 't')})"
        ),
    ]


def plot(runs: list[dict], best: float | None, within: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    colours = dict(zip(STRATEGIES, ("tab:green", "tab:orange", "tab:gray", "tab:blue", "tab:purple")))
    fig, ax = plt.subplots(figsize=(8, 5))
    seen = set()
    for r in runs:
        xs, ys = [], []
        for i in r["incumbents"]:
            xs.append(i["t"])
            ys.append(i["measured_s"] if i.get("measured_s") is not None else i["single_s"])
        if not xs:
            continue
        xs.append(r["tuning_s"])
        ys.append(ys[-1])
        label = r["strategy"] if r["strategy"] not in seen else None
        seen.add(r["strategy"])
        style = ("-", "--", ":", "-.")[r["repeat"] % 4]
        ax.step(xs, ys, where="post", color=colours.get(r["strategy"]), linestyle=style, alpha=0.8, label=label)
    if best is not None:
        ax.axhline(within * best, color="black", linestyle="--", linewidth=0.8, label=f"{within}x best re-measured")
    ax.set_xlabel("tuning time (s)")
    ax.set_ylabel("time to target of the held configuration (s, re-measured median)")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    if seen or best is not None:
        ax.legend()
    ax.set_title("Best so far against tuning time (one line per repeat: solid, dashed, dotted, ...)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def resumed(args, strategies: list[str]) -> tuple[list[dict], float]:
    """The runs of an earlier results file to build on, and the seconds they took; none without --resume."""
    if not args.resume:
        return [], 0.0
    earlier = json.loads(Path(args.resume).read_text())
    settings = earlier["settings"]
    if settings["budget_s"] != args.budget or settings["strategies"] != strategies:
        sys.exit(
            f"{args.resume}: budget {settings['budget_s']} s and strategies {settings['strategies']} must match this run's "
            f"({args.budget} s, {strategies})"
        )
    return earlier["runs"], settings["total_s"]


def main() -> None:
    if "--table" in sys.argv:  # the same question on a recorded table, over simulated studies (no training)
        sys.path.insert(0, str(Path(__file__).parent))
        import search_quality_table

        search_quality_table.main()
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "mnist1d_cnn.yaml"))
    parser.add_argument("--budget", type=float, default=240.0, help="tuning seconds per run (default 240, the issue's size)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per strategy, with different seeds (default 5, the issue's size)")
    parser.add_argument(
        "--measure-seeds",
        type=int,
        default=5,
        dest="measure_seeds",
        help="fresh seeds each chosen configuration is re-measured on (default 5)",
    )
    parser.add_argument("--within", type=float, default=1.25)
    parser.add_argument("--screen", type=float, default=2.0, help="re-run only incumbents within this factor of the fastest single run")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated subset of " + ", ".join(STRATEGIES))
    parser.add_argument("--workdir", help="where the study databases go (default: a fresh folder in /dev/shm if present)")
    parser.add_argument("--out", default=str(RESULTS / "search_quality"), help="results path without extension")
    parser.add_argument(
        "--resume",
        help="a results .json of this script with the same budget and strategies: its runs are kept and "
        "--repeats more follow them; everything is then re-measured together",
    )
    args = parser.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    unknown = set(strategies) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}; choose from {', '.join(STRATEGIES)}")
    # tmpfs when present: a SQLite commit on disk costs ~15 ms here, and the comparison is of search, not of fsync.
    shm = Path("/dev/shm")
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="search_quality_", dir=shm if shm.is_dir() else None))
    work.mkdir(parents=True, exist_ok=True)
    optuna.logging.disable_default_handler()  # a trial cut by the budget is expected: no tracebacks

    base = load_experiment(args.experiment)
    prepared = prepare(base)
    runs, earlier_s = resumed(args, strategies)
    first = 1 + max((r["repeat"] for r in runs), default=-1)
    started = time.time()
    for repeat in range(first, first + args.repeats):
        order = strategies[repeat % len(strategies) :] + strategies[: repeat % len(strategies)]  # rotate: nobody always goes first
        for strategy in order:
            r = run_one(base, prepared, strategy, repeat, args.budget, work)
            runs.append(r)
            best = r["incumbents"][-1]["single_s"] if r["incumbents"] else None
            print(f"repeat {repeat} {strategy:<16} {r['trials']:>3} trials {r['outcomes']}  best single {_show(best)}", file=sys.stderr)
    baseline = baseline_config(base.baseline).as_dict()
    measured = measure_all(runs, base, prepared, args.measure_seeds, args.screen, random.Random(0), baseline)
    best, summary = summarise(runs, measured, args.within)
    baseline_s = measured[key(baseline)]["median_s"]

    env = fingerprint()
    machine = {k: env[k] for k in ("cpu", "cores", "gpu", "torch", "optuna", "python", "torch_threads")}
    text = table(summary, best, args.within)
    notes = verdict(summary) + run_to_run(summary, baseline_s)
    print("\n" + text + "\n" + "\n".join(notes))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    repeats = first + args.repeats
    settings = {
        "experiment": Path(args.experiment).name,
        "budget_s": args.budget,
        "repeats": repeats,
        "measure_seeds": args.measure_seeds,
        "within": args.within,
        "screen": args.screen,
        "strategies": strategies,
        "total_s": round(earlier_s + time.time() - started, 1),
    }
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "settings": settings,
                "machine": machine,
                "best_confirmed_s": best,
                "baseline_s": baseline_s,
                "summary": summary,
                "runs": runs,
                "measured": list(measured.values()),
            },
            indent=1,
        )
        + "\n"
    )
    o = base.objective
    out.with_suffix(".md").write_text(
        f"# Search quality: {base.task} to {o.target} ({o.clock} clock, cap {o.cap_s:g} s)\n\n"
        f"Budget {args.budget:g} s of tuning per run, {repeats} repeats per strategy (seeds shared within a repeat, order rotated), "
        f"every chosen configuration re-measured on the same {args.measure_seeds} fresh seeds. "
        f"Machine: {machine['cpu']}, {machine['cores']} cores, GPU {machine['gpu']}; "
        f"torch {machine['torch']}, optuna {machine['optuna']}, Python {machine['python']}. Total {settings['total_s']:.0f} s.\n\n"
        + text
        + "\n\n"
        + "\n".join(f"- {n}" for n in notes)
        + "\n\n"
        "Re-measured: median time to target over the same fresh seeds for every strategy, "
        "no pruning or capping (a miss counts at its censored value). "
        f"Incumbents whose single run was over {args.screen:g}x the fastest single run were not re-run. Study databases on tmpfs.\n"
    )
    plot(runs, best, args.within, out.with_suffix(".png"))
    print(f"written to {out}.json, .md, .png (work folder {work})", file=sys.stderr)


if __name__ == "__main__":
    main()
