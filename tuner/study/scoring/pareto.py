"""The Pareto front of a study that minimizes several objectives (``objective.minimize: [time, model_size]``).

A point is a configuration that reached the target with one value per objective; it is on
the front when no other point is at least as good on every objective and better on one.
Trials that missed the target are infeasible (tuner/study/record.py) and never on it.

- **Search front**: the search's trials that reached the target; a configuration drawn
  more than once counts by its medians.
- **Confirmation**: the front's configurations, up to ``confirm.top_k`` spread evenly
  along the first objective (both ends included), are re-run on the confirmation seeds
  (tuner/study/reruns/confirmation.py). The **confirmed front** is the front of their medians
  over those seeds, among those that reached the target as ``confirm.require`` says. Once
  there is one, it is what `tuner best` shows and exports; until then, the search front.
- **Picking a point** (`tuner best --pick`): an objective's name takes the point lowest on
  it; ``knee`` the point nearest the ideal corner once each objective is scaled to [0, 1]
  over the front (the balanced compromise); a trial number takes that point.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.study.record import COMPLETE, TrialRecord, confirmation_groups, records
from tuner.study.scoring.units import amount, column, counted, objective_names, study_units, with_unit
from tuner.study.study_record import study_experiment, study_objective

KNEE = "knee"


def several(study: optuna.Study) -> bool:
    """True for a multi-objective study."""
    return len(study.directions) > 1


@dataclass(frozen=True)
class Point:
    """A configuration with one value per objective: a search run's, or medians over seeds."""

    trial: TrialRecord  # the search trial that first ran the configuration (what is exported)
    values: tuple[float, ...]
    seeds: int = 1  # runs behind the values
    reached: int = 1  # of which reached the target
    confirmed: bool = False  # the values are medians over the confirmation seeds


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """``a`` is at least as good as ``b`` on every objective and better on one (all minimized)."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def non_dominated(points: Iterable[Point]) -> list[Point]:
    """The points no other point dominates, by their first objective."""
    points = list(points)
    front = [p for p in points if not any(dominates(q.values, p.values) for q in points)]
    return sorted(front, key=lambda p: (p.values, p.trial.number))


def _medians(runs: list[TrialRecord]) -> tuple[float, ...]:
    return tuple(statistics.median(r.values[i] for r in runs) for i in range(len(runs[0].values)))


def search_points(study: optuna.Study) -> list[Point]:
    """Every configuration the search brought to the target, by its medians over its runs."""
    groups: dict[str, list[TrialRecord]] = {}
    for r in records(study, COMPLETE):
        if r.reached and r.values is not None and not r.is_measurement:
            groups.setdefault(r.config_key or f"#{r.number}", []).append(r)
    return [Point(runs[0], _medians(runs), len(runs), len(runs)) for runs in groups.values()]


def search_front(study: optuna.Study) -> list[Point]:
    """The front of the search's configurations, by their first objective."""
    return non_dominated(search_points(study))


def confirmed_points(study: optuna.Study) -> list[Point]:
    """Configurations re-run on the confirmation seeds that may stand on the confirmed front."""
    require = (study_experiment(study).get("confirm") or {}).get("require", "all")
    out = []
    for original, runs in confirmation_groups(study, COMPLETE).values():
        reached = [r for r in runs if r.reached and r.values is not None]
        eligible = len(reached) == len(runs) if require == "all" else 2 * len(reached) > len(runs)
        if reached and eligible:
            out.append(Point(original, _medians(reached), len(runs), len(reached), confirmed=True))
    return out


def study_front(study: optuna.Study) -> list[Point]:
    """The confirmed front once there is one, else the search front (``Point.confirmed`` says which)."""
    return non_dominated(confirmed_points(study)) or search_front(study)


def pareto_candidates(study: optuna.Study, top_k: int) -> list[TrialRecord]:
    """What confirmation re-runs: up to ``top_k`` points of the search front, spread evenly
    along the first objective with both ends kept, so the confirmed front spans the same range."""
    front = search_front(study)
    if len(front) <= top_k:
        return [p.trial for p in front]
    if top_k == 1:
        return [knee(front).trial]
    chosen = sorted({round(i * (len(front) - 1) / (top_k - 1)) for i in range(top_k)})
    return [front[i].trial for i in chosen]


def time_to_beat(study: optuna.Study, known: dict[str, float]) -> tuple[float, int] | None:
    """Capping on a front: (time, trial) of the fastest search-front point at least as good as
    ``known`` (a trial's values known before it trains) on every objective but time. Once that
    trial's clock passes this time, the point dominates it whatever it does next. None when
    time is not minimized or another objective is not known yet (then nothing caps it)."""
    names = objective_names(study)
    if "time" not in names or any(n not in known for n in names if n != "time"):
        return None
    t = names.index("time")
    others = [i for i, n in enumerate(names) if i != t]
    points = [p for p in search_front(study) if all(p.values[i] <= known[names[i]] for i in others)]
    best = min(points, key=lambda p: (p.values[t], p.trial.number), default=None)
    return (best.values[t], best.trial.number) if best is not None else None


