"""A night's verdict: tonight's winner and canary judged against the nights before, stored in the study, and the report built."""

from __future__ import annotations

from typing import Any

import optuna

from tuner.nightly.canary import canary_history, canary_value
from tuner.nightly.history import Night, measurements, winner_of
from tuner.nightly.regression import judge
from tuner.nightly.report import build_report
from tuner.study.experiment.load import Experiment
from tuner.study.scoring.units import study_unit
from tuner.study.storage.open import optuna_storage
from tuner.study.study_record import night_canary, write_night_verdict

HISTORY_NIGHTS = 14  # earlier nights whose best times make the history


def judge_night(
    study: optuna.Study, experiment: Experiment, earlier: list[Night], environment: dict[str, str], ending: str, interrupted: bool
) -> dict[str, Any]:
    """Compare tonight with history, store the verdict in the study, and build the report."""
    study = optuna.load_study(study_name=study.study_name, storage=optuna_storage(experiment.storage, experiment.source))  # fresh trials
    winner = winner_of(study)
    history = [n.winner["value"] for n in earlier[:HISTORY_NIGHTS] if n.winner]
    what = {"unit": study_unit(study), "minimize": experiment.objective.names[0], "target": experiment.objective.goal.describe()}
    best = judge(winner["value"] if winner else None, history, **what)
    canary = night_canary(study) or {}
    canary_verdict, changes = None, None
    if canary.get("runs"):
        past, changes = canary_history(measurements(earlier, canary["config"]), environment)
        canary_verdict = judge(canary_value(canary), past, **what)
    regressed = best.regressed or (canary_verdict is not None and canary_verdict.regressed)
    failed = ending.startswith("failed")
    status = "interrupted" if interrupted else "failed" if failed else "regressed" if regressed else "ok"
    write_night_verdict(study, winner, status)
    previous = next((n for n in earlier if n.winner), None)
    return build_report(study, experiment, winner, best, canary, canary_verdict, changes, previous, environment, ending, status)
