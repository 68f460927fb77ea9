"""`tuner run EXPERIMENT.yaml`: run or resume a study, with a live progress display.

The result is printed as soon as the study ends; MLflow's last writes (the study's summary,
plots and report, a second or two) are drained after it, before the process exits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from datetime import datetime

import optuna

from tuner import signals
from tuner.cli.run_flags import add_run_flags, run_experiment
from tuner.errors import ConfigError
from tuner.redact import redact
from tuner.report.energy import energy_figures, energy_line
from tuner.study.experiment.load import Experiment
from tuner.study.record import FINISHED, records
from tuner.study.reruns.baseline import baseline_sentence, compare
from tuner.study.reruns.confirmation import confirmation_table, confirmed_winner
from tuner.study.reruns.racing import best_in_study
from tuner.study.reruns.winner import best_choice
from tuner.study.run.auto_cap import cap_note
from tuner.study.run.budget_fit import idle_line, refuse_short_budget
from tuner.study.run.objective import StudyFailed
from tuner.study.run.prepare import prepare
from tuner.study.run.progress import Progress, outcomes_line, top_trials_table
from tuner.study.run.runner import run_study
from tuner.study.scoring.pareto import front_heading, front_table, how_to_pick, several
from tuner.study.scoring.units import in_words, span, study_unit, with_unit
from tuner.study.storage.open import optuna_storage
from tuner.study.storage.preflight import check_stores
from tuner.study.study_record import resolved_cap


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run or resume a study")
    add_run_flags(p, "run")
    p.add_argument(
        "--workers", type=int, default=1, help="worker processes on the study, CPU threads split between them, or a GPU each (default: 1)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object with the results on stdout (the summary goes to stderr)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = run_experiment(args)
    if args.workers < 1:
        raise ConfigError("tuner run", "--workers", "an integer >= 1", args.workers)
    refuse_short_budget(experiment)  # a budget this study's baseline is known not to fit: nothing is stored
    check_stores(experiment, tracking=args.tracking)  # before anything is written anywhere, and before seconds of preparing
    prepared = prepare(experiment)
    for note in prepared.notes:
        print(f"search space: {note}", file=sys.stderr)
    progress = Progress(quiet=args.quiet)
    print(
        f"study {experiment.name!r} on {redact(experiment.storage)}: task {experiment.task}, "
        f"target {experiment.objective.goal.describe()} ({experiment.objective.clock} clock), device {prepared.device}",
        file=sys.stderr,
    )
    hooks, tracking, study = [], None, None
    since = datetime.now()  # Optuna's trial times are the host's local time
    if args.tracking:
        from tuner.track.trial_runs import MlflowTracking  # importing mlflow takes seconds: only when tracking

        flags = {"--study-name": args.name, "--storage": args.storage, "--tracking-uri": args.tracking_uri}
        target = " ".join([args.experiment, *(f"{k} {v}" for k, v in flags.items() if v)])  # what `tuner sync` needs to find it
        tracking = MlflowTracking(experiment.tracking_uri, source=redact(target), drain_later=True)
        hooks.append(tracking)
        print(f"tracking in MLflow at {redact(experiment.tracking_uri)} (review with: tuner ui {args.experiment})", file=sys.stderr)
    try:
        with signals.handled():
            if args.workers > 1:  # several processes (tuner/study/run/workers.py), with one display
                from tuner.study.run.workers import WorkerOptions, run_workers

                options = WorkerOptions(
                    args.experiment,
                    args.workers,
                    name=args.name,
                    storage=args.storage,
                    tracking_uri=args.tracking_uri,
                    seed=args.seed,
                    n_trials=args.n_trials,
                    tracking=args.tracking,
                    share_devices=args.share_devices,
                    quiet=args.quiet,
                )
                study = run_workers(options, experiment, prepared, hooks)
            else:
                study = run_study(experiment, progress=progress, prepared=prepared, hooks=hooks)
            finish(study, experiment, args, since)  # the result first...
            if tracking is not None:
                tracking.drain()  # ...then MLflow's last writes; a second signal here drops them, as during a study
    except StudyFailed as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:  # SIGINT or SIGTERM: the trial is recorded, the runs closed
        if study is None:  # stopped during the study: its summary so far (after it, the summary is already out)
            stored = optuna.load_study(study_name=experiment.name, storage=optuna_storage(experiment.storage, args.experiment))
            finish(stored, experiment, args)
        print(
            f"tuner: {err or 'interrupted'}; the running trial is recorded as interrupted. Run the same command to resume.", file=sys.stderr
        )
        return signals.exit_code(err)
    return 0


def finish(study: optuna.Study, experiment: Experiment, args: argparse.Namespace, since: datetime | None = None) -> None:
    """The summary for people; with --json it goes to stderr and stdout holds one JSON object.

    ``since``: when this run began; a run that started no search trial says why in one line.
    """
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        print_summary(study, experiment, args)
        note = cap_note(experiment, resolved_cap(study))
        idle = idle_line(study, experiment, since) if since is not None else None
        for line in (note, idle):
            if line:
                print(line)
    if args.json:
        from tuner.report.data import build_report

        print(json.dumps(build_report(study, experiment.storage).as_json(), default=str))
    sys.stdout.flush()  # out before the process waits on MLflow's last writes, even into a pipe


def print_summary(study: optuna.Study, experiment: Experiment, args: argparse.Namespace) -> None:
    if several(study):  # several objectives: a Pareto front, no single best (tuner/study/scoring/pareto.py)
        print(
            f"\n{len(records(study, FINISHED))} finished trials in study {experiment.name!r}. {front_heading(study)}\n{front_table(study)}"
        )
        print(how_to_pick(study).replace("...", args.experiment + (f" --study-name {experiment.name}" if args.name else "")))
        print(baseline_sentence(study))
        return
    unit = study_unit(study)
    print(
        f"\n{len(records(study, FINISHED))} finished trials in study {experiment.name!r}. "
        f"Top trials ({in_words(unit)} to {experiment.objective.goal.describe()} on the {experiment.objective.clock} clock):"
    )
    print(top_trials_table(study))
    print(outcomes_line(study))
    stopped = top_trials_table(study, reached=False)
    if stopped != "none":
        print(f"Stopped or missed the target (scores, not times: tuner/study/scoring/censoring.py):\n{stopped}")
    best = best_in_study(study)  # a raced configuration counts by its median (tuner/study/reruns/racing.py)
    if best is None:
        print("no search trial reached the target yet")
    else:
        low, high = best.spread
        runs = f" (median of {len(best.values)} runs on different seeds, range {span(low, high, unit)})" if best.raced else ""
        print(
            f"best: trial {best.trial.number}, {with_unit(best.median, unit)}{runs}. Export it with: tuner best {args.experiment}"
            + (f" --study-name {experiment.name}" if args.name else "")
        )
    winner = confirmed_winner(study)
    try:
        baseline_wins = best_choice(study).trial.is_baseline
    except ConfigError:  # nothing reached the target
        baseline_wins = False
    if winner is not None:
        print(f"\nConfirmed on fresh seeds (tuner confirm re-runs them):\n{confirmation_table(study)}")
        print(
            f"winner: trial {winner.trial.number}'s configuration, {winner.summary()}{'' if baseline_wins else '; tuner best exports it'}"
        )
    print(baseline_sentence(study))
    if baseline_wins:
        print("the search found nothing faster than the baseline: tuner best exports the baseline's configuration")
    energy = energy_line(energy_figures(study, compare(study)))
    if energy is not None:  # only where the trials read an energy counter (tuner/train/energy.py)
        print(energy)
