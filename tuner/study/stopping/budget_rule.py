"""The budget rule: the stopping strategy a study's budget calls for, in trial-lengths and workers.

``pruner.name: auto`` (the default) leaves the choice to this rule. A study's budget in
trial-lengths is its compute (``budget.timeout_s`` x its workers) over one trial's length:
the baseline's measured time when the study has run it (tuner/study/reruns/baseline.py), the
table's median trial in a simulation (tuner/simulate/repeats.py: ``budget_of``). From that
number and the workers it picks one of two strategies (docs/stopping.md has the table
that set the thresholds):

- **small budgets** (at most ``small_budget`` trial-lengths, or fewer than ``large_for_many``
  with ``many_workers`` or more): successive halving on the objective's clock (Optuna's
  ``SuccessiveHalvingPruner`` fed with time buckets, so a rung is a number of seconds, the
  same for every trial; the first rung one bucket in), capping at the incumbent as the
  experiment sets it, no racing or screening, and re-runs only to decide a close call: at a
  few trial-lengths every re-run is a configuration not searched. From ``deciding_from``
  trial-lengths a worker, a search whose fastest run is less than ``clear_margin`` times faster
  or slower than the baseline's runs its best configuration and the baseline on ``deciding_seeds`` seeds
  (``deciding_runs``); below that, the same runs only when the time the search leaves holds them
  (a trial budget spent early), none kept for them. The sampler models after a quarter of the
  trial-lengths in random trials (at least 3; at most the experiment's ``n_startup_trials``);
- **large budgets**: what shipped before the rule: equal-time pruning, capping at the
  incumbent, the throughput screen, racing on seeds and confirmation.

The experiment's own settings of the pruner (``percentile``, ``warmup_s``, ``bucket_s``, ...),
confirmation, racing and screening stand wherever the rule keeps them on; an experiment that
names a pruner other than ``auto`` is left as written.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tuner.study.experiment.load import Confirm, Experiment

AUTO = "auto"


@dataclass(frozen=True)
class Constants:
    """The rule's constants, one place for them: ``benchmarks/search_quality_table.py
    --leave-one-out`` sets them on all recorded tables but one and judges them on the one left
    out (docs/stopping.md), handing each candidate to the simulated studies; a study reads ``RULE``."""

    # At or below this many trial-lengths of compute per study (all workers together), the small-budget strategy.
    small_budget: float = 30.0
    # ... and with this many workers or more, at any budget below large_for_many: a worker's
    # share of a budget is what decides how many configurations it can afford to finish.
    many_workers: int = 16
    large_for_many: float = 150.0
    # At a small budget a search whose fastest run and the baseline's fastest are less than this far
    # apart, either way, is decided on deciding_seeds seeds of both: on a recorded GRU table the baseline's lucky first run
    # (one seed of two, 15% faster than its median) kept the search's better configuration from
    # winning in most studies (docs/stopping.md).
    clear_margin: float = 1.25
    deciding_seeds: int = 2
    deciding_from: float = 8.0  # trial-lengths a worker
    # Random trials before the sampler models, at a small budget: this share of its trial-lengths, at least startup_min.
    startup_share: float = 0.25
    startup_min: int = 3


RULE = Constants()  # the shipped constants, fitted on every recorded table (docs/stopping.md)


@dataclass(frozen=True)
class Strategy:
    """What the rule chose: the pruner by name, and whether re-runs and the screen run (capping stays as the experiment sets it)."""

    name: str  # "successive halving on time" or "equal time with re-runs": what a summary line says
    pruner: str
    reruns: bool  # racing on seeds and confirmation runs
    screen: bool

    def describe(self, trial_lengths: float, workers: int) -> str:
        deciding = ""
        if not self.reruns:
            when = "" if decides(trial_lengths, workers) else " if the search leaves the time"
            deciding = f", the best and the baseline on {RULE.deciding_seeds} seeds unless {RULE.clear_margin:g}x apart{when}"
        plural = "s" if workers != 1 else ""
        return f"{self.name}{deciding} (budget of {trial_lengths:.1f} trial-lengths, {workers} worker{plural}; docs/stopping.md)"


SMALL = Strategy("successive halving on time", "successive_halving", reruns=False, screen=False)
LARGE = Strategy("equal-time pruning with capping, screening, racing and confirmation", "equal_time", reruns=True, screen=True)


def choose(trial_lengths: float | None, workers: int, rule: Constants = RULE) -> Strategy:
    """The strategy for a budget of ``trial_lengths`` (compute, all workers together; None: not
    known, as with a trial budget only) shared by ``workers`` workers."""
    if trial_lengths is None or math.isinf(trial_lengths):
        return LARGE
    if trial_lengths <= rule.small_budget or (workers >= rule.many_workers and trial_lengths < rule.large_for_many):
        return SMALL
    return LARGE


def trial_lengths(timeout_s: float | None, workers: int, trial_length_s: float | None) -> float | None:
    """A time budget per worker in trial-lengths of compute; None without a time budget or a length."""
    if timeout_s is None or not trial_length_s or trial_length_s <= 0:
        return None
    return timeout_s * max(1, workers) / trial_length_s


def apply(experiment: Experiment, strategy: Strategy, lengths: float | None = None, workers: int = 1, rule: Constants = RULE) -> Experiment:
    """The experiment with ``pruner.name: auto`` resolved to ``strategy`` (for a budget of ``lengths``
    trial-lengths); one naming its pruner is returned as is.

    At a small budget the first rung comes after one time bucket (unless ``pruner.warmup_s`` is
    set) and the sampler models after at most ``startup_trials(lengths)`` random trials. Several
    objectives keep equal-time pruning (Optuna's pruners refuse them) with the rest of the strategy.
    """
    pruning = experiment.pruner
    if pruning.name != AUTO:
        return experiment
    name = strategy.pruner if not experiment.objective.several else "equal_time"
    pruning = dataclasses.replace(pruning, name=name)
    sampler = experiment.sampler
    if strategy is SMALL:
        cap_s = experiment.objective.cap_s
        if pruning.warmup_s is None and isinstance(cap_s, int | float):
            pruning = dataclasses.replace(pruning, warmup_s=pruning.bucket_for(cap_s))
        sampler = dataclasses.replace(sampler, n_startup_trials=min(sampler.n_startup_trials, startup_trials(lengths, rule)))
    return dataclasses.replace(
        experiment,
        pruner=pruning,
        sampler=sampler,
        confirm=experiment.confirm if strategy.reruns else deciding_runs(experiment.confirm, lengths, workers, rule),
        race=experiment.race if strategy.reruns else None,
        screen=experiment.screen if strategy.screen else None,
    )


def decides(lengths: float | None, workers: int, rule: Constants = RULE) -> bool:
    """Whether a small budget of ``lengths`` trial-lengths shared by ``workers`` keeps deciding runs."""
    return lengths is not None and lengths / max(1, workers) >= rule.deciding_from


def deciding_runs(confirm: Confirm, lengths: float | None, workers: int, rule: Constants = RULE) -> Confirm:
    """The small budget's confirmation: the search's best configuration and the baseline on
    ``deciding_seeds`` seeds, only when their fastest runs are less than ``clear_margin`` apart.
    From ``deciding_from`` trial-lengths a worker the search keeps the time those runs need, and
    no more (``budget_share: 0``). Below it, none is kept (the baseline's second run alone would
    take an eighth of the budget or more), and the runs happen only when the search leaves the
    time for all of them (``keep_time: false``; a trial budget spent early): a provisional winner
    is re-run rather than exported as decided."""
    return dataclasses.replace(
        confirm,
        top_k=1,
        seeds=min(confirm.seeds, rule.deciding_seeds),
        budget_share=0.0,
        keep_time=decides(lengths, workers, rule),
        clear_margin=confirm.clear_margin or rule.clear_margin,
    )


def startup_trials(lengths: float | None, rule: Constants = RULE) -> int:
    """Random trials before the sampler models, at a small budget: a share of its trial-lengths (a quarter), at least 3."""
    return max(rule.startup_min, int((lengths or 0) * rule.startup_share))
