"""The baseline: the configuration run today, measured on the confirmation seeds beside the winner.

An experiment names it under ``baseline:`` (a mapping of training dimensions and the task's
own hyperparameters) over the task's reference configuration: ``TrialConfig``'s defaults for
a built-in task or a task function; for a training function of one's own, what that function
runs when nobody tunes it: its keyword defaults and the values the search space fixes
(``baseline_configuration``), so that the configuration recorded is the one trained. Every study trains it
on the same fresh seeds as the confirmation runs, as trials marked as the baseline
(tuner/study/record.py): never pruned or capped, not counted in a trial budget, never a
candidate for the search's best. Its run on the first seed is the study's first trial
(``enqueue_first``). The winner's ratio to it is the sentence every summary states; a winner
no faster than it leaves the baseline as what `tuner best` exports (tuner/study/reruns/winner.py).
"""

from __future__ import annotations

import inspect
import statistics
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.record import (
    COMPLETE,
    NOT_FAILED,
    QUEUED,
    TrialRecord,
    baseline_attrs,
    best_reached,
    records,
)
from tuner.study.reruns.confirmation import confirmation_seeds, confirmed_winner, settled
from tuner.study.reruns.seed_values import OverSeeds
from tuner.study.scoring.objectives import words
from tuner.study.scoring.pareto import baseline_line, several
from tuner.study.scoring.units import counted, study_unit
from tuner.study.space.space import Fixed, SearchSpace
from tuner.study.study_record import study_confirm, study_experiment, study_fidelity, study_objective
from tuner.tasks.registry import BUILTIN_TASKS, hyperparameters_at_load, is_training_function, task_factory
from tuner.train.trial_config import DIMENSIONS, TrialConfig


def baseline_configuration(experiment: Experiment, space: SearchSpace | None = None) -> TrialConfig:
    """The configuration the baseline trains: ``baseline:`` over the task's reference configuration.

    For a training function the reference is its own: its keyword defaults for its own
    hyperparameters, and every value the search space (``space``, else the experiment's) fixes:
    ``optimizer: adamw`` is what the loop trains with, whatever ``TrialConfig``'s default. Own
    hyperparameters a training function does not take are left out (a task function's are
    known only once it is built, and its model builder takes those it names).
    """
    accepted = hyperparameters_at_load(experiment.task, experiment.task_options)
    values: dict[str, Any] = {}
    if experiment.task not in BUILTIN_TASKS and is_training_function(task_factory(experiment.task)):
        values.update({k: d for k, d in (accepted or {}).items() if d is not inspect.Parameter.empty})
        for name, spec in (space or experiment.search_space).dims.items():  # in order: a condition reads the values above it
            if isinstance(spec, Fixed) and all(values.get(k, _default(k)) in allowed for k, allowed in spec.when.items()):
                values[name] = spec.value
    values.update(experiment.baseline)
    dims = {k: DIMENSIONS[k].cast(v) for k, v in values.items() if k in DIMENSIONS}
    return TrialConfig(**dims, hyper={k: v for k, v in values.items() if k not in DIMENSIONS and (accepted is None or k in accepted)})


def _default(name: str) -> Any:
    """A built-in dimension's reference value (None for a name of the task's own)."""
    return getattr(TrialConfig(), name, None)


def _runs(study: optuna.Study, states: tuple, config: TrialConfig | None = None) -> list[TrialRecord]:
    runs = [r for r in records(study, states) if r.is_baseline]
    if config is None and runs:
        # The latest baseline configuration: an experiment's baseline may change between runs of a study.
        config = runs[-1].config
    key = None if config is None else TrialRecord.key_of(config)
    return [r for r in runs if r.config_key == key]


def missing_seeds(study: optuna.Study, config: TrialConfig, seeds: list[int]) -> list[int]:
    """The confirmation seeds the baseline has no run for yet (a failed run is run again)."""
    present = {r.seed for r in _runs(study, NOT_FAILED, config)}
    return [s for s in seeds if s not in present]


def enqueue_baseline(study: optuna.Study, config: TrialConfig, base_seed: int, n_seeds: int) -> int:
    """Queue the baseline on the confirmation seeds it still lacks; returns how many were queued."""
    missing = missing_seeds(study, config, confirmation_seeds(base_seed, n_seeds))
    for seed in missing:
        study.enqueue_trial({}, user_attrs=baseline_attrs(config.as_dict(), seed))
    return len(missing)


