"""Does the exported configuration reach the target again? Studies of a noisy task near its
ceiling, each winner replayed on fresh seeds.

For each of ``--studies`` study seeds:

1. A study of ``--experiment`` (default: experiments/digits_mlp_ceiling.yaml, scikit-learn's
   digits to 97.5% held-out accuracy, where whether a run reaches depends on its seed) runs with a
   time budget of ``--timeout`` seconds into its own SQLite file, without MLflow.
2. What `tuner best` exports (the study's winner: tuner/study/reruns/winner.py) is written to a
   file and loaded back, as a user's `tuner train best.yaml` would.
3. That file trains once on each of ``--fresh`` seeds the study never used, without the
   study's cap (to the target or its horizon; ``--keep-cap``: under the cap the file carries, as
   `tuner train` runs it), and so does the
   study's fastest single search run (what was exported, when no confirmed configuration
   reached on every seed, before the export preferred the one that reached most often).

Printed and written to ``benchmarks/results/winner_replay.json`` and ``.md``: per study, each
file's share of fresh seeds that reached the target, and both shares over every replay.
Reaching is not a timing figure, so other work on the machine changes times, not these shares.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from tuner.api import run, train_once
from tuner.study.experiment.settings import Budget
from tuner.study.record import COMPLETE, records
from tuner.study.reruns.winner import best_choice, write_configuration
from tuner.study.run.experiment_file import load_experiment
from tuner.train.result import Outcome

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
NO_CAP_S = 3600.0
FRESH_SEED = 500_000  # far from the search's seeds (the experiment's + trial number) and confirmation's (+100 000)


def replay(path: Path, seeds: list[int], keep_cap: bool = False) -> list[str]:
    """Train the exported file once on each seed; each run's outcome (``reached`` or how it missed).

    Without the study's cap (``cap_s: auto`` came to twice the baseline's time): a run ends when it
    reaches the target or at its horizon, so whether it reaches is its seed's and not the
    machine's load (with the cap, the same seed of the same file reached on one replay and not
    on the next).
    """
    experiment = load_experiment(path)
    if not keep_cap:  # --keep-cap: as `tuner train` runs the file, under the cap it carries
        experiment = dataclasses.replace(experiment, objective=dataclasses.replace(experiment.objective, cap_s=NO_CAP_S))
    return [train_once(experiment, seed=seed).outcome.value for seed in seeds]


def one_study(experiment_path: Path, seed: int, timeout_s: float, fresh: int, work: Path, keep_cap: bool) -> dict:
    base = load_experiment(experiment_path)
    name = f"replay-{seed}"
    experiment = dataclasses.replace(
        base, name=name, seed=seed, storage=f"sqlite:///{work / (name + '.db')}", budget=Budget(timeout_s=timeout_s)
    )
    started = time.perf_counter()
    study = run(experiment, tracking=False)
    study_s = time.perf_counter() - started
    choice = best_choice(study)
    exported = work / f"{name}-best.yaml"
    write_configuration(study, choice.trial, exported, "winner", choice.note)
    search = [r for r in records(study, COMPLETE) if r.reached and not r.is_measurement and r.value is not None]
    fastest = min(search, key=lambda r: (r.value, r.number)) if search else choice.trial
    single = work / f"{name}-fastest.yaml"
    write_configuration(study, fastest, single, "the fastest single search run", "for comparison")
    seeds = [FRESH_SEED + i for i in range(fresh)]
    winner_hits, fastest_hits = replay(exported, seeds, keep_cap), replay(single, seeds, keep_cap)
    row = {
        "seed": seed,
        "study_s": round(study_s, 1),
        "trials": len(study.trials),
        "winner_trial": choice.trial.number,
        "winner_confirmed": choice.confirmed,
        "winner_note": choice.note,
        "winner_reached": winner_hits.count(Outcome.REACHED.value),
        "winner_outcomes": winner_hits,
        "fastest_trial": fastest.number,
        "fastest_reached": fastest_hits.count(Outcome.REACHED.value),
        "fastest_outcomes": fastest_hits,
        "fresh_seeds": fresh,
    }
    print(json.dumps(row), flush=True)
    return row


def write(out: dict, name: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        f"# {name}",
        "",
        (
            f"{out['experiment']}, {out['studies']} studies of {out['timeout_s']:g} s each, every export trained on "
            f"{out['fresh_seeds']} fresh seeds, {'under the cap the file carries' if out['keep_cap'] else 'without a cap'}. {out['note']}"
        ),
        "",
        "| study seed | trials | winner (confirmed) | winner reached | fastest single run | it reached |",
        "|---|---|---|---|---|---|",
    ]
    for r in out["rows"]:
        confirmed = "yes" if r["winner_confirmed"] else "no"
        lines.append(
            f"| {r['seed']} | {r['trials']} | trial {r['winner_trial']} ({confirmed}) | {r['winner_reached']} of {r['fresh_seeds']} "
            f"| trial {r['fastest_trial']} | {r['fastest_reached']} of {r['fresh_seeds']} |"
        )
    lines += [
        "",
        (
            f"Over every replay: the export reached on **{out['winner_share']:.0%}** of fresh seeds, "
            f"the fastest single search run on {out['fastest_share']:.0%}."
        ),
    ]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "digits_mlp_ceiling.yaml"))
    parser.add_argument("--timeout", type=float, default=60.0, help="each study's time budget in seconds")
    parser.add_argument("--studies", type=int, default=10)
    parser.add_argument("--fresh", type=int, default=10, help="fresh seeds each export trains on")
    parser.add_argument("--name", default="winner_replay")
    parser.add_argument("--note", default="", help="the conditions, written with the figures")
    parser.add_argument("--keep-cap", action="store_true", help="replay under the cap the exported file carries, as `tuner train` does")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="winner_replay_"))
    rows = [one_study(Path(args.experiment), seed, args.timeout, args.fresh, work, args.keep_cap) for seed in range(args.studies)]
    total = sum(r["fresh_seeds"] for r in rows)
    out = {
        "experiment": str(Path(args.experiment).relative_to(REPO)) if Path(args.experiment).is_relative_to(REPO) else args.experiment,
        "timeout_s": args.timeout,
        "studies": args.studies,
        "fresh_seeds": args.fresh,
        "note": args.note,
        "keep_cap": args.keep_cap,
        "rows": rows,
        "winner_share": sum(r["winner_reached"] for r in rows) / total,
        "fastest_share": sum(r["fastest_reached"] for r in rows) / total,
    }
    write(out, args.name)
    print(f"export reached on {out['winner_share']:.0%} of {total} fresh-seed runs; the fastest single run on {out['fastest_share']:.0%}")


if __name__ == "__main__":
    main()
