"""Confirmation: re-run the best configurations on fresh seeds; the winner is the best median.

The fastest single trial of a noisy study is a lucky draw (docs/stopping.md, "Confirmation").
The top-k distinct configurations that reached the target are enqueued as ordinary trials
of the same study, marked ``confirm_of=<trial number>`` with their ``seed``, so they
resume, are tracked and are stored like any other trial; they are never capped or pruned.
Candidates are ranked by their median over the search's runs once raced (tuner/study/reruns/racing.py).

``confirm.require`` says how many confirmation seeds must reach the target for a
configuration to win: ``all`` (the default: a configuration that misses on any seed cannot
win) or ``majority``. The winner carries its median and spread.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import optuna

from tuner.study.experiment.load import Confirm
from tuner.study.record import COMPLETE, NOT_FAILED, QUEUED, TrialRecord, confirmation_attrs, confirmation_groups, records
from tuner.study.reruns.racing import configurations
from tuner.study.reruns.seed_values import OverSeeds
from tuner.study.scoring.pareto import pareto_candidates, several
from tuner.study.scoring.units import amount, column, counted, span, study_unit, with_unit
from tuner.study.study_record import study_experiment

# Confirmation seeds sit far from the search's (experiment seed + trial number), and every
# configuration gets the same ones, so their comparison is not a comparison of seeds.
SEED_OFFSET = 100_000


def confirmation_seeds(base_seed: int, n: int) -> list[int]:
    return [base_seed + SEED_OFFSET + i for i in range(n)]


def candidates(study: optuna.Study, top_k: int) -> list[TrialRecord]:
    """The ``top_k`` distinct configurations that reached the target in the search, fastest
    first: by their median over the search's runs once raced, else by their single time.
    A study of several objectives confirms points of its front instead (tuner/study/scoring/pareto.py)."""
    if several(study):
        return pareto_candidates(study, top_k)
    ranked = sorted(configurations(records(study, COMPLETE)), key=lambda c: (c.median, c.trial.number))
    return [c.trial for c in ranked][:top_k]


def settled(study: optuna.Study, settings: Confirm) -> bool:
    """True when ``settings.clear_margin`` is set and re-runs have nothing to decide: no search
    run reached the target yet, or its fastest and the baseline's fastest are ``clear_margin``
    times apart or more, either way (a clear call needs no seeds to show it; a close one does). Nothing is
    confirmed then and the baseline runs on no seed past its first: at a few trial-lengths each
    re-run is a configuration not searched (docs/stopping.md). Never with several objectives."""
    if settings.clear_margin is None or several(study):
        return False
    done = [r for r in records(study, COMPLETE) if r.value is not None]
    search = [r.value for r in done if r.reached and not r.is_measurement]
    if not search:
        return True
    baseline = [r.value for r in done if r.is_baseline and r.reached]
    # A baseline run that missed (capped: tuner/study/run/proxy_study.py) scores at least its
    # bound: it shows the search clearly faster, never the baseline.
    bounds = [r.value for r in done if r.is_baseline and not r.reached]
    if baseline and min(baseline) / min(search) <= 1 / settings.clear_margin:
        return True
    return bool(baseline or bounds) and min(baseline + bounds) / min(search) >= settings.clear_margin


def measured_seeds(study: optuna.Study, settings: Confirm, base_seed: int) -> list[int]:
    """The confirmation seeds the baseline is measured on: all of them, or its first run's alone while ``settled``."""
    return confirmation_seeds(base_seed, 1 if settled(study, settings) else settings.seeds)


def missing_runs(study: optuna.Study, settings: Confirm, base_seed: int) -> list[tuple[TrialRecord, int]]:
    """(search trial, seed) pairs the top-k configurations still lack, seed by seed (none once ``settled``).

    Seed-major order: a budget that runs out leaves every configuration with the same
    number of seeds, and machine noise hits them alike.
    """
    if settled(study, settings):
        return []
    present = confirmation_groups(study, NOT_FAILED)  # a failed run is run again
    tops = candidates(study, settings.top_k)
    missing = []
    for seed in confirmation_seeds(base_seed, settings.seeds):
        for trial in tops:
            _, runs = present.get(trial.config_key or "", (trial, []))
            if seed not in {r.seed for r in runs}:
                missing.append((trial, seed))
    return missing


