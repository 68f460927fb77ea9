"""`tuner confirm EXPERIMENT.yaml`: re-run a study's top configurations on fresh seeds.

The runs are trials of the same study (tuner/study/reruns/confirmation.py): an interrupted confirmation
resumes with the same command, and each run is tracked like any other trial.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from tuner import signals
from tuner.cli.common import add_display_flags, add_study_flags, add_tracking_flag
from tuner.errors import ConfigError
from tuner.redact import redact
from tuner.study.experiment.load import load_experiment
from tuner.study.reruns.confirmation import confirmation_table, confirmed_winner
from tuner.study.reruns.winner import load_existing_study
from tuner.study.run.objective import StudyFailed
from tuner.study.run.prepare import prepare
from tuner.study.run.progress import Progress
from tuner.study.run.runner import run_study
from tuner.study.scoring.pareto import front_heading, front_table, how_to_pick, several, study_front
from tuner.study.scoring.units import in_words, study_unit
from tuner.study.storage.preflight import check_stores


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("confirm", help="re-run the top configurations of a study on fresh seeds; the winner is the best median")
    p.add_argument("experiment", help="experiment YAML file of the study")
    p.add_argument("--top-k", type=int, dest="top_k", help="distinct configurations to confirm (default: the experiment's confirm.top_k)")
    p.add_argument("--seeds", type=int, help="seeds per configuration (default: the experiment's confirm.seeds)")
    p.add_argument("--timeout", type=float, dest="timeout_s", help="seconds this run may take; runs left over wait for the next call")
    add_display_flags(p)
    add_study_flags(p)
    add_tracking_flag(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment).with_overrides(
        timeout_s=args.timeout_s, name=args.name, storage=args.storage, tracking_uri=args.tracking_uri
    )
    for flag, value in (("--top-k", args.top_k), ("--seeds", args.seeds)):
        if value is not None and value < 1:
            raise ConfigError("tuner confirm", flag, "an integer >= 1", value)
    settings = {k: v for k, v in (("top_k", args.top_k), ("seeds", args.seeds)) if v is not None}
    experiment = dataclasses.replace(experiment, confirm=dataclasses.replace(experiment.confirm, **settings))
    check_stores(experiment, tracking=args.tracking)  # before seconds of preparing
    load_existing_study(experiment.storage, experiment.name, args.experiment)  # confirming creates no study
    prepared = prepare(experiment)
    hooks = []
    if args.tracking:
        from tuner.track.trial_runs import MlflowTracking  # importing mlflow takes seconds: only when tracking

        hooks.append(MlflowTracking(experiment.tracking_uri, source=redact(args.experiment)))
    print(
        f"confirming study {experiment.name!r}: top {experiment.confirm.top_k} configurations x {experiment.confirm.seeds} seeds",
        file=sys.stderr,
    )
    try:
        with signals.handled():
            study = run_study(experiment, progress=Progress(quiet=args.quiet), prepared=prepared, hooks=hooks, search=False)
    except StudyFailed as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:
        print(f"tuner: {err or 'interrupted'}; run the same command to resume the confirmation.", file=sys.stderr)
        return signals.exit_code(err)
    if several(study):  # several objectives: the confirmed Pareto front (tuner/study/scoring/pareto.py)
        front = study_front(study)
        print(f"\n{front_heading(study)}\n{front_table(study)}\n{how_to_pick(study).replace('...', args.experiment)}")
        return 0 if front and front[0].confirmed else 1
    print(
        f"\nConfirmed configurations of study {experiment.name!r} "
        f"({in_words(study_unit(study))} to {experiment.objective.goal.describe()} on the {experiment.objective.clock} clock):"
    )
    print(confirmation_table(study))
    winner = confirmed_winner(study)
    if winner is None:
        print("no configuration reached the target in confirmation" if study.get_trials(deepcopy=False) else "nothing to confirm")
        return 1
    print(f"winner: trial {winner.trial.number}'s configuration, {winner.summary()}. Export it with: tuner best {args.experiment}")
    return 0