def enqueue_first(study: optuna.Study, experiment: Experiment) -> bool:
    """Queue the baseline on the first confirmation seed, unless it has a run there (finished,
    running or queued): it is the study's first trial, so that the cap (``cap_s: auto``),
    capping and the incumbent have a reference from the start, and it counts as one of the
    baseline's seeds in the closing ratio. True when a run of it there is queued."""
    config = baseline_configuration(experiment)
    first = confirmation_seeds(experiment.seed, experiment.confirm.seeds)[:1]
    if missing_seeds(study, config, first):
        study.enqueue_trial({}, user_attrs=baseline_attrs(config.as_dict(), first[0]))
    return any(r.is_baseline and r.seed == first[0] for r in records(study, QUEUED))


def baseline_due(study: optuna.Study, config: TrialConfig, seeds: list[int]) -> bool:
    """True when a baseline run on ``seeds`` is missing or still queued."""
    return bool(missing_seeds(study, config, seeds)) or pending_baseline(study) > 0


def pending_baseline(study: optuna.Study) -> int:
    return sum(r.is_baseline for r in records(study, QUEUED))


@dataclass(frozen=True)
class SeedFigures(OverSeeds):
    """One configuration's objective values over seeds (censored values for misses)."""

    values: tuple[float, ...]
    reached: int
    devices: int = 1
    energy_j: tuple[float, ...] = ()

    @property
    def median_energy_j(self) -> float | None:
        return statistics.median(self.energy_j) if self.energy_j else None

    def describe(self, unit: str = "s") -> str:
        if len(self.values) == 1:  # one run has no range
            return f"{self.median:.3g} {unit}"
        low, high = f"{self.low:.3g}", f"{self.high:.3g}"
        sep = " to " if "e" in low + high else "-"  # a dash beside an exponent would read as a minus sign
        return f"{self.median:.3g} {unit}, range {low}{sep}{high} {unit}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "values": list(self.values),
            "median": self.median,
            "range": [self.low, self.high],
            "seeds": self.n,
            "reached": self.reached,
            "devices": self.devices,
            "median_energy_j": self.median_energy_j,
        }

    @classmethod
    def of(cls, runs: list[TrialRecord]) -> SeedFigures | None:
        done = [r for r in runs if r.value is not None]
        if not done:
            return None
        energy = tuple(r.result.energy_j for r in done if r.result is not None and getattr(r.result, "energy_j", None) is not None)
        devices = done[0].config.devices if done[0].config is not None else 1
        return cls(tuple(float(r.value) for r in done), sum(r.reached for r in done), devices, energy if len(energy) == len(done) else ())


@dataclass(frozen=True)
class Comparison:
    """The winner against the baseline, both as medians over seeds, lower is better."""

    winner: SeedFigures
    baseline: SeedFigures
    confirmed: bool = True
    unit: str = "s"
    minimize: str = "time"
    asked: int | None = None  # the confirmation seeds the experiment asks for, when known
    target: str = ""  # what both ran to, said when it is not the default accuracy ("loss <= 2.6")
    clear_margin: float | None = None  # set when the call was clear by confirm.clear_margin, so nothing was re-run

    @property
    def ratio(self) -> float:
        """How many times faster the winner is (baseline median / winner median)."""
        return self.baseline.median / self.winner.median

    def sentence(self) -> str:
        """ "winner X.Xx faster than the baseline (medians over N seeds, ranges)"; "the search's best X.Xx slower ..."."""
        seeds = (
            counted(self.winner.n, "seed")
            if self.winner.n == self.baseline.n
            else f"{self.winner.n} and {counted(self.baseline.n, 'seed')}"
        )
        if not self.confirmed:
            seeds = f"a single unconfirmed run against {counted(self.baseline.n, 'baseline seed')}"
        word = words(self.minimize)[0 if self.ratio >= 1 else 1]
        factor = self.ratio if self.ratio >= 1 else 1 / self.ratio
        who = "winner" if self.ratio >= 1 else "the search's best"  # slower: the baseline is what tuner best exports
        to = " to " + self.target if self.target else ""
        figures = f"{self.winner.describe(self.unit)} against {self.baseline.describe(self.unit)}"
        if round(factor, 1) > 1.0:
            text = f"{who} {factor:.1f}x {word}{to} than the baseline (medians over {seeds}: {figures})"
        else:  # within 5% either way, "1.0x faster" reads as a contradiction: the two are level
            text = f"{who} level with the baseline{to} ({factor:.2f}x {word}; medians over {seeds}: {figures})"
        if self.baseline.reached < self.baseline.n:
            # A miss is scored at its censored value, at least the cap: the true ratio is at least this.
            reached = f"{self.baseline.reached} of {counted(self.baseline.n, 'seed')}"
            text += f"; the baseline reached the target on {reached} (a miss counts at its censored score), so the ratio is a lower bound"
        if self.clear_margin is not None:
            text += f"; {self.clear_margin:g}x apart or more on single runs (confirm.clear_margin), so neither was re-run"
        return text + self._fewer_seeds()

    def _fewer_seeds(self) -> str:
        """Said when either side ran on fewer seeds than asked (the budget ended first): the ratio rests on less."""
        short = [
            f"the {side} on {figures.n} of {self.asked}"
            for side, figures in (("winner", self.winner), ("baseline", self.baseline))
            if self.asked is not None and figures.n < self.asked and (side == "baseline" or self.confirmed)
        ]
        if not short:
            return ""
        return f"; fewer seeds than asked: {' and '.join(short)} seeds ran (`tuner confirm` runs the rest), so the ratio is provisional"

    def as_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "sentence": self.sentence(),
            "confirmed": self.confirmed,
            "winner": self.winner.as_dict(),
            "baseline": self.baseline.as_dict(),
        }


