"""What a run says on its way (``RunOptions.lines``): its first lines, and its closing ones with the exit code they imply."""

from __future__ import annotations

import contextlib
import json
import sys
from datetime import datetime

import optuna

from tuner.orchestrate import summary
from tuner.orchestrate.options import RunOptions
from tuner.orchestrate.ready import Run
from tuner.redact import redact
from tuner.study.experiment.load import Experiment
from tuner.study.run.auto_cap import cap_note
from tuner.study.run.budget_fit import idle_line
from tuner.study.run.overhead import WatchOverhead
from tuner.study.study_record import resolved_cap


def first_lines(run: Run) -> None:
    """What the run is about to do, on stderr (``tuner.run``, a night and a quiet worker say nothing here)."""
    options, experiment, prepared = run.options, run.experiment, run.prepared
    if options.lines == "study":
        for note in prepared.notes:
            print(f"search space: {note}", file=sys.stderr)
        print(
            f"study {experiment.name!r} on {redact(experiment.storage)}: task {experiment.task}, "
            f"target {experiment.objective.goal.describe()} ({experiment.objective.clock} clock), device {prepared.device}",
            file=sys.stderr,
        )
        if options.tracking:
            print(f"tracking in MLflow at {redact(experiment.tracking_uri)} (review with: tuner ui {options.experiment})", file=sys.stderr)
    elif options.lines == "worker":
        import torch

        print(
            f"worker on study {experiment.name!r} at {redact(experiment.storage)}, device {prepared.device}, "
            f"{torch.get_num_threads()} thread(s)",
            file=sys.stderr,
        )
    elif options.lines == "confirmation":
        print(
            # Up to: with pruner.name auto, the budget rule may decide a small budget on fewer (its own line says so).
            f"confirming study {experiment.name!r}: up to the top {experiment.confirm.top_k} configurations"
            f" x {experiment.confirm.seeds} seeds",
            file=sys.stderr,
        )


def closing(run: Run, study: optuna.Study, since: datetime, overhead: WatchOverhead | None) -> int:
    """The closing lines; returns the exit code they imply."""
    options, experiment = run.options, run.experiment
    if options.lines == "study":
        finish(study, experiment, options, since)
    elif options.lines == "confirmation":
        return summary.confirmed_summary(study, experiment, options)
    elif options.lines == "worker":
        print(f"worker done: study {experiment.name!r} has {summary.finished_count(study)} finished trials", file=sys.stderr)
        if overhead is not None:
            print(f"worker overhead: {overhead.line()}", file=sys.stderr)
    return 0


def finish(study: optuna.Study, experiment: Experiment, options: RunOptions, since: datetime | None = None) -> None:
    """`tuner run`'s summary for people; with --json it goes to stderr and stdout holds one JSON object.

    ``since``: when this run began; a run that started no search trial says why in one line.
    """
    with contextlib.redirect_stdout(sys.stderr) if options.json else contextlib.nullcontext():
        summary.print_summary(study, experiment, options)
        # A proxy study's own lines (tuner/study/run/proxy_study.py) say how its search and decision went:
        # these two speak of a study whose baseline runs first and whose search trials it would start.
        plain = experiment.proxy is None
        note = cap_note(experiment, resolved_cap(study)) if plain else None
        idle = idle_line(study, experiment, since) if since is not None and plain else None
        for line in (note, idle):
            if line:
                print(line)
    if options.json:
        from tuner.report.data import build_report

        print(json.dumps(build_report(study, experiment.storage).as_json(), default=str))
    sys.stdout.flush()  # out before the process waits on MLflow's last writes, even into a pipe
