"""The unit of every objective value, and how a value is printed and named with it.

Time is in seconds on the objective's clock, energy in joules, cost in the experiment's
currency (device hours where no price is set), peak memory in MiB, a model's size in bytes
(each objective's declaration in tuner/study/scoring/objectives.py names its unit). Every view
prints a value with ``with_unit`` and names a column, an MLflow metric or Optuna's metric
name with ``column`` and ``metric_names``, so that a study that minimizes energy or cost is
never said to be in seconds. A study's objectives and cost are read from its stored
experiment: a study stored before either existed minimized time, in seconds.
"""

from __future__ import annotations

import re

import optuna

from tuner.study.experiment.cost import Cost
from tuner.study.scoring.objectives import OBJECTIVE_KINDS, to_target
from tuner.study.study_record import StudyAttrs, study_experiment
from tuner.train.target import Target

# A unit in words, where a heading says what its values are: "seconds to accuracy >= 0.9".
WORDS = {"s": "seconds", "J": "joules", "B": "bytes", "device h": "device hours"}


def unit(minimize: str, cost: Cost) -> str:
    """The unit of one objective: a cost's is the currency, or device hours without a price (as is a name of none)."""
    kind = OBJECTIVE_KINDS.get(minimize)
    if kind is not None and kind.unit is not None:
        return kind.unit
    return cost.currency if cost.per_device_hour is not None else "device h"


def study_cost(study: StudyAttrs) -> Cost:
    """The ``cost:`` section the study's experiment was run with (no price where it had none)."""
    raw = study_experiment(study).get("cost") or {}
    return Cost(**{k: v for k, v in raw.items() if k in ("per_device_hour", "currency")})


def objective_names(study: optuna.Study) -> tuple[str, ...]:
    """What the study minimizes, one name per objective, as its experiment stored it."""
    minimize = (study_experiment(study).get("objective") or {}).get("minimize", "time")
    names = (minimize,) if isinstance(minimize, str) else tuple(minimize)
    return names if len(names) == len(study.directions) else tuple(f"objective {i}" for i in range(len(study.directions)))


def study_units(study: optuna.Study) -> tuple[str, ...]:
    """One unit per objective of the study."""
    cost = study_cost(study)
    return tuple(unit(name, cost) for name in objective_names(study))


def study_unit(study: optuna.Study) -> str:
    """The unit of the study's (first) objective: what its progress lines, tables and runs show."""
    return study_units(study)[0]


def amount(value: float, unit_: str) -> str:
    """A value as a table cell: seconds to the millisecond (as every view has printed them), else four figures."""
    return f"{value:.3f}" if unit_ == "s" else f"{value:.4g}"


def with_unit(value: float, unit_: str) -> str:
    """A value with its unit: ``1.234 s``, ``5123 J``, ``0.01234 USD``."""
    return f"{amount(value, unit_)} {unit_}"


def span(low: float, high: float, unit_: str, with_the_unit: bool = True) -> str:
    """A range of values: ``1.500-1.700 s``; ``3.0e-06 to 4.7e-06 EUR`` where a dash would read as a minus sign."""
    a, b = amount(low, unit_), amount(high, unit_)
    text = f"{a} to {b}" if "e" in a + b else f"{a}-{b}"
    return f"{text} {unit_}" if with_the_unit else text


def counted(n: int, noun: str) -> str:
    """A count with its noun in the right number: ``1 seed``, ``3 seeds``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def in_words(unit_: str) -> str:
    """What values in this unit are, for a heading: ``seconds``, ``joules``, ``USD``."""
    return WORDS.get(unit_, unit_)


def column(name: str, unit_: str) -> str:
    """A column's or MLflow metric's name with the unit: ``value_s``, ``objective_J``, ``median_device_h``
    (characters an MLflow key refuses, as in a currency's symbol, become ``_``)."""
    suffix = re.sub(r"[^A-Za-z0-9_.-]+", "_", unit_).strip("_")
    return f"{name}_{suffix}" if suffix else name


def metric_names(names: tuple[str, ...], units: tuple[str, ...], goal: Target) -> list[str]:
    """Optuna's name for each objective, which Optuna Dashboard shows on its axes:
    ``time to loss <= 1.6 (s)``; an objective beside the target, ``model_size (B)``."""
    return [f"{n} to {goal.describe()} ({u})" if to_target(n) else f"{n} ({u})" for n, u in zip(names, units)]
