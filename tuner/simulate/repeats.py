"""Repeats of a simulated study, seed by seed, spread over processes: what `tuner simulate` runs.

Each repeat is the same study with the seed ``seed + r``: its sampler, its trials' seeds (and
so which recorded seed each replays) and its confirmation seeds move with it. A repeat
depends on its seed alone, so the results are the same whatever the number of processes.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tuner.simulate.fit import check_table
from tuner.simulate.grid_space import fixed_in_grid
from tuner.simulate.proxy_simulation import simulate_proxy_study
from tuner.simulate.proxy_tables import check_proxy_tables
from tuner.simulate.simulation import Replay, SimulatedStudy, simulate_study
from tuner.simulate.table import Table, load_table
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.tasks.registry import build_task


@dataclass(frozen=True)
class Plan:
    """What to simulate: the experiment (its budget included) on a table, replayed so, ``repeats`` times from ``seed``."""

    experiment: Experiment
    table_path: Path
    replay: Replay
    repeats: int = 10
    seed: int = 0
    hooks: Callable[[], list[StudyHooks]] | None = None  # each worker's own hooks besides the experiment's
    proxy_table_path: Path | None = None  # a proxy study's search at its own fidelity, when the table lacks it


def budget_of(table: Table, replay: Replay, trial_lengths: float, experiment: Experiment | None = None) -> float:
    """A time budget of ``trial_lengths`` typical trials: the table's median trial, scaled, with its start-up;
    of ``experiment``'s, at the values it fixes of the grid (a proxy study's: at the job's fidelity)."""
    where = fixed_in_grid(table, experiment.search_space) if experiment is not None else None
    return trial_lengths * (table.trial_length_s(where) * replay.time_scale + replay.overhead_s)


_loaded: dict[str, object] = {}


def _load(plan: Plan) -> None:
    # A benchmark runs many plans on one table and task: each is loaded once per process.
    key = (str(plan.table_path), str(plan.proxy_table_path), plan.experiment.task, repr(plan.experiment.task_options))
    if _loaded.get("key") != key:
        table = load_table(plan.table_path)
        proxy_table = load_table(plan.proxy_table_path) if plan.proxy_table_path is not None else table
        _loaded.update(key=key, table=table, proxy_table=proxy_table, task=build_task(plan.experiment.task, plan.experiment.task_options))
    check_table(plan.experiment, _loaded["table"], plan.replay.time_scale)  # type: ignore[arg-type]
    if plan.experiment.proxy is not None:
        check_proxy_tables(plan.experiment, _loaded["table"], _loaded["proxy_table"], plan.replay.workers)  # type: ignore[arg-type]
    _loaded["plan"] = plan


def _one(seed: int) -> SimulatedStudy:
    plan: Plan = _loaded["plan"]  # type: ignore[assignment]
    if plan.experiment.proxy is not None:
        table, proxy_table = _loaded["table"], _loaded["proxy_table"]
        return simulate_proxy_study(plan.experiment, table, _loaded["task"], plan.replay, seed, proxy_table)  # type: ignore[arg-type]
    return simulate_study(plan.experiment, _loaded["table"], _loaded["task"], plan.replay, seed, plan.hooks)  # type: ignore[arg-type]


def run_repeats(plan: Plan, processes: int | None = None) -> list[SimulatedStudy]:
    """Every repeat of ``plan``, in seed order; ``processes`` (default: the cores, at most the repeats) share them."""
    seeds = [plan.seed + r for r in range(plan.repeats)]
    processes = max(1, min(processes or len(os.sched_getaffinity(0)), plan.repeats))
    _load(plan)
    if processes == 1:
        return [_one(s) for s in seeds]
    # The table and the task are loaded once, here: forked processes inherit them (building
    # a task's data in each process cost seconds of the two cores a study shares).
    with mp.get_context("fork").Pool(processes) as pool:
        return pool.map(_one, seeds, chunksize=1)
