"""Confirmation: re-run the best configurations on fresh seeds; the winner is the best median.

The fastest single trial of a noisy study is a lucky draw (DESIGN.md, "Confirmation").
The top-k distinct configurations that reached the target are enqueued as ordinary trials
of the same study, marked ``confirm_of=<trial number>`` with their ``seed``, so they
resume, are tracked and are stored like any other trial; they are never capped or pruned.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.study.experiment import Confirm
from tuner.train.result import Outcome
from tuner.train.trial_config import TrialConfig

CONFIRM_OF = "confirm_of"
# Confirmation seeds sit far from the search's (experiment seed + trial number), and every
# configuration gets the same ones, so their comparison is not a comparison of seeds.
SEED_OFFSET = 100_000
# A run that is queued, running or done counts as present; a failed one is run again.
PRESENT = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED)


def is_confirmation(user_attrs: dict[str, Any]) -> bool:
    """True for a trial enqueued as a confirmation run."""
    return CONFIRM_OF in user_attrs


def confirmation_seeds(base_seed: int, n: int) -> list[int]:
    return [base_seed + SEED_OFFSET + i for i in range(n)]


def config_key(trial: FrozenTrial) -> str | None:
    """What makes two trials the same configuration: the full training configuration."""
    config = trial.user_attrs.get("config")
    return json.dumps(config, sort_keys=True) if config is not None else None


def candidates(study: optuna.Study, top_k: int) -> list[FrozenTrial]:
    """The ``top_k`` distinct configurations that reached the target in the search, fastest first."""
    reached = [
        t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if not is_confirmation(t.user_attrs) and t.user_attrs.get("outcome") == Outcome.REACHED.value and t.value is not None
    ]
    chosen: dict[str, FrozenTrial] = {}
    for t in sorted(reached, key=lambda t: (t.value, t.number)):
        key = config_key(t)
        if key is not None and key not in chosen:
            chosen[key] = t
    return list(chosen.values())[:top_k]


def _runs_by_key(study: optuna.Study, states: tuple[TrialState, ...]) -> dict[str, tuple[FrozenTrial, list[FrozenTrial]]]:
    """Confirmation runs grouped by configuration, each with the search trial they confirm."""
    trials = study.get_trials(deepcopy=False)
    by_number = {t.number: t for t in trials}
    runs: dict[str, tuple[FrozenTrial, list[FrozenTrial]]] = {}
    for t in trials:
        if t.state in states and is_confirmation(t.user_attrs):
            original = by_number.get(t.user_attrs[CONFIRM_OF])
            key = config_key(original) if original is not None else None
            if key is not None:
                runs.setdefault(key, (original, []))[1].append(t)
    return runs


def missing_runs(study: optuna.Study, settings: Confirm, base_seed: int) -> list[tuple[FrozenTrial, int]]:
    """(search trial, seed) pairs the top-k configurations still lack, seed by seed.

    Seed-major order: a budget that runs out leaves every configuration with the same
    number of seeds, and machine noise hits them alike.
    """
    present = _runs_by_key(study, PRESENT)
    tops = candidates(study, settings.top_k)
    missing = []
    for seed in confirmation_seeds(base_seed, settings.seeds):
        for trial in tops:
            _, runs = present.get(config_key(trial) or "", (trial, []))
            if seed not in {r.user_attrs.get("seed") for r in runs}:
                missing.append((trial, seed))
    return missing


def enqueue_confirmation(study: optuna.Study, settings: Confirm, base_seed: int) -> int:
    """Queue the runs the top-k configurations still lack; returns how many are queued in all."""
    for trial, seed in missing_runs(study, settings, base_seed):
        study.enqueue_trial(dict(trial.params), user_attrs={CONFIRM_OF: trial.number, "seed": seed})
    return pending_runs(study)


def confirmation_due(study: optuna.Study, settings: Confirm, base_seed: int) -> bool:
    """True when some confirmation run is missing or still queued."""
    return bool(missing_runs(study, settings, base_seed)) or pending_runs(study) > 0


def pending_runs(study: optuna.Study) -> int:
    """Confirmation runs queued and not yet started."""
    return sum(is_confirmation(t.user_attrs) for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))


@dataclass(frozen=True)
class Confirmed:
    """A configuration's confirmation: its runs' objective values (censored when missed)."""

    trial: FrozenTrial           # the search trial it confirms (the fastest with this configuration)
    values: tuple[float, ...]
    reached: int                 # runs that reached the target

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.values), max(self.values)

    @property
    def eligible(self) -> bool:
        """A configuration that never reached the target in confirmation cannot win."""
        return self.reached > 0

    def summary(self) -> str:
        low, high = self.spread
        return f"median {self.median:.3f} s over {self.n} seeds (range {low:.3f}-{high:.3f} s, reached on {self.reached} of {self.n})"


def confirmed(study: optuna.Study) -> list[Confirmed]:
    """Every confirmed configuration, best first: eligible ones by median, then by spread."""
    out = []
    for original, trials in _runs_by_key(study, (TrialState.COMPLETE,)).values():
        values = tuple(float(t.value) for t in trials if t.value is not None)
        if values:
            reached = sum(t.user_attrs.get("outcome") == Outcome.REACHED.value for t in trials)
            out.append(Confirmed(original, values, reached))
    return sorted(out, key=lambda c: (not c.eligible, c.median, c.spread[1] - c.spread[0], c.trial.number))


def confirmed_winner(study: optuna.Study) -> Confirmed | None:
    """The configuration with the best median over its confirmation runs, if any reached."""
    ranked = confirmed(study)
    return ranked[0] if ranked and ranked[0].eligible else None


def confirmation_table(study: optuna.Study) -> str:
    """The confirmed configurations, best first, as a plain-text table."""
    rows = [("trial", "median_s", "range_s", "reached", "config")]
    for c in confirmed(study):
        config = c.trial.user_attrs.get("config")
        low, high = c.spread
        short = TrialConfig(**config).short() if config else ""
        rows.append((str(c.trial.number), f"{c.median:.3f}", f"{low:.3f}-{high:.3f}", f"{c.reached}/{c.n}", short))
    if len(rows) == 1:
        return "no confirmation runs yet"
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows)