def baseline_figures(study: optuna.Study) -> SeedFigures | None:
    """The baseline's completed runs, over seeds; None before any finished."""
    return SeedFigures.of(_runs(study, COMPLETE))


def baseline_reached(study: optuna.Study) -> tuple[float, int] | None:
    """The baseline's median time over its runs that reached the target, and its first such run's number; None before one did."""
    runs = [r for r in _runs(study, COMPLETE) if r.reached and r.value is not None]
    return (statistics.median(float(r.value) for r in runs), runs[0].number) if runs else None


def too_easy(study: optuna.Study) -> str | None:
    """A line when the baseline's first run reached the target at its first evaluation: every
    configuration may then tie at one evaluation, and the study cannot tell them apart."""
    runs = _runs(study, COMPLETE)
    curve = runs[0].curve if runs and runs[0].reached else None
    objective = study_objective(study)
    if curve is None or len(curve.metric) != 1 or objective is None:
        return None
    target = objective.goal
    return (
        f"the baseline reached {target.metric} {target.sign} {target.value:g} at its first evaluation "
        f"({curve.samples[0]} samples): the target is too easy to tell configurations apart; "
        "set a harder objective.target or a smaller objective.eval_every_samples"
    )


def baseline_trial_config(study: optuna.Study) -> TrialConfig | None:
    runs = _runs(study, COMPLETE)
    return runs[-1].config if runs else None


def winner_figures(study: optuna.Study) -> tuple[SeedFigures, bool] | None:
    """The confirmed winner's runs over seeds, else the best single trial (unconfirmed)."""
    winner = confirmed_winner(study)
    if winner is not None:
        from tuner.study.record import confirmation_groups

        runs = confirmation_groups(study, COMPLETE).get(winner.trial.config_key or "", (None, []))[1]
        figures = SeedFigures.of(runs)
        if figures is not None:
            return figures, True
    best = best_reached(study)
    if best is None:
        return None
    figures = SeedFigures.of([best])
    return (figures, False) if figures is not None else None


def compare(study: optuna.Study) -> Comparison | None:
    """The winner against the baseline; None until both have finished runs."""
    baseline = baseline_figures(study)
    winner = winner_figures(study)
    if baseline is None or winner is None:
        return None
    minimize = study_minimize(study)
    settings = study_confirm(study)
    # A clear call is not re-run, so no seeds are missing (unless `tuner confirm` re-ran it since).
    clear = not winner[1] and baseline.n == 1 and settled(study, settings)
    asked = None if clear else settings.seeds
    objective = study_objective(study)
    goal = objective.goal if objective is not None else None
    target = goal.describe() if goal is not None and not goal.default_metric else ""
    clear_margin = settings.clear_margin if clear else None
    return Comparison(winner[0], baseline, winner[1], study_unit(study), minimize, asked, target, clear_margin)


def baseline_sentence(study: optuna.Study) -> str:
    """The summary line: the ratio, or why there is none yet (a front's own line: tuner/study/scoring/pareto.py)."""
    if several(study):
        return baseline_line(study)
    comparison = compare(study)
    if comparison is not None:
        return comparison.sentence()
    if baseline_figures(study) is None:
        if study_fidelity(study) == "full":  # a proxy study's decision: the baseline runs after the first candidate
            return "no baseline runs finished yet at full size (`tuner run` again finishes the decision)"
        return "no baseline runs finished yet (its first run is the study's first trial, the others run with the confirmation runs)"
    return "no winner to compare with the baseline yet"


def study_minimize(study: optuna.Study) -> str:
    """What the study minimizes, from its stored experiment (time for studies made before the choice existed)."""
    return (study_experiment(study).get("objective") or {}).get("minimize", "time")


def stored_baseline(study: optuna.Study) -> dict[str, Any]:
    """The baseline mapping the study's experiment named (empty: the reference configuration)."""
    return dict(study_experiment(study).get("baseline") or {})
