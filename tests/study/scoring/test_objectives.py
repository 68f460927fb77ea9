"""The objectives' registry (tuner/study/scoring/objectives.py), one case per entry:
each loads as its entry says (alone, or only in a list), has a value for a trial that measured its
figures, a unit, words, and a row in the documentation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import write

from tuner.docs_reference import objectives_markdown
from tuner.errors import ConfigError
from tuner.study.experiment.cost import Cost
from tuner.study.experiment.load import Experiment, Objective
from tuner.study.run.experiment_file import MINIMIZE_ALLOWED, load_experiment
from tuner.study.scoring.objectives import ALONE, OBJECTIVE_KINDS, TIME, seconds_behind, to_target, words
from tuner.study.scoring.units import metric_names, unit
from tuner.study.scoring.values import value_of
from tuner.train.result import Outcome, TrialResult
from tuner.train.target import Target
from tuner.train.trial_config import TrialConfig


def another(name: str) -> str:
    return next(n for n in OBJECTIVE_KINDS if n != name)


@pytest.mark.parametrize("name", list(OBJECTIVE_KINDS))
def test_every_objective_loads_in_a_list_and_alone_only_if_valued_to_the_target(tmp_path: Path, name: str) -> None:
    pair = [name, another(name)]
    listed = load_experiment(write(tmp_path / "list.yaml", f"task: synthetic\nobjective:\n  minimize: [{', '.join(pair)}]\n"))
    assert listed.objective.names == tuple(pair)
    path = write(tmp_path / "alone.yaml", f"task: synthetic\nobjective:\n  minimize: {name}\n")
    if OBJECTIVE_KINDS[name].to_target:
        assert load_experiment(path).objective.names == (name,)
        return
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert (info.value.key, info.value.allowed, info.value.given) == ("objective.minimize", MINIMIZE_ALLOWED, name)


def test_what_minimize_allows_names_every_objective_in_the_registry_s_order() -> None:
    assert MINIMIZE_ALLOWED == "one of " + ", ".join(ALONE) + ", or a list of two or more of " + ", ".join(OBJECTIVE_KINDS)
    assert ALONE == tuple(n for n, k in OBJECTIVE_KINDS.items() if k.to_target) and "time" in ALONE


@pytest.mark.parametrize("name", list(OBJECTIVE_KINDS))
def test_a_trial_that_measured_every_figure_has_a_finite_value(name: str) -> None:
    experiment = Experiment(source="x.yaml", name="x", objective=Objective(target=0.9, cap_s=10.0, clock="train", minimize=[name, "time"]))
    reached = TrialResult(
        Outcome.REACHED,
        "",
        Target(0.9),
        train_s=3.6,
        train_s_to_target=3.6,
        wall_s=4.0,
        wall_s_to_target=4.0,
        samples=4096,
        samples_to_target=4096,
        steps=64,
        steps_to_target=64,
        best_metric=0.91,
        final_metric=0.91,
        peak_memory_mb=120.0,
        model_bytes=4096,
        energy_j=12.0,
        energy_j_to_target=12.0,
    )
    value = value_of(name, reached, experiment, TrialConfig())
    assert math.isfinite(value) and value > 0


@pytest.mark.parametrize("price", [None, 2.5])
@pytest.mark.parametrize("name", list(OBJECTIVE_KINDS))
def test_the_seconds_behind_a_value_are_those_it_was_computed_from_or_none(name: str, price: float | None) -> None:
    cost = Cost(per_device_hour=price)
    experiment = Experiment(source="x.yaml", name="x", objective=Objective(target=0.9, cap_s=10.0, clock="train"), cost=cost)
    reached = TrialResult(Outcome.REACHED, "", Target(0.9), train_s=3.6, train_s_to_target=3.6, best_metric=0.91, energy_j=12.0)
    value = value_of(name, reached, experiment, TrialConfig(devices=2))
    seconds = seconds_behind(name, value, cost, 2)
    assert seconds is None or seconds == pytest.approx(3.6)
    assert seconds_behind("time", 3.6, cost, 2) == 3.6 and seconds_behind("energy", 12.0, cost, 2) is None  # joules are no time
    assert seconds_behind(["time", "model_size"], value, cost, 2) is None  # several objectives: no one time


@pytest.mark.parametrize("name", list(OBJECTIVE_KINDS))
def test_an_objective_has_its_unit_words_and_metric_name(name: str) -> None:
    kind = OBJECTIVE_KINDS[name]
    assert unit(name, Cost()) == (kind.unit or "device h") and unit(name, Cost(per_device_hour=2.0)) == (kind.unit or "USD")
    better, worse = words(name)
    assert better and worse and better != worse
    (shown,) = metric_names((name,), ("u",), Target(0.9))
    assert shown == (f"{name} to accuracy >= 0.9 (u)" if kind.to_target else f"{name} (u)")
    assert to_target(name) == kind.to_target


def test_a_name_of_no_objective_reads_as_time_did_before_the_choice() -> None:
    assert words("objective 0") == TIME.words and not to_target("objective 0")
    assert unit("objective 0", Cost()) == "device h"  # as a cost without a price, as before the registry


def test_the_documentation_table_lists_every_declared_objective() -> None:
    rows = [line.split("|")[1].strip() for line in objectives_markdown().splitlines()[2:]]
    assert rows == [f"`{n}`" for n in OBJECTIVE_KINDS]
