"""The pruners' registry: every declared name loads from an experiment file and opens as a pruner,
an undeclared one is refused at load, and the experiment's settings load before the stopping
package's hooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from conftest import REPO_ROOT, write

from tuner.docs_reference import pruners_markdown
from tuner.errors import ConfigError
from tuner.study.run.experiment_file import load_experiment
from tuner.study.stopping import REPORTING_PRUNERS, make_pruner
from tuner.study.stopping.pruner_registry import PRUNER_KINDS, PRUNERS_FOR_SEVERAL


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
    assert info.value.key == "pruner.name" and info.value.allowed.startswith(" or ".join(PRUNERS_FOR_SEVERAL) + " with several objectives")


def test_an_undeclared_pruner_is_refused_at_load_naming_the_declared_ones(tmp_path: Path) -> None:
    path = write(tmp_path / "exp.yaml", "task: synthetic\npruner:\n  name: lucky_guess\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert str(info.value) == f"{path}: pruner.name: expected one of {', '.join(PRUNER_KINDS)}, got 'lucky_guess'"


def test_the_experiment_s_settings_load_first_without_an_import_cycle() -> None:
    # The pruners' builders in the stopping package read the settings, and the file's loader reads the pruners:
    # loaded first (the package's root, tuner/__init__.py, would load everything in its own order), they must not meet.
    code = (
        "import sys, types; root = types.ModuleType('tuner'); root.__path__ = [sys.argv[1]]; sys.modules['tuner'] = root; "
        "import tuner.study.experiment.load, tuner.study.stopping.hooks"
    )
    done = subprocess.run([sys.executable, "-c", code, str(REPO_ROOT / "tuner")], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_documentation_table_lists_every_declared_pruner() -> None:
    rows = [line.split("|")[1].strip() for line in pruners_markdown().splitlines()[2:]]
    assert rows == [f"`{n}`" for n in PRUNER_KINDS]