def knee(front: list[Point]) -> Point:
    """The point nearest the ideal corner with each objective scaled to [0, 1] over the front."""
    n = len(front[0].values)
    low = [min(p.values[i] for p in front) for i in range(n)]
    span = [max(p.values[i] for p in front) - low[i] for i in range(n)]

    def distance(p: Point) -> float:
        return math.hypot(*((p.values[i] - low[i]) / span[i] if span[i] > 0 else 0.0 for i in range(n)))

    return min(front, key=lambda p: (distance(p), p.trial.number))


def pick(front: list[Point], choice: str, names: tuple[str, ...]) -> Point:
    """The point ``choice`` names: an objective (lowest on it), ``knee``, or a trial number on the front.

    Raises ValueError with what is allowed when ``choice`` names none of them.
    """
    if choice in names:
        i = names.index(choice)
        return min(front, key=lambda p: (p.values[i], p.values, p.trial.number))
    if choice == KNEE:
        return knee(front)
    on_front = {p.trial.number: p for p in front}
    if choice.isdigit() and int(choice) in on_front:
        return on_front[int(choice)]
    raise ValueError(", ".join([*names, KNEE]) + " or a trial number on the front (" + ", ".join(map(str, on_front)) + ")")


def describe(values: tuple[float, ...], names: tuple[str, ...], units_: tuple[str, ...]) -> str:
    """'time 1.234 s, model_size 4100 B'."""
    return ", ".join(f"{n} {with_unit(v, u)}" for n, v, u in zip(names, values, units_))


def baseline_point(study: optuna.Study) -> Point | None:
    """The baseline's medians over its finished runs (tuner/study/reruns/baseline.py), as a point."""
    runs = [r for r in records(study, COMPLETE) if r.is_baseline and r.values is not None]
    if not runs:
        return None
    return Point(runs[-1], _medians(runs), len(runs), sum(r.reached for r in runs), confirmed=True)


def baseline_line(study: optuna.Study) -> str:
    """The summary's baseline sentence for a front: no single winner, so no single ratio."""
    base = baseline_point(study)
    if base is None:
        return "no baseline runs finished yet (they run with the confirmation runs)"
    text = (
        f"baseline: {describe(base.values, objective_names(study), study_units(study))} "
        f"(medians over {counted(base.seeds, 'seed')}, reached on {base.reached} of {base.seeds})"
    )
    front = study_front(study)
    beating = [p for p in front if dominates(p.values, base.values)]
    return text + (f"; {len(beating)} of {len(front)} front points beat it on every objective" if front else "")


def front_table(study: optuna.Study) -> str:
    """The front as a plain-text table, first objective ascending, the knee marked."""
    front = study_front(study)
    if not front:
        return "no trial reached the target yet: no front"
    names, units_ = objective_names(study), study_units(study)
    best = knee(front)
    rows = [("trial", *(column(n, u) for n, u in zip(names, units_)), "seeds", "", "config")]
    for p in front:
        config = p.trial.config.short() if p.trial.config else ""
        cells = (amount(v, u) for v, u in zip(p.values, units_))
        rows.append((str(p.trial.number), *cells, f"{p.reached}/{p.seeds}", "knee" if p is best else "", config))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows)


def front_heading(study: optuna.Study) -> str:
    front = study_front(study)
    kind = "confirmed: medians over the confirmation seeds" if front and front[0].confirmed else "the search's runs, not confirmed yet"
    points = f"{len(front)} point" + ("s" if len(front) != 1 else "")
    objective = study_objective(study)
    target = f" to {objective.goal.describe()}" if objective is not None else ""
    return f"Pareto front of {' and '.join(objective_names(study))}{target} ({points}; {kind}):"


def how_to_pick(study: optuna.Study) -> str:
    return f"pick one with: tuner best ... --pick {'|'.join([*objective_names(study), KNEE])}|<trial number>"


def front_json(study: optuna.Study) -> dict[str, Any]:
    """The front for `--json` and the report: each point's values by objective, every reached trial's values."""
    names, front = objective_names(study), study_front(study)
    best = knee(front) if front else None
    base = baseline_point(study)
    return {
        "objectives": list(names),
        "units": list(study_units(study)),
        "confirmed": bool(front and front[0].confirmed),
        "points": [
            {
                "trial": p.trial.number,
                "values": dict(zip(names, p.values)),
                "seeds": p.seeds,
                "reached": p.reached,
                "knee": p is best,
                "config": p.trial.config.short() if p.trial.config else "",
            }
            for p in front
        ],
        "trials": [list(p.values) for p in search_points(study)],
        "baseline": dict(zip(names, base.values)) if base is not None else None,
    }
