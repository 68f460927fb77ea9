"""Recording a trial for a table: trained as a study's trial would be, without the study's rules.

No pruning, no capping at an incumbent, no deadline: the trial ends at the first crossing of
the target, the per-trial cap or the schedule's horizon. Its throughput pre-screen times the
window a study's screen would (``experiment.screen``) with a bound it can never pass, so the
recorded ``screen_step_s`` is what a replay times that window at.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import torch

from tuner.environment import fingerprint
from tuner.simulate.table import trial_row, write_table
from tuner.study.experiment.load import Experiment
from tuner.study.reruns.baseline import baseline_configuration
from tuner.study.run.auto_clock import resolve_clock
from tuner.tasks.base import Task
from tuner.train.result import TrialResult
from tuner.train.screen import ScreenRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig


def record_trial(experiment: Experiment, task: Task, config: TrialConfig, seed: int) -> TrialResult:
    """Train ``config`` on ``seed`` on the CPU to the target or the cap, its screen window timed."""
    screen = experiment.screen
    timing = ScreenRule(bound_s=float("inf"), min_samples=1, warmup_steps=screen.warmup_steps, steps=screen.steps)
    return train_trial(task, config, experiment.objective.stop_rule(), torch.device("cpu"), seed=seed, screen=timing)


def grid_values(grid: dict[str, list]) -> list[dict]:
    """Every combination of the grid's values, in order."""
    return [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]


def record_grid(path: Path, experiment: Experiment, task: Task, grid: dict[str, list], fixed: dict, seeds: tuple[int, ...]) -> None:
    """Record every configuration of ``grid`` (over ``fixed``) on ``seeds`` into a table file, in this process."""
    experiment = resolve_clock(experiment)  # clock: auto, for this machine: the table records the clock it named
    base = baseline_configuration(experiment)  # what a simulated study's baseline runs replay
    configs = [({d: getattr(base, d) for d in grid}, base)]
    configs += [(values, TrialConfig.from_params({**fixed, **values})) for values in grid_values(grid)]
    rows = [trial_row(values, seed, record_trial(experiment, task, config, seed)) for values, config in configs for seed in seeds]
    write_table(path, experiment, grid, fixed, rows, {"environment": fingerprint()})
