"""``pruner.name: auto`` in a real study: the budget rule (tuner/study/stopping/budget_rule.py) applied
once the baseline's length is known.

The baseline is the study's first trial (tuner/study/reruns/baseline.py: ``enqueue_first``); the
wall time its first run took (setup and evaluations included, as a trial spends the budget, and as
the recorded tables that set the rule's thresholds count a trial: tuner/simulate/table.py) is one
trial-length, so this run's time budget, with its workers, is a number of trial-lengths, and the
rule picks the strategy that wins there. The runner applies it after the baseline's first run, or as soon as a
resumed study is open when that run is already stored; before that (and for a study whose
baseline does not run first) ``auto`` prunes at equal time (tuner/study/stopping/by_name.py).
"""

from __future__ import annotations

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.record import ENDED, records
from tuner.study.run.auto_cap import resolve_cap, with_cap
from tuner.study.run.sampler import make_sampler
from tuner.study.stopping import make_pruner
from tuner.study.stopping.budget_rule import AUTO, LARGE, apply, choose, trial_lengths
from tuner.study.study_record import write_run_confirm


def applied(study: optuna.Study, experiment: Experiment, workers: int) -> tuple[Experiment, str | None]:
    """``experiment`` (its cap in seconds) with ``pruner.name: auto`` resolved for this run's budget,
    and the line that names the strategy; as given, with no line, where the experiment names its
    pruner or the baseline has no measured length yet, and as given at a large budget."""
    if experiment.pruner.name != AUTO:
        return experiment, None
    length_s = baseline_wall_s(study)
    if length_s is None or length_s <= 0:
        return experiment, None
    lengths = trial_lengths(experiment.budget.timeout_s, workers, length_s)
    strategy = choose(lengths, workers)
    if lengths is None:
        what = f"{strategy.name} (no time budget; docs/stopping.md)"
    else:
        what = strategy.describe(lengths, workers)
    # The large-budget strategy is what auto runs before the rule (tuner/study/stopping/by_name.py): the run goes on as it is.
    return (experiment if strategy is LARGE else apply(experiment, strategy, lengths, workers)), f"pruner: auto = {what}"


def baseline_wall_s(study: optuna.Study) -> float | None:
    """The wall seconds of the baseline's first ended run; None before one ended."""
    for r in records(study, ENDED):
        if r.is_baseline and r.result is not None:
            return r.result.wall_s
    return None


def after_baseline(study: optuna.Study, experiment: Experiment, run: Experiment, workers: int) -> tuple[Experiment, str | None]:
    """What the run becomes once the baseline's first run has ended: ``experiment`` with ``cap_s: auto``
    resolved from it and ``pruner.name: auto`` applied (``run``, the experiment as it ran until
    then, where neither changes), and the line that names the strategy."""
    cap_s = resolve_cap(study, experiment)
    capped = with_cap(experiment, cap_s) if cap_s is not None and cap_s != run.objective.cap_s else run
    return applied(study, capped, workers)


def use_strategy(study: optuna.Study, run: Experiment, before: Experiment) -> None:
    """The study's pruner, and its sampler where its settings changed, made from ``run``: its cap or its strategy resolved."""
    study.pruner = make_pruner(run.pruner, run.objective)
    if run.confirm != before.confirm:  # the summary's ratio says what the run was asked to measure
        write_run_confirm(study, run.confirm)
    if run.sampler != before.sampler:  # the small-budget strategy models after fewer random trials
        study.sampler = make_sampler(run, len(study.get_trials(deepcopy=False)))
