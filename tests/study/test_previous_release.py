"""A study and its MLflow store written by the release before the study-core split still read.

tests/fixtures/previous_release/ holds them (prev.yaml: storage sqlite:///previous.db, tracking
sqlite:///mlflow.db, both relative to the folder). Each test runs on a copy, as a user would.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import optuna
import pytest
import yaml
from conftest import cli

from tuner.cli import main as tuner
from tuner.train.trial_config import TrialConfig

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "previous_release"
WINNER = 0  # the confirmed winner's search trial: median 0.008 s over 2 seeds
AGREE = "ok: study 'previous-release' and MLflow sqlite:///mlflow.db agree (10 ended trials, one run each)"


@pytest.fixture
def previous(tmp_path: Path) -> Path:
    folder = tmp_path / "previous"
    shutil.copytree(FIXTURE, folder)
    return folder


def stored_config(folder: Path, number: int) -> dict:
    """The trial's configuration as the previous release stored it."""
    study = optuna.load_study(study_name="previous-release", storage=f"sqlite:///{folder / 'previous.db'}")
    return study.trials[number].user_attrs["config"]


def trains(space: dict, config: dict) -> bool:
    """Whether `tuner best`'s export of a stored configuration trains it: every value it leaves
    out (this version's later fields too) is at the default the stored one has."""
    return TrialConfig.from_params(space) == TrialConfig.from_stored(config)


@pytest.mark.e2e
def test_best_report_and_doctor_read_a_study_of_the_previous_release(previous: Path) -> None:
    config = stored_config(previous, WINNER)
    best = cli("best", "prev.yaml", "-o", "best.yaml", cwd=previous)
    assert best.returncode == 0, best.stderr
    assert best.stdout.startswith(f"# study 'previous-release': best trial {WINNER}'s configuration, median 0.008 s over 2 seeds")
    assert "# confirmed: the best median over fresh seeds among the top configurations" in best.stdout
    export = yaml.safe_load((previous / "best.yaml").read_text())
    assert export["name"] == "previous-release-best" and export["seed"] == 0 and export["budget"]["n_trials"] == 1
    assert trains(export["search_space"], config) and "muon_momentum" not in export["search_space"]

    report = cli("report", "prev.yaml", cwd=previous)
    assert report.returncode == 0, report.stderr
    files = [f"reports/report-previous-release.{ext}" for ext in ("html", "md", "json")]
    assert f"report written: {', '.join(files)}" in report.stdout and all((previous / f).is_file() for f in files)
    data = json.loads((previous / files[2]).read_text())
    assert (data["study"], data["winner"]["trial"], data["winner"]["confirmed"], data["winner"]["seeds"]) == (
        "previous-release",
        WINNER,
        True,
        2,
    )
    assert data["winner"]["config"] == TrialConfig().as_dict() | config and data["outcomes"]["by_outcome"] == {"capped": 3, "reached": 7}
    assert "| winner | trial 0's configuration (confirmed) |" in (previous / files[1]).read_text()

    doctor = cli("doctor", "prev.yaml", cwd=previous)
    assert doctor.returncode == 0, doctor.stderr
    assert doctor.stdout.strip() == AGREE


def edit_stored_configs(db: Path, drop: str, add: dict) -> None:
    """Every trial's stored configuration without ``drop`` and with ``add``; ``add`` also as a
    parameter of the first trial, as a version that searched such a dimension would store it."""
    with sqlite3.connect(db) as con:
        for row_id, value in con.execute(
            "select trial_user_attribute_id, value_json from trial_user_attributes where key = 'config'"
        ).fetchall():
            config = {k: v for k, v in json.loads(value).items() if k != drop} | add
            con.execute("update trial_user_attributes set value_json = ? where trial_user_attribute_id = ?", (json.dumps(config), row_id))
        for name, value in add.items():
            choices = json.dumps({"name": "CategoricalDistribution", "attributes": {"choices": [value, "other"]}})
            con.execute(
                "insert into trial_params (trial_id, param_name, param_value, distribution_json) values (1, ?, 0.0, ?)", (name, choices)
            )
    con.close()


def test_stored_configurations_with_an_unknown_key_and_without_a_known_one_still_read(
    previous: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = stored_config(previous, WINNER)
    assert config["head_lr_mult"] == 1.0  # its default: a study stored before the key existed meant it
    edit_stored_configs(previous / "previous.db", drop="head_lr_mult", add={"momentum_kind": "nesterov"})
    edited = stored_config(previous, WINNER)
    assert "head_lr_mult" not in edited and edited["momentum_kind"] == "nesterov"

    monkeypatch.chdir(previous)
    assert tuner(["best", "prev.yaml", "-o", "best.yaml"]) == 0
    out = capsys.readouterr().out
    assert f"# left out of trial {WINNER}'s stored configuration, unknown to this version: momentum_kind" in out
    export = yaml.safe_load((previous / "best.yaml").read_text())
    assert trains(export["search_space"], config)  # what the unedited study stored
    assert tuner(["doctor", "prev.yaml"]) == 0
    assert capsys.readouterr().out.strip() == AGREE
