"""Broken and hostile experiment files: exit 2, one clear line, and every store left as it was.

Each file in fixtures/bad/ says on its first line what the error line must contain. The
corpus runs against the storage and MLflow store of a real study made first (every file
that names a study names that one, and uses the default stores), then the stores are
compared: nothing may have been written, whichever check refused the file.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import cli, synthetic_experiment

from tuner.cli import main
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.track.trial_runs import MlflowTracking

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BAD = sorted((FIXTURES / "bad").glob("*.yaml"))


def expected(path: Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    assert first.startswith("# expect: "), path
    return first.removeprefix("# expect: ")


def dump(db: Path) -> list[str]:
    """Every row of every table: what a study or a run store holds."""
    with sqlite3.connect(db) as con:
        return list(con.iterdump())


def files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file() and "cache" not in p.parts
    }


@pytest.fixture
def victim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real study 'victim' with its MLflow runs, in the default stores of the test folder."""
    path = synthetic_experiment(tmp_path / "victim.yaml", "confirm: {after_search: false}\n", n_trials=2, name="victim")
    path.write_text(path.read_text().replace(f"sqlite:///{tmp_path / 'study.db'}", "sqlite:///tuner.db"))
    experiment = load_experiment(path)
    # The same file the bad files' default tracking URI names; absolute, as MLflow caches a store per URI string.
    run_study(experiment, hooks=[MlflowTracking(f"sqlite:///{tmp_path}/mlruns/mlflow.db")])
    shutil.copytree(FIXTURES / "bad", tmp_path / "bad")
    monkeypatch.syspath_prepend(str(FIXTURES / "bad_tasks"))
    return tmp_path


def test_the_corpus_is_large_enough() -> None:
    assert len(BAD) >= 30


def test_every_bad_file_is_exit_2_one_line_and_writes_nothing(victim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stores = {name: dump(victim / name) for name in ("tuner.db", "mlruns/mlflow.db")}
    before = files(victim)
    capsys.readouterr()
    for path in BAD:
        name = f"bad/{path.name}"
        code = main(["run", name, "--quiet"])
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert code == 2 and out == "" and len(lines) == 1, (name, code, err)
        assert lines[0].startswith("tuner: error: ") and expected(path) in lines[0], (name, lines[0])
        assert "hunter2" not in lines[0] and "second line" not in lines[0], lines[0]
    assert not (victim / "pwned").exists()  # the !!python tag was refused, not run
    assert {name: dump(victim / name) for name in stores} == stores
    assert files(victim) == before  # no new database, no lock, no MLflow folder, nothing touched


@pytest.mark.parametrize("name", ["storage_server_unreachable.yaml", "tracking_server_unreachable.yaml", "python_object_tag.yaml"])
def test_a_fresh_process_prints_exactly_one_line(tmp_path: Path, name: str) -> None:
    shutil.copytree(FIXTURES / "bad", tmp_path / "bad")
    result = cli("run", f"bad/{name}", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert expected(FIXTURES / "bad" / name) in line and "hunter2" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad"]  # no store, no cache, nothing


@pytest.mark.e2e
def test_a_huge_study_name_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A name of 200,000 characters, in the file or by flag: exit 2, one short line, no store, no lock, no report."""
    (tmp_path / "huge.yaml").write_text("task: synthetic\nname: " + "v" * 200_000 + "\nbudget: {n_trials: 1}\n")
    (tmp_path / "ok.yaml").write_text("task: synthetic\nname: ok\nbudget: {n_trials: 1}\n")
    # One argument may hold at most 128 KiB on Linux: the flag's name is long, not huge.
    runs = {
        ("validate", "huge.yaml"): "huge.yaml: name: expected a study name of 1 to 100 characters",
        ("run", "huge.yaml", "--quiet"): "huge.yaml: name: expected a study name of 1 to 100 characters",
        ("run", "ok.yaml", "--quiet", "--study-name", "s" * 100_000): "ok.yaml: --study-name: expected a study name of 1 to 128 characters",
    }
    for args, message in runs.items():
        result = cli(*args, cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == "", (args[:2], result.returncode, result.stderr[-500:])
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("tuner: error: " + message) and "characters)" in line and len(line) < 400, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.yaml", "ok.yaml"]  # no store, no cache, nothing
