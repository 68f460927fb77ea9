"""A study's space on a table: the table's grid, sampled by Optuna.

Ordered dimensions stay ordered: a dimension of numbers is sampled as an integer index into
its sorted values (``lr_index``), so that TPE or a GP can model "a higher learning rate" where
Optuna cannot step a log range through a list; a dimension of names is a categorical. A
table without a grid (a study's own trials) is replayed in the experiment's own space, and
a configuration it lacks is refused where the replay looks it up.
"""

from __future__ import annotations

from typing import Any

import optuna

from tuner.simulate.table import Table
from tuner.study.space.space import Choice, Fixed, SearchSpace


def is_ordered(values: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


class GridSpace(SearchSpace):
    """The grid of ``table`` as a search space (see the module's docstring)."""

    def __init__(self, table: Table, at: dict[str, Any] | None = None) -> None:
        """``at``: grid dimensions fixed at one of their values (a proxy study's fidelity: ``{"width": 0.5}``)."""
        dims = {d: Fixed(v[0]) if len(v) == 1 else Choice(tuple(sorted(v) if is_ordered(v) else v)) for d, v in table.grid.items()}
        dims |= {d: Fixed(v) for d, v in (at or {}).items()}
        super().__init__(dims)
        object.__setattr__(self, "fixed", dict(table.fixed))

    def sample(self, trial: optuna.Trial) -> dict[str, Any]:
        params: dict[str, Any] = dict(self.fixed)
        for name, spec in self.dims.items():
            if isinstance(spec, Fixed):
                params[name] = spec.value
            elif is_ordered(list(spec.choices)):
                params[name] = spec.choices[trial.suggest_int(f"{name}_index", 0, len(spec.choices) - 1)]
            else:
                params[name] = trial.suggest_categorical(name, list(spec.choices))
        return params


def table_space(table: Table, experiment_space: SearchSpace) -> SearchSpace:
    """The space a simulated study searches: the table's grid, with what the experiment fixes at one of
    the grid's values fixed there (``fixed_in_grid``), or the experiment's own for a table without one."""
    return GridSpace(table, fixed_in_grid(table, experiment_space)) if table.grid else experiment_space


def fixed_in_grid(table: Table, space: SearchSpace) -> dict[str, Any]:
    """The grid dimensions ``space`` fixes at a value of the grid (``{"width": 1.0}``): a study of a
    job at one width, replayed on a table of several, searches and is judged at that width."""
    fixed = {name: spec.value for name, spec in space.dims.items() if isinstance(spec, Fixed) and name in table.grid}
    return {name: value for name, value in fixed.items() if value in table.grid[name]}
