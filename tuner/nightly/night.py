"""A nightly sweep: canary, warm start, search and confirmation within a wall-clock budget.

Each night is its own study, ``<experiment name>-night-YYYYMMDD``, in the experiment's
storage. A night's budget, results and report then stand on their own (one MLflow parent
run per night), the earlier nights stay untouched as history, and a run restarted after a
crash on the same date resumes that night's study: trials already finished are kept, the
dead worker's trial is re-run (tuner/study/storage/open.py), the canary and warm start are not
repeated, and the time already spent is charged to the budget.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from tuner.environment import fingerprint
from tuner.nightly.canary import tonight_canary
from tuner.nightly.history import comparable_nights, night_study_name
from tuner.nightly.report import write_report
from tuner.nightly.search import StudyRunner, search_tonight
from tuner.nightly.verdict import judge_night
from tuner.nightly.warm_start import warm_start
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run.opening import open_study
from tuner.study.run.prepare import Prepared
from tuner.study.storage.deadline import Deadline
from tuner.study.study_record import (
    NightAttr,
    night_canary,
    night_spent_s,
    night_warm_starts,
    write_night,
    write_night_canary,
    write_night_spent_s,
    write_night_warm_starts,
)

EXIT_REGRESSED = 3
EXIT_LOCKED = 75  # EX_TEMPFAIL: another run holds the night; try again later

Publish = Callable[[optuna.Study, list[Path]], None]


@dataclass(frozen=True)
class NightOptions:
    night: datetime.date
    budget_s: float
    reports: Path = Path("reports")
    canary_seeds: int = 3
    warm_start: int = 3


def lock_path(reports: Path, experiment_name: str) -> Path:
    return reports / experiment_name / "nightly.lock"


class BudgetLedger(StudyHooks):
    """Keeps the night's spent time in the study after every trial, so a crash loses at most one trial's time."""

    def __init__(self, spent_before: float) -> None:
        self.spent_before = spent_before
        self.started = time.perf_counter()

    def spent(self) -> float:
        return self.spent_before + time.perf_counter() - self.started

    def save(self, study: optuna.Study) -> None:
        write_night_spent_s(study, self.spent())

    def trial_finished(self, trial: optuna.Trial, result: object, value: float | None) -> None:
        self.save(trial.study)


def run_night(
    base: Experiment,
    opts: NightOptions,
    prepared: Prepared,
    run_study: StudyRunner,
    publish: Publish | None = None,
) -> tuple[dict[str, Any], list[Path]]:
    """Run (or resume) tonight's study and write the morning report; returns it and its files.

    The canary and the warm start run here; the search and confirmation are ``run_study``'s (the
    orchestrator's, as for every command). A signal still writes the report (status interrupted)
    and is then raised again.
    """
    base, earlier = comparable_nights(base, opts.night)
    experiment = base.with_overrides(name=night_study_name(base.name, opts.night))
    study = open_study(experiment)
    ledger = BudgetLedger(night_spent_s(study) or 0.0)
    deadline = Deadline(opts.budget_s - ledger.spent_before, experiment.objective.cap_s)
    environment = fingerprint()
    write_night(study, NightAttr(opts.night.isoformat(), opts.budget_s, base.name, environment))
    ending, interrupted = "", None
    try:
        if night_canary(study) is None:
            write_night_canary(study, tonight_canary(experiment, prepared, earlier, opts.canary_seeds, deadline, environment))
        if night_warm_starts(study) is None:
            write_night_warm_starts(study, warm_start(study, earlier, base.storage, prepared.space, opts.warm_start))
        ending = search_tonight(experiment, deadline, run_study, [ledger])
    except KeyboardInterrupt as err:
        ending, interrupted = str(err) or "interrupted", err
    ledger.save(study)
    report = judge_night(study, experiment, earlier, environment, ending, interrupted is not None)
    files = write_report(report, opts.reports / base.name / opts.night.isoformat())
    if publish is not None:
        publish(study, files)
    if interrupted is not None:
        raise interrupted
    return report, files
