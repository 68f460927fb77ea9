"""Study names, checked at load: they become MLflow experiment names, report file names and lock folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO_ROOT, write

from tuner.errors import ConfigError
from tuner.study.experiment.settings import NAME_MAX, STUDY_NAME_MAX
from tuner.study.run.experiment_file import load_experiment

ALLOWED = f"a study name of 1 to {NAME_MAX} characters: letters, digits, '.', '_' or '-', starting with a letter or digit"
FIXTURES = REPO_ROOT / "tests" / "fixtures"


def name_error(tmp_path: Path, text: str, file: str = "exp.yaml") -> ConfigError:
    path = write(tmp_path / file, text)
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert info.value.key == "name" and info.value.allowed == ALLOWED
    assert str(info.value).startswith(f"{path}: name: expected {ALLOWED}, got ")
    return info.value


@pytest.mark.parametrize(
    "path",
    [
        *sorted((REPO_ROOT / "experiments").glob("*.yaml")),
        *sorted((FIXTURES / "own_job").glob("*.yaml")),
        *sorted((FIXTURES / "previous_release").glob("*.yaml")),
    ],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_shipped_name_stays_valid(path: Path) -> None:
    name = load_experiment(path).name
    assert len(name) <= NAME_MAX and name[0].isalnum()


@pytest.mark.parametrize("name", ["a", "x" * NAME_MAX, "mnist1d-cnn_v2.1", "Night.2025-03-01", "7up"])
def test_names_within_the_rules_load(tmp_path: Path, name: str) -> None:
    assert load_experiment(write(tmp_path / "exp.yaml", f"task: synthetic\nname: '{name}'\n")).name == name


@pytest.mark.parametrize(
    "name",
    ["a/b", "..", ".hidden", "-rf", "a b", "tab\there", "étude", "semi;colon"],
    ids=["slash", "dot-dot", "leading dot", "leading dash", "space", "tab", "non-ascii", "semicolon"],
)
def test_names_outside_the_rules_are_refused(tmp_path: Path, name: str) -> None:
    assert name_error(tmp_path, f'task: synthetic\nname: "{name}"\n').given == name


@pytest.mark.parametrize("text", ["name: ''\n", 'name: "a\\nb"\n'], ids=["empty", "newline"])
def test_empty_and_unprintable_names_are_refused_on_one_line(tmp_path: Path, text: str) -> None:
    assert "\n" not in str(name_error(tmp_path, "task: synthetic\n" + text))


@pytest.mark.parametrize("length", [NAME_MAX + 1, 200_000])
def test_a_long_name_is_refused_with_its_length_on_a_short_line(tmp_path: Path, length: int) -> None:
    err = name_error(tmp_path, "task: synthetic\nname: " + "v" * length + "\n")
    assert err.given == "v" * 40 + f"... ({length} characters)"
    assert len(str(err)) < 300 + len(str(tmp_path)), str(err)


def test_the_file_name_as_default_name_is_checked_too(tmp_path: Path) -> None:
    assert name_error(tmp_path, "task: synthetic\n", file="my experiment.yaml").given == "my experiment"
    # Naming the study in the file is the way out.
    assert load_experiment(write(tmp_path / "my experiment.yaml", "task: synthetic\nname: mine\n")).name == "mine"


def test_the_study_name_flag_is_checked_with_room_for_a_suffix(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "exp.yaml", "task: synthetic\nname: " + "n" * NAME_MAX + "\n"))
    # Names made from the experiment's come back by flag: a night study (-night-YYYYMMDD) of the longest name fits.
    assert exp.with_overrides(name=exp.name + "-night-20250301").name == exp.name + "-night-20250301"
    assert exp.with_overrides(name="x" * STUDY_NAME_MAX).name == "x" * STUDY_NAME_MAX
    for bad in ("x" * (STUDY_NAME_MAX + 1), "../victim", ""):
        with pytest.raises(ConfigError) as info:
            exp.with_overrides(name=bad)
        assert info.value.key == "--study-name" and info.value.source == str(tmp_path / "exp.yaml")
        assert f"a study name of 1 to {STUDY_NAME_MAX} characters" in info.value.allowed
