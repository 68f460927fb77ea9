"""`tuner run`, `tuner best --pick`, `tuner train` and `tuner report` on a study of two objectives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import cli, synthetic_experiment, two_objective_experiment

from tuner.cli import main as tuner
from tuner.study.run.experiment_file import load_experiment
from tuner.study.scoring.pareto import study_front
from tuner.train.trial_config import TrialConfig


@pytest.fixture
def two_objective_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """A study of time and model size run through `tuner run`, with its confirmation and baseline."""
    path = two_objective_experiment(tmp_path / "two.yaml", "confirm: {after_search: true, top_k: 2, seeds: 1}\n", n_trials=6, lr_low=3.0e-3)
    assert tuner(["run", str(path), "--no-tracking", "--quiet"]) == 0
    return path, capsys.readouterr().out


def test_run_ends_with_the_front_and_best_asks_for_a_pick(
    two_objective_study: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, summary = two_objective_study
    assert "Pareto front of time and model_size" in summary and "confirmed: medians over the confirmation seeds" in summary
    assert f"pick one with: tuner best {path} --pick time|model_size|knee|<trial number>" in summary
    assert "baseline: time" in summary  # its medians on every objective, no single ratio
    # Without --pick: the front, and nothing written (exit 1, so `tuner best && tuner train` stops).
    assert tuner(["best", str(path), "-o", str(tmp_path / "best.yaml")]) == 1
    out = capsys.readouterr().out
    assert "nothing written: pick one with" in out and not (tmp_path / "best.yaml").exists()
    # A pick that names nothing on the front: one line, exit 2, nothing written.
    assert tuner(["best", str(path), "--pick", "999", "-o", str(tmp_path / "best.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tuner: error: tuner best: --pick: expected time, model_size, knee or a trial number on the front (")
    assert len(err.splitlines()) == 1 and not (tmp_path / "best.yaml").exists()


@pytest.mark.e2e
def test_a_picked_point_is_exported_and_replayed_by_train(
    two_objective_study: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = two_objective_study
    study = load_experiment(path)
    assert tuner(["best", str(path), "--pick", "model_size", "-o", str(tmp_path / "small.yaml"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    front = report["front"]
    assert front["objectives"] == ["time", "model_size"] and front["units"] == ["s", "B"] and front["confirmed"]
    smallest = min(front["points"], key=lambda p: (p["values"]["model_size"], p["values"]["time"]))
    text = (tmp_path / "small.yaml").read_text()
    assert text.startswith("# Point 'model_size' of the Pareto front of study 'two': trial ")
    exported = yaml.safe_load(text)
    import optuna

    points = study_front(optuna.load_study(study_name=study.name, storage=study.storage))
    chosen = next(p for p in points if p.trial.number == smallest["trial"])
    assert TrialConfig.from_params(exported["search_space"]) == chosen.trial.config and exported["seed"] == chosen.trial.seed
    # `tuner train` replays it in a fresh process, as a user would.
    done = cli("train", "small.yaml", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["config"] == chosen.trial.config.as_dict()


def test_pick_is_refused_on_a_study_of_one_objective(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = synthetic_experiment(tmp_path / "one.yaml", n_trials=1)
    assert tuner(["run", str(path), "--no-tracking", "--quiet"]) == 0
    assert tuner(["best", str(path), "--pick", "knee"]) == 2
    assert "--pick: expected only with a study of several objectives" in capsys.readouterr().err


@pytest.mark.e2e
def test_report_shows_the_front(two_objective_study: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = two_objective_study
    assert tuner(["report", str(path), "--output", str(tmp_path / "reports")]) == 0
    data = json.loads((tmp_path / "reports" / "report-two.json").read_text())
    assert data["front"]["points"] and "on the Pareto front of time and model_size" in data["summary"]
    assert (tmp_path / "reports" / "report-two_files" / "two-front.png").stat().st_size > 1000
    assert "front: trial" in (tmp_path / "reports" / "report-two.md").read_text()
