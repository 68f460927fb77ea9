"""Simulated studies: the real study loop, its workers and its budget, on recorded trials.

``simulate_study`` runs one study of an experiment on a table: ``workers`` threads on one
in-memory study, each running ``run_study`` (tuner/study/run/runner.py) with the replay
trainer on a virtual clock (tuner/simulate/replay.py, virtual_time.py). Nothing of the
strategy is re-implemented here: the sampler, pruner, capping, screen, racing, confirmation
and baseline are the experiment's, as `tuner run` would run them. What comes out is the
study's confirmed winner and its **regret**: the winner's true time to target (the table's
median over its seeds) over the table's best configuration's (of those with the values the
experiment fixes of the grid's: tuner/simulate/grid_space.py ``fixed_in_grid``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna
import torch

from tuner.simulate.fit import Replay, fitted
from tuner.simulate.grid_space import fixed_in_grid, table_space
from tuner.simulate.memory_storage import BudgetedMemoryStorage
from tuner.simulate.replay import ReplayTrainer
from tuner.simulate.table import Table
from tuner.simulate.virtual_time import VirtualTime
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.record import FINISHED, TrialRecord, records
from tuner.study.reruns.winner import winner as exported
from tuner.study.run.prepare import Prepared
from tuner.study.run.runner import run_study
from tuner.study.space.space import SearchSpace
from tuner.tasks.base import Task
from tuner.train.result import TrialResult


@dataclass
class Incumbents(StudyHooks):
    """The best search value after each finished trial, on the virtual clock: (time, trial number, value)."""

    time: VirtualTime
    points: list[tuple[float, int, float]] = field(default_factory=list)

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        if value is not None and (not self.points or value < self.points[-1][2]):
            self.points.append((self.time.now(), trial.number, value))


@dataclass(frozen=True)
class SimulatedStudy:
    """One simulated study: its winner, the winner's true time and regret, and what it spent."""

    seed: int
    winner: dict[str, Any] | None  # the winner's grid values (None: nothing reached the target)
    winner_true_s: float
    best_true_s: float
    trials: int  # searched configurations
    reruns: int  # race, confirmation and baseline runs
    end_s: float  # virtual seconds until the last worker stopped
    incumbent: list[tuple[float, float]]  # (virtual time, the incumbent's true time) at each new incumbent
    # Each finished trial's (number, configuration key, outcome, last step), in trial order.
    decisions: tuple[tuple, ...] = field(default=(), compare=False, repr=False)

    @property
    def regret(self) -> float:
        return self.winner_true_s / self.best_true_s


def simulate_study(
    experiment: Experiment,
    table: Table,
    task: Task,
    replay: Replay,
    seed: int,
    hooks: Callable[[], list[StudyHooks]] | None = None,
    space: SearchSpace | None = None,
) -> SimulatedStudy:
    """One study of ``experiment`` (its seed set to ``seed``) replayed on ``table`` by ``replay.workers`` workers.

    ``hooks`` makes each worker's own study hooks besides the experiment's (a strategy the
    experiment file cannot state, such as a hand-written pruner); ``space``: what the study searches
    (default: the table's grid, or the experiment's own space for a study's table)."""
    experiment = fitted(experiment, table, seed, replay)
    time = VirtualTime()
    storage = BudgetedMemoryStorage()
    prepared = Prepared(torch.device("cpu"), task, space or table_space(table, experiment.search_space), notes=[])
    trainer = ReplayTrainer(table, time, replay.time_scale, replay.overhead_s)
    incumbents = Incumbents(time)

    def worker() -> None:
        extra = hooks() if hooks is not None else []
        run_study(
            experiment,
            prepared=prepared,
            hooks=[incumbents, *extra],
            trainer=trainer,
            now=time.now,
            storage=storage,
            workers=replay.workers,
        )

    end_s = time.run([worker] * replay.workers)
    study = optuna.load_study(study_name=experiment.name, storage=storage)
    by_number = {r.number: r for r in records(study)}
    incumbent = [(at, _true_time(table, by_number[n], replay)) for at, n, _ in incumbents.points]
    best_s = table.best(where=fixed_in_grid(table, experiment.search_space))[1] * replay.time_scale
    return scored(study, table, replay, seed, end_s, best_s, incumbent)


def scored(
    study: optuna.Study,
    table: Table,
    replay: Replay,
    seed: int,
    end_s: float,
    best_s: float,
    incumbent: list[tuple[float, float]] | None = None,
    searched_before: optuna.Study | None = None,
) -> SimulatedStudy:
    """A finished simulated study as its winner's true time on ``table`` over ``best_s`` (``searched_before``:
    the study that searched for it, whose trials count too, as a proxy study's search at the proxy)."""
    trials = records(study) + (records(searched_before) if searched_before is not None else [])
    reruns = sum(1 for r in trials if r.is_rerun)
    winner, winner_s = None, math.inf
    choice = exported(study)  # what `tuner best` exports: the baseline where the search found nothing faster
    if choice is not None:
        config = choice.trial.config
        winner = {d: getattr(config, d) for d in table.dims}
        winner_s = table.true_time(winner) * replay.time_scale
    return SimulatedStudy(seed, winner, winner_s, best_s, len(trials) - reruns, reruns, end_s, incumbent or [], decisions(study))


def decisions(study: optuna.Study) -> tuple[tuple, ...]:
    """What each finished trial of a study came to: (number, configuration key, outcome, last step), in trial order."""
    return tuple(
        (r.number, r.config_key, r.outcome.value if r.outcome else None, r.result.steps)
        for r in records(study, FINISHED)
        if r.result is not None and r.config is not None
    )


def _true_time(table: Table, trial: TrialRecord, replay: Replay) -> float:
    config = trial.config
    return table.true_time({d: getattr(config, d) for d in table.dims}) * replay.time_scale if config is not None else math.inf


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    """``statistics.quantiles(values, n=4, method="inclusive")`` of sorted values, where two studies
    with no winner (an infinite regret) give an infinite quartile, not inf - inf's nan."""
    last = len(values) - 1
    out = []
    for i in (1, 2, 3):
        j, delta = divmod(i * last, 4)
        lo, hi = values[j], values[min(j + 1, last)]
        out.append(lo if delta == 0 or lo == hi else (lo * (4 - delta) + hi * delta) / 4)
    return out[0], out[1], out[2]


def summary(studies: list[SimulatedStudy]) -> dict[str, Any]:
    """Median and quartiles of the regret, the share within 10% of the table's best, trials per study."""
    regrets = sorted(s.regret for s in studies)
    q1, median, q3 = _quartiles(regrets)
    return {
        "studies": len(studies),
        "regret_median": median,
        "regret_q1": q1,
        "regret_q3": q3,
        "within_10pct": sum(r <= 1.1 for r in regrets) / len(regrets),
        "no_winner": sum(s.winner is None for s in studies),
        "trials_median": statistics.median(s.trials for s in studies),
        "reruns_median": statistics.median(s.reruns for s in studies),
    }
