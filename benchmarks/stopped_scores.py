"""How to score a trial stopped at the incumbent: rules compared on real, uncapped curves.

Runs a short study of an experiment with pruning and capping off (so every trial's curve
goes on to the target or the cap), then for an incumbent at the 1st, 2nd, ... fastest time
to target cuts each slower trial where capping at ``slack`` x that incumbent would have
stopped it, scores the cut trial by each rule, and reports the share of trial pairs the
scores order as the true times to target do (misses last; 1.00 is a perfect ranking).

Rules: the stop clock (the former rule); max(stop, bound) x (1 + gap); the miss formula
at the cap; curve extrapolation (tuner/study/scoring/censoring.py, the rule in use).

Writes benchmarks/results/stopped_scores.json. ``--budget 200`` takes about 4 minutes on a
2-core CPU; ``--storage``/``--study`` reuse a study already run without capping.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import tempfile
from pathlib import Path

from tuner.study import record, study_record
from tuner.study.experiment.load import Budget, Confirm, Pruning, Trainer
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.study.scoring.censoring import miss_value, stopped_value
from tuner.train.result import Evaluation, Outcome, TrialResult

REPO = Path(__file__).resolve().parents[1]


def true_time(curve: record.Curve, clock: str, target: float) -> float:
    times = curve.times(clock) or ()
    return next((t for t, m in zip(times, curve.metric) if m >= target), math.inf)


def cut(curve: record.Curve, clock: str, at: float) -> list[Evaluation]:
    evs = []
    for i, (t, m) in enumerate(zip(curve.times(clock) or (), curve.metric)):
        evs.append(Evaluation(curve.samples[i], i + 1, m, None, None, t, t, t))
        if t >= at:
            break
    return evs


def score(rule: str, evs: list[Evaluation], bound: float, target: float, cap: float, clock: str) -> float:
    stop, best = evs[-1].train_s, max(e.metric for e in evs)
    if rule == "stop clock":
        return min(stop, cap)
    if rule == "max(stop,bound)x(1+gap)":
        return max(stop, bound) * (1 + max(0.0, target - best))
    if rule == "miss formula":
        return miss_value(target, best, cap)
    r = TrialResult(
        Outcome.CAPPED,
        "",
        target,
        train_s=stop,
        wall_s=stop,
        steps=len(evs),
        median_step_s=stop / len(evs),
        best_metric=best,
        evaluations=evs,
        bound_s=bound,
    )
    return stopped_value(r, "train", cap)


def concordance(scores: list[float], truth: list[float]) -> float:
    good = total = 0.0
    for i, j in itertools.combinations(range(len(truth)), 2):
        if truth[i] == truth[j]:
            continue
        total += 1
        good += 0.5 if scores[i] == scores[j] else float((scores[i] < scores[j]) == (truth[i] < truth[j]))
    return good / total if total else float("nan")


RULES = ("stop clock", "max(stop,bound)x(1+gap)", "miss formula", "curve extrapolation")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", default=str(REPO / "experiments" / "mnist1d_cnn.yaml"))
    ap.add_argument("--budget", type=float, default=200.0, help="seconds of the uncapped study (default 200)")
    ap.add_argument("--cap", type=float, default=12.0, help="per-trial cap of the uncapped study (default 12 s)")
    ap.add_argument("--slack", type=float, default=1.2)
    ap.add_argument("--storage", help="an existing study's storage URL (with --study): no new study is run")
    ap.add_argument("--study", help="the existing study's name")
    args = ap.parse_args()
    base = load_experiment(args.experiment)
    target, clock = base.objective.target, base.objective.clock
    if args.storage:
        import optuna

        study = optuna.load_study(study_name=args.study, storage=args.storage)
        cap = study_record.study_objective(study).cap_s
    else:
        cap = args.cap
        exp = dataclasses.replace(
            base,
            name="stopped-scores",
            storage=f"sqlite:///{tempfile.mkdtemp(prefix='stopped_scores_')}/study.db",
            objective=dataclasses.replace(base.objective, cap_s=cap),
            pruner=Pruning(name="none", cap_slack=None),
            budget=Budget(timeout_s=args.budget),
            confirm=Confirm(after_search=False),
            race=None,
            trainer=Trainer(threads=1),
            sampler=dataclasses.replace(base.sampler, n_startup_trials=6),
        )
        study = run_study(exp)
    curves = [r.curve for r in record.records(study, record.FINISHED) if r.curve is not None and r.curve.metric and not r.is_measurement]
    truth = [true_time(c, clock, target) for c in curves]
    reached = sorted({t for t in truth if t < math.inf})
    out = {"trials": len(curves), "reached": len(reached), "cap_s": cap, "slack": args.slack, "by_incumbent": {}}
    print(f"{len(curves)} trials, {len(reached)} reached the target")
    for inc in reached[:-1]:
        bound = inc * args.slack
        row = {}
        for rule in RULES:
            scores = []
            for c, t in zip(curves, truth):
                if t <= bound:
                    scores.append(t)
                    continue
                evs = cut(c, clock, bound)
                ended_early = evs[-1].train_s < bound and len(evs) == len(c.metric)
                scores.append(
                    miss_value(target, max(e.metric for e in evs), cap) if ended_early else score(rule, evs, bound, target, cap, clock)
                )
            row[rule] = round(concordance(scores, truth), 3)
        out["by_incumbent"][f"{inc:.2f}"] = row
        print(f"incumbent {inc:.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()))
    path = REPO / "benchmarks" / "results" / "stopped_scores.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
