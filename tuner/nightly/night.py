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
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from tuner.environment import fingerprint
from tuner.nightly.canary import canary_history, canary_seeds, canary_value, run_canary
from tuner.nightly.regression import judge
from tuner.nightly.report import build_report, write_report
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.objective_identity import ObjectiveIdentity
from tuner.study.record import COMPLETE, confirmation_groups, finished_search_trials, warm_start_attrs
from tuner.study.reruns.confirmation import candidates, confirmed_winner
from tuner.study.reruns.winner import winner
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.run.objective import StudyFailed
from tuner.study.run.opening import open_study
from tuner.study.run.prepare import Prepared
from tuner.study.run.progress import Progress
from tuner.study.run.runner import run_study
from tuner.study.scoring.units import study_unit
from tuner.study.space.space import Choice, Range, SearchSpace
from tuner.study.storage.deadline import Deadline
from tuner.study.storage.open import optuna_storage
from tuner.study.study_record import (
    NightAttr,
    StudyAttrs,
    night_canary,
    night_spent_s,
    night_status,
    night_warm_starts,
    night_winner,
    stored_definition,
    study_night,
    write_night,
    write_night_canary,
    write_night_spent_s,
    write_night_verdict,
    write_night_warm_starts,
)

NIGHT_INFIX = "-night-"
WARM_NIGHTS = 3  # earlier nights whose best configurations seed tonight's search
HISTORY_NIGHTS = 14  # earlier nights whose best times make the history
EXIT_REGRESSED = 3
EXIT_LOCKED = 75  # EX_TEMPFAIL: another run holds the night; try again later

Publish = Callable[[optuna.Study, list[Path]], None]


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


@dataclass(frozen=True)
class NightOptions:
    night: datetime.date
    budget_s: float
    reports: Path = Path("reports")
    canary_seeds: int = 3
    warm_start: int = 3


def night_study_name(experiment_name: str, night: datetime.date) -> str:
    return f"{experiment_name}{NIGHT_INFIX}{night:%Y%m%d}"


def lock_path(reports: Path, experiment_name: str) -> Path:
    return reports / experiment_name / "nightly.lock"


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


def winner_of(study: optuna.Study) -> dict[str, Any] | None:
    """The night's winner, as `tuner best` and the MLflow study run name it (tuner/study/reruns/winner.py):
    the best confirmed median, else the search's best, or the baseline when nothing beat it."""
    choice = winner(study)
    if choice is None:
        return None
    t, confirmed = choice.trial, choice.confirmation
    out = {"trial": t.number, "params": dict(t.params), "config": t.config.as_dict(), "value": t.value, "basis": choice.note}
    if confirmed is None:
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


def within(space: SearchSpace, params: dict[str, Any]) -> dict[str, Any] | None:
    """``params`` as tonight's space can run them: dimensions no longer searched are dropped;
    None when a value lies outside tonight's choices or range (Optuna would fail the trial)."""
    kept = {}
    for name, value in params.items():
        spec = space.dims.get(name)
        if isinstance(spec, Choice):
            if value not in spec.choices:
                return None
        elif isinstance(spec, Range):
            if not spec.low <= value <= spec.high:
                return None
        else:
            continue  # absent or fixed tonight: the space decides
        kept[name] = value
    return kept or None


def warm_start(study: optuna.Study, earlier: list[Night], storage: str, space: SearchSpace, k: int) -> list[str]:
    """Enqueue the best configurations of earlier nights, newest night first; returns labels."""
    queued: list[str] = []
    seen: set[str] = set()
    for night in earlier[:WARM_NIGHTS]:
        prior = optuna.load_study(study_name=night.study_name, storage=optuna_storage(storage, "tuner nightly"))
        winner = confirmed_winner(prior)
        for trial in ([winner.trial] if winner else []) + candidates(prior, k):
            params = within(space, trial.params)
            key = json.dumps(params, sort_keys=True)
            if len(queued) >= k:
                return queued
            if params is not None and key not in seen:
                seen.add(key)
                label = f"{night.date} trial {trial.number}"
                study.enqueue_trial(params, user_attrs=warm_start_attrs(label), skip_if_exists=True)
                queued.append(label)
    return queued


def tonight_canary(
    experiment: Experiment, prepared: Prepared, earlier: list[Night], seeds: int, deadline: Deadline, environment: dict[str, str]
) -> dict[str, Any]:
    """Re-run the last accepted winner (from a night whose report said ok) on fixed seeds."""
    source = next((n for n in earlier if n.status == "ok" and n.winner), None)
    if source is None:
        return {"skipped": "no accepted winner from an earlier night yet"}
    config = source.winner["config"]
    runs = run_canary(experiment, prepared, config, canary_seeds(experiment.seed, seeds), deadline)
    return {"config": config, "from_night": source.date.isoformat(), "environment": environment, "runs": runs}


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


def run_night(
    base: Experiment,
    opts: NightOptions,
    prepared: Prepared,
    hooks: list[StudyHooks],
    progress: Progress | None = None,
    publish: Publish | None = None,
) -> tuple[dict[str, Any], list[Path]]:
    """Run (or resume) tonight's study and write the morning report; returns it and its files.

    A signal still writes the report (status interrupted) and is then raised again.
    """
    # Only nights that measured the same thing are history (each night is its own study, so a
    # changed target or cap would not be refused: it would just make the comparison wrong).
    past = [n for n in nights(base.storage, base.name) if n.date < opts.night and n.objective]
    base = resolve_clock(base, past[0].objective if past else None)  # clock: auto keeps the last night's, so history compares
    objective = ObjectiveIdentity.of(base)
    earlier = [n for n in past if objective.same_as(ObjectiveIdentity.stored(n.objective))]
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
        if deadline.left() >= experiment.objective.cap_s:
            done = run_study(
                experiment.with_overrides(timeout_s=deadline.left()), progress=progress, prepared=prepared, hooks=[*hooks, ledger]
            )
            wanted = experiment.budget.n_trials
            finished = len(finished_search_trials(done))
            ending = (
                f"all {wanted} trials finished"
                if wanted and finished >= wanted
                else f"the time budget ran out after {finished} finished search trials"
            )
        else:
            ending = "the budget left no time for a trial"
    except KeyboardInterrupt as err:
        ending, interrupted = str(err) or "interrupted", err
    except StudyFailed as err:
        ending = f"failed: {err}"
    ledger.save(study)
    report = judge_night(study, experiment, earlier, environment, ending, interrupted is not None)
    files = write_report(report, opts.reports / base.name / opts.night.isoformat())
    if publish is not None:
        publish(study, files)
    if interrupted is not None:
        raise interrupted
    return report, files


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
