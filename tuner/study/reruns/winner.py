"""The best configuration written as an experiment that `tuner train` runs once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import yaml

from tuner.errors import ConfigError
from tuner.study.experiment.settings import AUTO, CAP_MULTIPLE, Objective
from tuner.study.record import COMPLETE, TrialRecord, records
from tuner.study.reruns.baseline import compare
from tuner.study.reruns.confirmation import Confirmed, confirmed, confirmed_winner
from tuner.study.reruns.exported import exported_params
from tuner.study.reruns.racing import best_in_study
from tuner.study.scoring.censoring import run_seconds
from tuner.study.scoring.pareto import Point, describe, objective_names, pick, several, study_front
from tuner.study.scoring.units import counted, span, study_unit, study_units, with_unit
from tuner.study.study_record import study_experiment, study_objective


def best_experiment(study: optuna.Study, trial: TrialRecord) -> dict[str, Any]:
    """The study's experiment with every dimension fixed to the trial's configuration (those its
    choices use, and every value off its default: tuner/study/reruns/exported.py)."""
    experiment = dict(study_experiment(study))
    experiment["name"] = f"{study.study_name}-best"
    experiment["search_space"] = exported_params(study, trial.config).params  # own hyperparameters too
    # The trial's own seed, so that `tuner train` repeats the trial rather than a neighbour of it.
    experiment["seed"] = trial.seed if trial.seed is not None else experiment["seed"]
    experiment["budget"] = {"n_trials": 1, "timeout_s": None}
    experiment["proxy"] = None  # the export is the job at full size, trained as it is
    objective = study_objective(study)
    if objective is not None and "objective" in experiment:  # cap_s: auto as the study resolved it: `tuner train` runs no baseline
        auto = experiment["objective"].get("cap_s") == AUTO
        experiment["objective"] = {**experiment["objective"], "cap_s": exported_cap(study, trial, objective) if auto else objective.cap_s}
    return experiment


def exported_cap(study: optuna.Study, trial: TrialRecord, objective: Objective) -> float:
    """The cap a ``cap_s: auto`` study's export trains under: the study's, or ``CAP_MULTIPLE`` x the
    slowest run of the configuration that reached the target, whichever is longer.

    The study's cap is twice the baseline's first run, a limit for the search; seeds move a
    configuration's time as much as 2.5x on a noisy task (the digits table's best: 0.056 to
    0.144 s), and replays of an export under the study's cap missed on a loaded machine where the
    same file and seed reached without it (docs/benchmarks.md, "Does the export reach the target again?").
    """
    runs = [r.result for r in records(study, COMPLETE) if r.config_key == trial.config_key and r.reached and r.result is not None]
    slowest = max((run_seconds(r, objective) for r in runs), default=0.0)
    return max(float(objective.cap_s), CAP_MULTIPLE * slowest)


@dataclass(frozen=True)
class BestChoice:
    """What `tuner best` exports: the confirmed winner when there is one, else the best single trial."""

    trial: TrialRecord
    confirmation: Confirmed | None  # its configuration's confirmation runs, won or not
    note: str  # on what evidence, in one line

    @property
    def confirmed(self) -> bool:
        """Its configuration won its confirmation: it reached the target on every seed (``confirm.require``: or on most)."""
        return self.confirmation is not None and self.confirmation.eligible

    def headline(self, study: optuna.Study) -> str:
        o = study_objective(study)
        if self.confirmation is None:
            value = with_unit(self.trial.value, study_unit(study))
            what = f"the baseline (trial {self.trial.number})" if self.trial.is_baseline else f"trial {self.trial.number}"
            return f"{what}, {value} to {o.goal.describe()} on the {o.clock} clock"
        return f"trial {self.trial.number}'s configuration, {self.confirmation.summary()} to {o.goal.describe()} on the {o.clock} clock"


def winner(study: optuna.Study) -> BestChoice | None:
    """The study's one winner, the trial every view names: the MLflow study run's tags and
    best.yaml (tuner/track/summary.py), `tuner best`, `tuner report` and the nightly report.

    The confirmed winner (best median over seeds), else the search's best configuration (by its
    median when raced) with a note; the baseline when neither is faster than it (a winner is never
    worse than what one has). None when no trial reached the target, and for a study of several
    objectives: a front has no single winner (tuner/study/scoring/pareto.py).
    """
    if several(study):
        return None
    search = search_choice(study)
    baseline = [r for r in records(study, COMPLETE) if r.is_baseline and r.reached and r.value is not None]
    comparison = compare(study) if baseline else None
    if baseline and (search is None or (comparison is not None and comparison.ratio <= 1)):
        why = comparison.sentence() if comparison is not None else "no search trial reached the target"
        return BestChoice(min(baseline, key=lambda r: (r.value, r.number)), None, f"the baseline: the search found nothing faster ({why})")
    return search


def best_choice(study: optuna.Study) -> BestChoice:
    """``winner``, for a command that exports it: a one-line ConfigError when there is none."""
    choice = winner(study)
    if choice is None:
        raise ConfigError(study.study_name, "best", "a study with at least one trial that reached the target", "none reached it")
    return choice


def search_choice(study: optuna.Study) -> BestChoice | None:
    """The search's own choice: the confirmed winner, else the fastest single trial; None when no trial reached the target."""
    confirmed_one = confirmed_winner(study)
    if confirmed_one is not None:
        return BestChoice(confirmed_one.trial, confirmed_one, "confirmed: the best median over fresh seeds among the top configurations")
    best = best_in_study(study)  # a configuration raced in the search counts by its median
    if best is None:
        return None
    trial = best.fastest or best.trial  # its own seed, so that `tuner train` repeats that run
    ranked = confirmed(study)  # none eligible: a winner would have been returned above
    steadiest = max(ranked, key=lambda c: (c.reached / c.n, -c.median), default=None)
    if steadiest is not None and steadiest.reached:
        # A configuration that reaches the target on some seeds beats a faster one that reaches it on fewer:
        # on a target near a task's ceiling, how often a configuration reaches is the first thing to know.
        seeds = "every confirmation seed" if steadiest.require == "all" else "most of its confirmation seeds"
        often = f"this one reached it on {steadiest.reached} of {steadiest.n}, the most often"
        note = f"not confirmed: no configuration reached the target on {seeds}; {often}"
        return BestChoice(steadiest.trial, steadiest, note)
    if ranked:
        note = "not confirmed: no confirmed configuration reached the target again; this is the best single run"
    elif best.raced:
        (low, high), unit = best.spread, study_unit(study)
        note = (
            f"not confirmed: the best median in the search, {with_unit(best.median, unit)} over {counted(len(best.values), 'seed')} "
            f"(range {span(low, high, unit)}); "
            "`tuner confirm` re-runs the top configurations on fresh seeds"
        )
    else:
        note = "not confirmed: a single run, which may be a lucky draw; `tuner confirm` re-runs the top configurations on fresh seeds"
    return BestChoice(trial, None, note)


