"""Whether recorded tables can stand for a proxy study (tuner/simulate/proxy_simulation.py): each
fidelity recorded, a proxy target the runs cross on their way, the parametrization they trained under."""

from __future__ import annotations

from typing import Any

from tuner.errors import ConfigError
from tuner.simulate.table import Table
from tuner.study.experiment.load import Experiment
from tuner.study.run.proxy_study import job_fidelity, mup_space
from tuner.study.space.space import Fixed, SearchSpace
from tuner.train.trial_config import DIMENSIONS, TrialConfig


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
