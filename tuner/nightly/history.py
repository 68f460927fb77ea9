"""The nights before tonight: each night's study as its attributes describe it, the ones that
measured what tonight measures, and what a night keeps of its winner (tuner/nightly/night.py)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.objective_identity import ObjectiveIdentity
from tuner.study.record import COMPLETE, confirmation_groups
from tuner.study.reruns.winner import winner
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.storage.open import optuna_storage
from tuner.study.study_record import StudyAttrs, night_canary, night_status, night_winner, stored_definition, study_night

NIGHT_INFIX = "-night-"


@dataclass(frozen=True)
class Night:
    """An earlier night's study, as its study attributes describe it (tuner/study/study_record.py)."""

    date: datetime.date
    study_name: str
    objective: dict[str, Any] | None = None
    status: str | None = None
    winner: dict[str, Any] | None = None
    canary: dict[str, Any] | None = None
    environment: dict[str, str] | None = None  # the night's machine; None for nights stored before it was kept

    @classmethod
    def of(cls, date: datetime.date, study_name: str, study: StudyAttrs) -> Night:
        night = study_night(study)
        return cls(
            date,
            study_name,
            stored_definition(study),
            night_status(study),
            night_winner(study),
            night_canary(study),
            night.environment if night is not None else None,
        )


def night_study_name(experiment_name: str, night: datetime.date) -> str:
    return f"{experiment_name}{NIGHT_INFIX}{night:%Y%m%d}"


def nights(storage: str, experiment_name: str) -> list[Night]:
    """Every night study of the experiment in the storage, newest first (reads only)."""
    prefix = experiment_name + NIGHT_INFIX
    out = []
    for study in optuna.get_all_study_summaries(storage=optuna_storage(storage, "tuner nightly"), include_best_trial=False):
        if study.study_name.startswith(prefix):
            try:
                date = datetime.datetime.strptime(study.study_name[len(prefix) :], "%Y%m%d").date()
            except ValueError:
                continue  # a study that only looks like a night
            out.append(Night.of(date, study.study_name, study))
    return sorted(out, key=lambda n: n.date, reverse=True)


def comparable_nights(base: Experiment, night: datetime.date) -> tuple[Experiment, list[Night]]:
    """``base`` with its clock resolved, and the nights before ``night`` that measured the same objective, newest first.

    Only nights that measured the same thing are history (each night is its own study, so a
    changed target or cap would not be refused: it would just make the comparison wrong).
    """
    past = [n for n in nights(base.storage, base.name) if n.date < night and n.objective]
    base = resolve_clock(base, past[0].objective if past else None)  # clock: auto keeps the last night's, so history compares
    objective = ObjectiveIdentity.of(base)
    return base, [n for n in past if objective.same_as(ObjectiveIdentity.stored(n.objective))]


def winner_of(study: optuna.Study) -> dict[str, Any] | None:
    """The night's winner, as `tuner best` and the MLflow study run name it (tuner/study/reruns/winner.py):
    the best confirmed median, else the search's best, or the baseline when nothing beat it."""
    choice = winner(study)
    if choice is None:
        return None
    t, confirmed = choice.trial, choice.confirmation
    out = {"trial": t.number, "params": dict(t.params), "config": t.config.as_dict(), "value": t.value, "basis": choice.note}
    if not choice.confirmed:  # no confirmation, or one no configuration won
        return {**out, "confirmed": None}
    low, high = confirmed.spread
    _, group = confirmation_groups(study, COMPLETE).get(t.config_key, (t, []))
    return {
        **out,
        "value": confirmed.median,
        "basis": f"median over {confirmed.n} confirmation seeds",
        "runs": [{"seed": r.seed, "value": r.value} for r in group],
        "confirmed": {"median_s": confirmed.median, "min_s": low, "max_s": high, "seeds": confirmed.n, "reached": confirmed.reached},
    }


def measurements(earlier: list[Night], config: dict[str, Any]) -> list[tuple[dict[str, str], list[float]]]:
    """(environment, values) of ``config`` in earlier nights, newest first: canary runs, and
    the confirmation runs of a night it won."""
    out = []
    for n in earlier:
        canary, winner = n.canary or {}, n.winner or {}
        if canary.get("config") == config and canary.get("runs"):
            out.append((canary["environment"], [r["value"] for r in canary["runs"] if r["value"] is not None]))
        if winner.get("config") == config and winner.get("runs") and n.environment is not None:
            out.append((n.environment, [r["value"] for r in winner["runs"] if r["value"] is not None]))
    return out