def enqueue_confirmation(study: optuna.Study, settings: Confirm, base_seed: int) -> int:
    """Queue the runs the top-k configurations still lack; returns how many are queued in all."""
    for trial, seed in missing_runs(study, settings, base_seed):
        study.enqueue_trial(dict(trial.params), user_attrs=confirmation_attrs(trial.number, seed))
    return pending_runs(study)


def confirmation_due(study: optuna.Study, settings: Confirm, base_seed: int) -> bool:
    """True when some confirmation run is missing or still queued."""
    return bool(missing_runs(study, settings, base_seed)) or pending_runs(study) > 0


def pending_runs(study: optuna.Study) -> int:
    """Confirmation runs queued and not yet started."""
    return sum(r.is_confirmation for r in records(study, QUEUED))


@dataclass(frozen=True)
class Confirmed(OverSeeds):
    """A configuration's confirmation: its runs' objective values (censored when missed)."""

    trial: TrialRecord  # the search trial it confirms (the fastest with this configuration)
    values: tuple[float, ...]
    reached: int  # runs that reached the target
    require: str = "all"  # confirm.require: how many runs must reach the target to win
    unit: str = "s"  # the objective's (tuner/study/scoring/units.py)

    @property
    def quartiles(self) -> tuple[float, float]:
        """The interquartile range of its values (the values themselves below 4 runs)."""
        if self.n < 4:
            return self.spread
        q = statistics.quantiles(self.values, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def eligible(self) -> bool:
        """It may win: every run reached the target (``all``), or more than half (``majority``)."""
        return self.reached == self.n if self.require == "all" else 2 * self.reached > self.n

    def summary(self) -> str:
        low, high, u = *self.spread, self.unit
        seeds = counted(self.n, "seed")
        return f"median {with_unit(self.median, u)} over {seeds} (range {span(low, high, u)}, reached on {self.reached} of {self.n})"


def required(study: optuna.Study) -> str:
    """The study's ``confirm.require`` as stored with its experiment (``all`` if none)."""
    return study_experiment(study).get("confirm", {}).get("require", "all")


def confirmed(study: optuna.Study, require: str | None = None) -> list[Confirmed]:
    """Every confirmed configuration, best first: eligible ones by median, then by spread.

    ``require`` defaults to the study's own ``confirm.require``.
    """
    require, unit = require or required(study), study_unit(study)
    out = []
    for original, runs in confirmation_groups(study, COMPLETE).values():
        values = tuple(float(r.value) for r in runs if r.value is not None)
        if values:
            out.append(Confirmed(original, values, sum(r.reached for r in runs), require, unit))
    return sorted(out, key=lambda c: (not c.eligible, c.median, c.spread[1] - c.spread[0], c.trial.number))


def confirmed_winner(study: optuna.Study, require: str | None = None) -> Confirmed | None:
    """The eligible configuration with the best median over its confirmation runs, if any."""
    ranked = confirmed(study, require)
    return ranked[0] if ranked and ranked[0].eligible else None


def confirmation_table(study: optuna.Study) -> str:
    """The confirmed configurations, best first, as a plain-text table."""
    unit = study_unit(study)
    rows = [("trial", column("median", unit), column("range", unit), "reached", "config")]
    for c in confirmed(study):
        config = c.trial.config
        low, high = c.spread
        short = config.short() if config else ""
        rows.append((str(c.trial.number), amount(c.median, unit), span(low, high, unit, with_the_unit=False), f"{c.reached}/{c.n}", short))
    if len(rows) == 1:
        return "no confirmation runs yet"
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows)
