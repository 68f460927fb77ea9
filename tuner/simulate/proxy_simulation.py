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
import math
from typing import Any

import optuna
import torch

from tuner.errors import ConfigError
from tuner.simulate.grid_space import GridSpace
from tuner.simulate.memory_storage import BudgetedMemoryStorage
from tuner.simulate.replay import ReplayTrainer
from tuner.simulate.simulation import Replay, SimulatedStudy, decisions
from tuner.simulate.table import Table
from tuner.simulate.virtual_time import VirtualTime
from tuner.study.experiment.load import Experiment
from tuner.study.record import records
from tuner.study.reruns.winner import winner as exported
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.run.prepare import Prepared
from tuner.study.run.progress import Progress
from tuner.study.run.proxy_study import mup_space, proxy_name, run_proxy_study
from tuner.study.run.runner import run_study
from tuner.study.space.space import Fixed, SearchSpace
from tuner.tasks.base import Task
from tuner.train.trial_config import DIMENSIONS, TrialConfig


def job_fidelity(experiment: Experiment) -> dict[str, Any]:
    """The values the job's space fixes for the dimensions its proxy changes (``{"width": 2.0}``)."""
    assert experiment.proxy is not None
    return {name: experiment.search_space.dims[name].value for name in experiment.proxy.dims}  # type: ignore[attr-defined]


def check_proxy_tables(experiment: Experiment, table: Table, proxy_table: Table, workers: int) -> None:
    """ConfigError in one line where the tables cannot stand for this proxy study (see the module's docstring)."""
    proxy = experiment.proxy
    assert proxy is not None
    source = experiment.source
    if workers != 1:
        raise ConfigError(source, "proxy", "one worker when a proxy study is simulated (--workers 1)", workers)
    for name, value in proxy.dims.items():
        for key, held, wanted in (("proxy." + name, proxy_table, value), (f"search_space.{name}", table, job_fidelity(experiment)[name])):
            if name not in held.grid or wanted not in held.grid[name]:
                raise ConfigError(source, key, f"a value the grid of {held.source} holds ({held.grid.get(name, 'none')})", wanted)
    recorded = proxy_table.objective["target"]
    target = proxy.target if proxy.target is not None else experiment.objective.target
    minimize = experiment.objective.goal.direction == "minimize"
    if (target < recorded) if minimize else (target > recorded):
        crossed = f">= {recorded}" if minimize else f"<= {recorded}"
        raise ConfigError(source, "proxy.target", f"{crossed}: a target the runs of {proxy_table.source} cross on their way", target)
    space = mup_space(experiment)
    for held, at in ((proxy_table, proxy.dims), (table, job_fidelity(experiment))):
        trains, recorded = trains_as(study_config(space, at)), trains_as(recorded_config(held, at))
        if trains != recorded:
            allowed = f"{recorded}, as {held.source} was recorded at {at} (name parametrization and mup_base in the search space)"
            raise ConfigError(source, "search_space.parametrization", allowed, trains)


def study_config(space: SearchSpace, at: dict[str, Any]) -> TrialConfig:
    """What the space fixes, at a fidelity: enough to say how its models are parametrized."""
    return TrialConfig.from_params({**{n: s.value for n, s in space.dims.items() if isinstance(s, Fixed) and n in DIMENSIONS}, **at})


def recorded_config(table: Table, at: dict[str, Any]) -> TrialConfig:
    """What every recorded run of ``table`` at a fidelity shares: its fixed values and the grid's single ones."""
    return table.config({**{d: v[0] for d, v in table.grid.items() if len(v) == 1}, **at})


def trains_as(config: TrialConfig) -> str:
    """The parametrization a model trains under: muP at its own base width is the standard one (tuner/train/mup.py)."""
    if config.parametrization == "mup" and config.mup_base != config.width:
        return f"mup based at width {config.mup_base:g}"
    return "standard"


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

    def run(phase: Experiment, **kwargs: Any) -> optuna.Study:
        at_proxy = phase.name == proxy_study_name
        held = proxy_table if at_proxy else table
        fidelity = experiment.proxy.dims if at_proxy else job_fidelity(experiment)  # type: ignore[union-attr]
        prepared = Prepared(torch.device("cpu"), task, GridSpace(held, fidelity), notes=[])
        trainer = ReplayTrainer(held, time, replay.time_scale, replay.overhead_s)
        return run_study(phase, prepared=prepared, trainer=trainer, storage=storage, **kwargs)

    end_s = time.run([lambda: run_proxy_study(experiment, progress, now=time.now, run=run, storage=storage)])
    full = optuna.load_study(study_name=experiment.name, storage=storage)
    trials = records(full) + records(optuna.load_study(study_name=proxy_study_name, storage=storage))
    reruns = sum(1 for r in trials if r.is_rerun)
    best_s = table.best(where=job_fidelity(experiment))[1] * replay.time_scale
    winner, winner_s = None, math.inf
    choice = exported(full)
    if choice is not None:
        config = choice.trial.config
        winner = {d: getattr(config, d) for d in table.dims}
        winner_s = table.true_time(winner) * replay.time_scale
    return SimulatedStudy(seed, winner, winner_s, best_s, len(trials) - reruns, reruns, end_s, [], decisions(full))
