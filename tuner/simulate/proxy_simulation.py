"""A proxy study (an experiment's ``proxy:``) replayed on recorded trials: the search at the
proxy's fidelity and the decision at the job's, by the code `tuner run` runs
(tuner/study/run/proxy_study.py), on a virtual clock.

The job's table holds the job's fidelity as a value of its grid; the proxy's is a value of
the same grid (a table recorded at widths 0.5 and 1 holds a proxy at 0.5 of a job at 1) or of
a second table's (``proxy_table``, recorded at the proxy's own target or beyond it). Each
phase searches its table's grid with the fidelity it fixes: the proxy's values, then the
job's. The proxy's target must be one the recorded runs cross on their way to their own (a
replay cannot run past its recording), and each table's runs play at the horizon they were
recorded at. The budget, the pruner and the cap resolve from the phases' own baseline runs,
as a real proxy study's do, so the experiment's baseline must be a configuration the tables
hold at both fidelities. The regret is the exported winner's true time at the job's fidelity
over the best configuration the table holds there.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import optuna
import torch

from tuner.simulate.grid_space import GridSpace, fixed_in_grid
from tuner.simulate.memory_storage import BudgetedMemoryStorage
from tuner.simulate.replay import ReplayTrainer
from tuner.simulate.simulation import Replay, SimulatedStudy, scored
from tuner.simulate.table import Table
from tuner.simulate.virtual_time import VirtualTime
from tuner.study.experiment.load import Experiment
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.run.prepare import Prepared
from tuner.study.run.progress import Progress
from tuner.study.run.proxy_study import proxy_name, run_proxy_study
from tuner.study.run.runner import run_study
from tuner.tasks.base import Task


def simulate_proxy_study(
    experiment: Experiment,
    table: Table,
    task: Task,
    replay: Replay,
    seed: int,
    proxy_table: Table | None = None,
    progress: Progress | None = None,
) -> SimulatedStudy:
    """One proxy study of ``experiment`` (its seed set to ``seed``) replayed on ``table`` (and ``proxy_table``);
    ``progress`` shows its lines, as `tuner run` does."""
    proxy_table = proxy_table or table
    experiment = dataclasses.replace(resolve_clock(experiment, table.objective), seed=seed)
    time = VirtualTime()
    storage = BudgetedMemoryStorage()
    proxy_study_name = proxy_name(experiment)
    # What each phase fixes of its table's grid, as a study without a proxy does (fixed_in_grid): the job's
    # space at the job's fidelity; at the proxy, the proxy's dimensions over it.
    job = fixed_in_grid(table, experiment.search_space)
    at_proxy_fidelity = {**fixed_in_grid(proxy_table, experiment.search_space), **experiment.proxy.dims}  # type: ignore[union-attr]

    def run(phase: Experiment, **kwargs: Any) -> optuna.Study:
        at_proxy = phase.name == proxy_study_name
        held = proxy_table if at_proxy else table
        prepared = Prepared(torch.device("cpu"), task, GridSpace(held, at_proxy_fidelity if at_proxy else job), notes=[])
        trainer = ReplayTrainer(held, time, replay.time_scale, replay.overhead_s)
        return run_study(phase, prepared=prepared, trainer=trainer, storage=storage, **kwargs)

    end_s = time.run([lambda: run_proxy_study(experiment, progress, now=time.now, run=run, storage=storage)])
    full = optuna.load_study(study_name=experiment.name, storage=storage)
    searched = optuna.load_study(study_name=proxy_study_name, storage=storage)
    best_s = table.best(where=job)[1] * replay.time_scale
    return scored(full, table, replay, seed, end_s, best_s, searched_before=searched)
