"""A table of recorded trials: configurations of a grid, each trained on a few seeds, with
every evaluation on every clock, the setup and the timed screen window.

`benchmarks/record_table.py` records one by training (no pruning, no capping at an
incumbent: to the first crossing or the per-trial cap); a study's own storage is one too
(``table_of_study``). The replay trainer (tuner/simulate/replay.py) plays its trials back.
On disk it is gzipped JSON::

    {"format": 1, "objective": {...}, "grid": {dim: [values]}, "fixed": {dim: value},
     "meta": {...}, "trials": [{"config": {dim: value}, "seed": 0, "result": {...}, "evaluations": [[...], ...]}]}

``grid`` lists each dimension's values in their order (an empty grid: the configurations
are whatever the trials hold, as in a study's table); ``fixed`` what every configuration
shares. A configuration is looked up by its grid dimensions; one the table lacks is an
error (``NotInTable``), never a guess.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.study.experiment.settings import AUTO, AUTO_FALLBACK_S
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

FORMAT = 1
EVALUATION_FIELDS = ("samples", "steps", "metric", "loss", "train_loss", "train_s", "wall_s", "robust_s", "cpu_s")


class NotInTable(LookupError):
    """A configuration the table holds no recorded trial of (``shown``: its values)."""

    def __init__(self, source: str, shown: str, held: int) -> None:
        self.source, self.shown, self.held = source, shown, held
        super().__init__(f"{source}: no recorded trial of {shown} (the table holds {held} configurations)")


def trial_row(config: dict[str, Any], seed: int, result: TrialResult) -> dict[str, Any]:
    """One recorded trial as a row of the table."""
    return {
        "config": config,
        "seed": seed,
        "result": result.to_attrs(),
        "evaluations": [[_compact(name, getattr(ev, name)) for name in EVALUATION_FIELDS] for ev in result.evaluations],
    }


def _compact(name: str, value: Any) -> Any:
    """Times to the microsecond, what the recording resolves (the rest only fills the file); metrics
    exactly, so that a replayed rule compares the very values the trial compared."""
    return round(value, 6) if name.endswith("_s") and isinstance(value, float) and math.isfinite(value) else value


def row_result(row: dict[str, Any]) -> TrialResult:
    """The recorded ``TrialResult`` of a row, its evaluations included."""
    result = TrialResult.from_attrs(row["result"])
    result.evaluations = [Evaluation(**dict(zip(EVALUATION_FIELDS, values, strict=True))) for values in row["evaluations"]]
    return result


def table_objective(experiment: Any) -> dict[str, Any]:
    """The objective a table was recorded under (an ``Experiment``'s)."""
    o = experiment.objective
    goal = o.goal
    return {
        "task": experiment.task,
        "metric": goal.metric,
        "direction": goal.direction,
        "target": goal.value,
        "eval_every_samples": o.eval_every_samples,
        "cap_s": o.cap_s,
        "clock": o.clock,
    }


def write_table(path: Path, experiment: Any, grid: dict[str, list], fixed: dict[str, Any], rows: list[dict], meta: dict) -> None:
    """Write a table of ``rows`` (``trial_row``) recorded under ``experiment``'s objective, its cap the
    seconds its trials ran to (``cap_s: auto`` records without a baseline: ``stop_rule``'s fallback)."""
    objective = {**table_objective(experiment), "cap_s": experiment.objective.stop_rule().cap_s}
    body = {"format": FORMAT, "objective": objective, "grid": grid, "fixed": fixed, "meta": meta, "trials": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump(body, f, separators=(",", ":"))
    tmp.replace(path)  # a table is replaced whole, never left half written


@dataclass(frozen=True)
class Recorded:
    """One recorded trial: its grid values, its seed and what it recorded."""

    config: dict[str, Any]
    seed: int
    result: TrialResult


class Table:
    """Recorded trials by configuration and seed."""

    def __init__(self, body: dict[str, Any], source: str) -> None:
        self.source = source
        self.objective: dict[str, Any] = body["objective"]
        self.grid: dict[str, list] = body["grid"]
        self.fixed: dict[str, Any] = body.get("fixed", {})
        self.meta: dict[str, Any] = body.get("meta", {})
        self.dims = tuple(self.grid) or tuple(body["trials"][0]["config"])  # a study's table: the trials' own keys
        self.trials: dict[tuple, dict[int, Recorded]] = {}
        for row in body["trials"]:
            rec = Recorded(row["config"], int(row["seed"]), row_result(row))
            self.trials.setdefault(self._key(rec.config), {})[rec.seed] = rec
        self.seeds = sorted({seed for by_seed in self.trials.values() for seed in by_seed})

    def _key(self, values: dict[str, Any]) -> tuple:
        return tuple(_canonical(values.get(d)) for d in self.dims)

    def config(self, values: dict[str, Any]) -> TrialConfig:
        """The full configuration a row's grid values stand for."""
        return TrialConfig.from_params({**self.fixed, **values})

    def configs(self, where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The grid values of every configuration a study can sample: the grid's (a baseline
        recorded beside it is not one), or every one a table without a grid holds; ``where``:
        only those with these values (a fidelity: ``{"width": 2.0}``)."""
        configs = [next(iter(by_seed.values())).config for by_seed in self.trials.values()]
        configs = [c for c in configs if all(_canonical(c[d]) in {_canonical(v) for v in self.grid[d]} for d in self.grid)]
        return [c for c in configs if all(_canonical(c.get(d)) == _canonical(v) for d, v in (where or {}).items())]

    def trial_length_s(self, where: dict[str, Any] | None = None) -> float:
        """A typical trial's length: the median wall time of the recorded trials of the grid (``where``: as in ``configs``)."""
        grid = {self._key(c) for c in self.configs(where)}
        return statistics.median(r.result.wall_s for key, by_seed in self.trials.items() if key in grid for r in by_seed.values())

    @property
    def cap_s(self) -> float:
        """The cap its trials were recorded under, in seconds (a table written with ``auto`` ran them to ``AUTO_FALLBACK_S``)."""
        cap = self.objective["cap_s"]
        return AUTO_FALLBACK_S if cap == AUTO else float(cap)

    def runs(self, config: TrialConfig) -> list[Recorded]:
        """The recorded runs of ``config`` on every seed (none: the table lacks it)."""
        return list(self.trials.get(self._key({d: getattr(config, d) for d in self.dims}), {}).values())

    def lookup(self, config: TrialConfig, seed: int) -> Recorded:
        """The recorded trial of ``config`` on the table's seed that stands for ``seed`` (seed
        modulo the table's seeds: a study's fresh seeds replay the recorded ones in turn); in a
        study's table, the trial of that very seed."""
        values = {d: getattr(config, d) for d in self.dims}
        by_seed = self.trials.get(self._key(values))
        if by_seed is None:
            shown = ", ".join(f"{d}={v}" for d, v in values.items())
            raise NotInTable(self.source, shown, len(self.trials))
        if not self.grid:  # a study's own trials: the very run, or none
            if seed not in by_seed:
                shown = ", ".join(f"{d}={v}" for d, v in values.items())
                raise NotInTable(self.source, f"{shown} on seed {seed}", len(self.trials))
            return by_seed[seed]
        seeds = sorted(by_seed)
        return by_seed[seeds[seed % len(seeds)]]

    def true_time(self, values: dict[str, Any], clock: str | None = None) -> float:
        """A configuration's true time to target: the median over its seeds on the table's
        clock (``inf`` for a seed that did not reach it, so a median that needs it is ``inf``)."""
        by_seed = self.trials[self._key(values)]
        return statistics.median(_time(rec.result, clock or self.objective["clock"]) for rec in by_seed.values())

    def best(self, clock: str | None = None, where: dict[str, Any] | None = None) -> tuple[dict[str, Any], float]:
        """The configuration with the lowest true time, and that time (``where``: as in ``configs``)."""
        return min(((c, self.true_time(c, clock)) for c in self.configs(where)), key=lambda item: item[1])


def _time(result: TrialResult, clock: str) -> float:
    t = result.time_to_target(clock) if result.outcome is Outcome.REACHED else None
    return math.inf if t is None else t


def _canonical(value: Any) -> Any:
    return round(value, 12) if isinstance(value, float) else value


def load_table(path: str | Path) -> Table:
    """Read a table file (``write_table``); ValueError with one line when it is not one."""
    path = Path(path)
    try:
        with gzip.open(path, "rt") as f:
            body = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such table file") from None
    except (OSError, json.JSONDecodeError, EOFError) as err:
        raise ValueError(f"{path}: not a table of recorded trials (gzipped JSON): {err}") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT or not body.get("trials"):
        raise ValueError(f"{path}: not a table of recorded trials (format {FORMAT} with at least one trial)")
    return Table(body, str(path))