def write_best(study: optuna.Study, path: str | Path) -> tuple[TrialRecord, dict[str, Any]]:
    choice = best_choice(study)
    return choice.trial, write_configuration(
        study, choice.trial, path, f"Best configuration of study {study.study_name!r}: {choice.headline(study)}", choice.note
    )


def write_configuration(study: optuna.Study, trial: TrialRecord, path: str | Path, headline: str, note: str) -> dict[str, Any]:
    """Write ``trial``'s configuration as an experiment `tuner train` runs once, under a commented header."""
    experiment = best_experiment(study, trial)
    left_out = exported_params(study, trial.config).note()
    header = f"# {headline}.\n# {note[0].upper() + note[1:]}.\n# Train it once with: tuner train {Path(path).name}\n"
    header += f"# Search space: {left_out}.\n" if left_out else ""
    Path(path).write_text(header + yaml.safe_dump(experiment, sort_keys=False))
    return experiment


def write_pick(study: optuna.Study, path: str | Path, choice: str) -> tuple[Point, dict[str, Any]]:
    """Export the point of a multi-objective study's front that ``choice`` names (tuner/study/scoring/pareto.py)."""
    front, names = study_front(study), objective_names(study)
    if not front:
        raise ConfigError(study.study_name, "best", "a study with at least one trial that reached the target", "none reached it")
    try:
        point = pick(front, choice, names)
    except ValueError as err:
        raise ConfigError("tuner best", "--pick", str(err), choice) from None
    values = describe(point.values, names, study_units(study))
    evidence = f"medians over {counted(point.seeds, 'confirmation seed')}" if point.confirmed else "a single search run, not confirmed"
    headline = f"Point {choice!r} of the Pareto front of study {study.study_name!r}: trial {point.trial.number}'s configuration, {values}"
    return point, write_configuration(
        study, point.trial, path, headline, f"{evidence}; {len(front)} point{'s' if len(front) != 1 else ''} on the front"
    )
