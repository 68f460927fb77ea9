"""The pruners' registry: every declared name loads from an experiment file and opens as a pruner,
an undeclared one is refused at load, and a declared name without a builder cannot be imported."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import optuna
import pytest
from conftest import write

from tuner.docs_reference import pruners_markdown
from tuner.errors import ConfigError
from tuner.study.experiment import pruners
from tuner.study.experiment.load import load_experiment
from tuner.study.experiment.pruners import PRUNER_KINDS, PrunerKind
from tuner.study.stopping import REPORTING_PRUNERS, by_name, make_pruner


@pytest.mark.parametrize("name", list(PRUNER_KINDS))
def test_every_declared_pruner_loads_and_opens(tmp_path: Path, name: str) -> None:
    experiment = load_experiment(write(tmp_path / "exp.yaml", f"task: synthetic\npruner:\n  name: {name}\n"))
    pruner = make_pruner(experiment.pruner, experiment.objective)
    assert isinstance(pruner, optuna.pruners.BasePruner)
    assert (name in REPORTING_PRUNERS) == PRUNER_KINDS[name].reports


@pytest.mark.parametrize("name", list(PRUNER_KINDS))
def test_several_objectives_load_only_with_the_pruners_that_serve_them(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / "exp.yaml", f"task: synthetic\nobjective:\n  minimize: [time, model_size]\npruner:\n  name: {name}\n")
    if PRUNER_KINDS[name].several:
        assert load_experiment(path).pruner.name == name
        return
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert info.value.key == "pruner.name" and info.value.allowed.startswith("equal_time or none with several objectives")


def test_an_undeclared_pruner_is_refused_at_load_naming_the_declared_ones(tmp_path: Path) -> None:
    path = write(tmp_path / "exp.yaml", "task: synthetic\npruner:\n  name: lucky_guess\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert str(info.value) == f"{path}: pruner.name: expected one of {', '.join(PRUNER_KINDS)}, got 'lucky_guess'"


def test_a_declared_pruner_without_a_builder_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(pruners.PRUNER_KINDS, "lucky_guess", PrunerKind("lucky_guess", "a pruner nobody built"))
    spec = importlib.util.spec_from_file_location("by_name_again", by_name.__file__)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "by_name_again", module)  # its dataclasses look their module up there
    with pytest.raises(ImportError, match="lucky_guess"):
        spec.loader.exec_module(module)


def test_the_documentation_table_lists_every_declared_pruner() -> None:
    rows = [line.split("|")[1].strip() for line in pruners_markdown().splitlines()[2:]]
    assert rows == [f"`{n}`" for n in PRUNER_KINDS]
