"""What a trial stores in Optuna, and how it is read back: the one owner of trial attributes.

A trial's record is its user attributes (what it trained with, how it ended, its curve)
plus Optuna's own number, state and value. Everything else reads it through
``TrialRecord.of(trial)`` and the queries below, never by string key, so the stored
layout can change here alone (the study's own attributes are tuner/study/study_record.py's).
Studies written by earlier versions still read: a curve without ``robust_s`` or ``loss``
is accepted, and a ``config`` missing keys or holding keys this version no longer knows
reads through ``TrialConfig.from_stored``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.train.clocks import CLOCK_FIELDS
from tuner.train.result import Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

# Trial user attributes. A result's own fields (TrialResult.to_attrs) sit beside these.
CONFIG = "config"
SEED = "seed"
CONFIRM_OF = "confirm_of"  # a confirmation run: the search trial it re-runs
RETRY_OF = "retry_of"  # a re-run of a trial whose worker died (tuner/study/storage/open.py)
RACE_OF = "race_of"  # a race run: a search trial's configuration on another seed (tuner/study/reruns/racing.py)
BASELINE = "baseline"  # a run of the experiment's baseline configuration (tuner/study/reruns/baseline.py)
# The marks of a re-run of a configuration (not a searched one): on top of a trial budget (tuner/study/storage/budget.py).
RERUN_MARKS = (CONFIRM_OF, RACE_OF, BASELINE)
PROXY_OF, WARM_START = "proxy_of", "warm_start"  # a proxy study's candidate at full size; a nightly sweep's warm start
CURVE = "curve"
OUTCOME = "outcome"
REASON = "reason"
MLFLOW_RUN_ID = "mlflow_run_id"

# Trial states, each set once. Optuna's COMPLETE and PRUNED trials ended with a result that
# says something about the configuration; FAIL trials (failed, interrupted, lost) do not.
COMPLETE = (TrialState.COMPLETE,)
RUNNING = (TrialState.RUNNING,)
QUEUED = (TrialState.WAITING,)
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
ENDED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
# What takes a place in a trial budget: trials that finished, and trials running now.
FINISHED_OR_RUNNING = (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED)
# Every trial but a failed one: queued, running or finished.
NOT_FAILED = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED)

AnyTrial = FrozenTrial | optuna.Trial


@dataclass(frozen=True)
class Curve:
    """A trial's evaluations as stored: samples seen, held-out metric, the clocks, the loss."""

    samples: tuple[int, ...] = ()
    steps: tuple[int, ...] = ()  # optimizer steps (a study's trials replay from them: tuner/simulate/table.py)
    metric: tuple[float, ...] = ()
    train_s: tuple[float, ...] = ()
    wall_s: tuple[float, ...] = ()
    robust_s: tuple[float, ...] = ()
    cpu_s: tuple[float, ...] = ()
    loss: tuple[float | None, ...] = ()

    @classmethod
    def of(cls, stored: dict[str, list[Any]]) -> Curve:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: tuple(v) for k, v in stored.items() if k in names and v is not None})

    @classmethod
    def of_result(cls, result: TrialResult) -> Curve:
        evs = result.evaluations
        return cls(
            samples=tuple(e.samples for e in evs),
            steps=tuple(e.steps for e in evs),
            metric=tuple(e.metric for e in evs),  # exact: a replay (tuner/simulate/) compares what the trial compared
            train_s=tuple(round(e.train_s, 4) for e in evs),
            wall_s=tuple(round(e.wall_s, 4) for e in evs),
            robust_s=tuple(round(e.robust_s, 4) for e in evs),  # equal-time pruning reads the objective's clock
            cpu_s=tuple(round(e.cpu_s, 4) for e in evs) if all(e.cpu_s is not None for e in evs) else (),
            loss=tuple(None if e.loss is None else round(e.loss, 5) for e in evs),  # lets `tuner sync` rebuild MLflow's history
        )

    def as_dict(self) -> dict[str, list[Any]]:
        return {f.name: list(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def times(self, clock: str) -> tuple[float, ...] | None:
        """Elapsed times on the named clock (robust, train, wall, cpu), one per metric; None if not stored.

        Studies written before ``robust_s`` was stored fall back to ``train_s``, its closest clock.
        """
        times = getattr(self, CLOCK_FIELDS[clock]) or (self.train_s if clock == "robust" else ())
        return times if times and len(times) == len(self.metric) else None


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the study holds it. ``TrialRecord.of`` reads a finished or a live trial.

    ``outcome`` is None for a trial that never recorded one (queued, running, or lost with
    its worker); ``result`` and ``curve`` then are None too.
    """

    number: int
    state: TrialState
    value: float | None
    params: dict[str, Any]
    outcome: Outcome | None
    reason: str
    seed: int | None
    confirm_of: int | None
    retry_of: int | None
    warm_start: str | None
    mlflow_run_id: str | None
    trial: AnyTrial = field(compare=False, repr=False)
    is_baseline: bool = False  # a measurement of the baseline: never pruned, capped, counted or a winner
    race_of: int | None = None  # a race run of this search trial's configuration (on top of a trial budget)
    values: tuple[float, ...] | None = None  # a multi-objective trial's values, one per objective (``value`` is then None)
    proxy_of: int | None = None  # a proxy study's candidate at full size: the proxy trial it came from

    @classmethod
    def of(cls, trial: AnyTrial) -> TrialRecord:
        """The record of a FrozenTrial, or of a live Trial (then RUNNING, without a value)."""
        a = trial.user_attrs
        outcome = a.get(OUTCOME)
        values = getattr(trial, "values", None)  # FrozenTrial.value raises in a multi-objective study
        return cls(
            number=trial.number,
            state=getattr(trial, "state", TrialState.RUNNING),
            value=values[0] if values is not None and len(values) == 1 else None,
            values=tuple(values) if values is not None and len(values) > 1 else None,
            params=dict(trial.params),
            outcome=Outcome(outcome) if outcome is not None else None,
            reason=a.get(REASON, ""),
            seed=a.get(SEED),
            confirm_of=a.get(CONFIRM_OF),
            retry_of=a.get(RETRY_OF),
            warm_start=a.get(WARM_START),
            is_baseline=bool(a.get(BASELINE, False)),
            race_of=a.get(RACE_OF),
            proxy_of=a.get(PROXY_OF),
            mlflow_run_id=a.get(MLFLOW_RUN_ID),
            trial=trial,
        )

    # Parsed on first use: the incumbent and the pruner read many records and few of these.
    @cached_property
    def config(self) -> TrialConfig | None:
        stored = self.trial.user_attrs.get(CONFIG)
        return TrialConfig.from_stored(stored) if stored is not None else None

    @property
    def unknown_config_keys(self) -> list[str]:
        """Keys of the stored configuration this version no longer knows: ``config`` leaves them out."""
        stored = self.trial.user_attrs.get(CONFIG)
        return TrialConfig.unknown_keys(stored) if stored is not None else []

    @cached_property
    def curve(self) -> Curve | None:
        stored = self.trial.user_attrs.get(CURVE)
        return Curve.of(stored) if stored else None

    @cached_property
    def result(self) -> TrialResult | None:
        if self.outcome is None:
            return None
        return TrialResult.from_attrs({REASON: "", **self.trial.user_attrs})

    @property
    def is_confirmation(self) -> bool:
        return self.confirm_of is not None

    @property
    def reached(self) -> bool:
        return self.outcome is Outcome.REACHED

    @property
    def is_measurement(self) -> bool:
        """A confirmation or baseline run: measured on a fixed seed, never pruned or capped."""
        return self.is_confirmation or self.is_baseline

    @property
    def is_rerun(self) -> bool:
        """A race, confirmation or baseline run: not a searched configuration, so on top of a trial budget."""
        return self.is_measurement or self.race_of is not None

    @property
    def role(self) -> str:
        """What the trial is for: ``trial`` (a searched configuration), ``race``, ``confirmation`` or ``baseline``."""
        return (
            "baseline" if self.is_baseline else "confirmation" if self.is_confirmation else "race" if self.race_of is not None else "trial"
        )

    @cached_property  # the incumbent, racing and the screen group every record by it, again and again
    def config_key(self) -> str | None:
        """What makes two trials the same configuration: the full training configuration."""
        return self.key_of(self.config) if self.config is not None else None

    @staticmethod
    def key_of(config: TrialConfig) -> str:
        return json.dumps(config.as_dict(), sort_keys=True)


# -- writing -------------------------------------------------------------------------------


def result_attrs(result: TrialResult) -> dict[str, Any]:
    """What ``write_result`` stores: the result's fields and its curve."""
    return {**result.to_attrs(), CURVE: Curve.of_result(result).as_dict()}


def write_attrs(trial: optuna.Trial, attrs: dict[str, Any]) -> None:
    """The trial's user attributes in one write where its storage takes several at once
    (tuner/study/storage/budget.py, proxy.py: one transaction, one call), else one by one."""
    backend = getattr(trial.storage, "_backend", trial.storage)  # Optuna's cache in front of a database
    write_many = getattr(backend, "set_trial_user_attrs", None)
    if write_many is None:
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        return
    write_many(trial._trial_id, attrs)
    trial._cached_frozen_trial.user_attrs.update(attrs)  # as Trial.set_user_attr keeps the trial's own copy


def write_result(trial: optuna.Trial, result: TrialResult) -> None:
    """Everything about how the trial ended, readable later as ``TrialRecord.of(trial).result``."""
    write_attrs(trial, result_attrs(result))


def write_start(trial: optuna.Trial, config: TrialConfig, seed: int) -> None:
    """What the trial trains with, stored before it trains (a dead worker's re-run repeats it)."""
    write_attrs(trial, {CONFIG: config.as_dict(), SEED: seed})


def write_reached_constraint(trial: optuna.Trial, result: TrialResult) -> None:
    """A multi-objective trial's feasibility: only trials that reached the target are feasible
    (Optuna's constraint, ``<= 0``), so a miss never sits on the front; closer misses violate less
    (by the miss score's normalised gap, tuner/train/target.py: ``target - best`` for an accuracy)."""
    trial.set_constraint("target", 0.0 if result.reached else max(result.goal.miss_gap(result.best_metric), 1e-9))


def write_run_id(trial: optuna.Trial, run_id: str) -> None:
    """The trial's MLflow run, so that the run can be closed if the trial's worker dies."""
    trial.set_user_attr(MLFLOW_RUN_ID, run_id)


def confirmation_attrs(confirm_of: int, seed: int) -> dict[str, Any]:
    """The user attributes a confirmation run is enqueued with."""
    return {CONFIRM_OF: confirm_of, SEED: seed}


def race_attrs(race_of: int, seed: int) -> dict[str, Any]:
    """The user attributes a race run is enqueued with (tuner/study/reruns/racing.py)."""
    return {RACE_OF: race_of, SEED: seed}


def baseline_attrs(config: dict[str, Any], seed: int) -> dict[str, Any]:
    """The user attributes a baseline run is enqueued with: its configuration is not sampled."""
    return {BASELINE: True, CONFIG: config, SEED: seed}


def warm_start_attrs(label: str) -> dict[str, Any]:
    """The user attributes a warm-started trial is enqueued with."""
    return {WARM_START: label}


def retry_attrs(trial: FrozenTrial, original: int) -> dict[str, Any]:
    """A dead trial's user attributes for its re-run, marked as a re-run of ``original``."""
    return {**trial.user_attrs, RETRY_OF: original}


# -- queries over a study ------------------------------------------------------------------


def records(study: optuna.Study, states: tuple[TrialState, ...] | None = None) -> list[TrialRecord]:
    """The study's trials in the given states (all by default), by trial number."""
    trials = study.get_trials(deepcopy=False, states=states)
    held = getattr(study._storage, "held_records", None)
    if held is None:
        return [TrialRecord.of(t) for t in trials]
    return [_held_record(t, held) for t in trials]


def _held_record(trial: FrozenTrial, held: dict[int, TrialRecord]) -> TrialRecord:
    # A storage that replaces a trial's object on every write (Optuna's in-memory storage,
    # tuner/simulate/memory_storage.py) offers ``held_records``: a record whose trial is the
    # very object read now is current, so it and its parsed configuration are built once.
    record = held.get(trial._trial_id)
    if record is None or record.trial is not trial:
        record = held[trial._trial_id] = TrialRecord.of(trial)
    return record


def finished_search_trials(study: optuna.Study) -> list[TrialRecord]:
    """Finished searched configurations: what a trial budget counts (race, confirmation and baseline runs come on top)."""
    return [r for r in records(study, FINISHED) if not r.is_rerun]


def best_of(trials: Iterable[TrialRecord]) -> TrialRecord | None:
    """The completed trial with the lowest time to target among those that reached it (the earliest on a tie).

    Baseline runs are left out: the best is what the search found.
    """
    reached = [r for r in trials if r.state is TrialState.COMPLETE and r.reached and r.value is not None and not r.is_baseline]
    return min(reached, key=lambda r: (r.value, r.number), default=None)


def best_reached(study: optuna.Study) -> TrialRecord | None:
    """``best_of`` the study's trials, read from the storage: trials of every worker count."""
    return best_of(records(study, COMPLETE))


def confirmation_groups(study: optuna.Study, states: tuple[TrialState, ...]) -> dict[str, tuple[TrialRecord, list[TrialRecord]]]:
    """Confirmation runs in ``states`` grouped by configuration, each with the search trial they confirm."""
    trials = records(study)
    by_number = {r.number: r for r in trials}
    groups: dict[str, tuple[TrialRecord, list[TrialRecord]]] = {}
    for r in trials:
        if r.state in states and r.is_confirmation:
            original = by_number.get(r.confirm_of)
            key = original.config_key if original is not None else None
            if key is not None:
                groups.setdefault(key, (original, []))[1].append(r)
    return groups
