"""The efficiency-lever dimensions: channels_last only for 2-d convolutions, for an own loop
only those its session applies, each removal with a printed reason; a study that searches them records and exports them."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
import yaml
from conftest import cli, synthetic_experiment

from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.space.levers import runnable_levers
from tuner.study.space.space import Choice, Fixed, parse_space
from tuner.tasks.registry import build_task

LEVERS = {
    "compile": {"choices": ["none", "default"]},
    "channels_last": {"choices": [False, True]},
    "accumulate": {"choices": [1, 2]},
    "lr_scaling": {"choices": ["none", "sqrt", "linear"]},
    "ramp_start": {"choices": [1.0, 0.5]},
    "ramp_frac": {"low": 0.05, "high": 0.5},
}


def test_channels_last_is_removed_for_a_model_without_2d_convolutions() -> None:
    space, notes = runnable_levers(parse_space(LEVERS, "x.yaml"), build_task("mnist1d-cnn"), "x.yaml")
    assert space.dims["channels_last"] == Fixed(False)
    assert notes == [
        "removed channels_last=True: the model of task mnist1d-cnn has no 2-d convolution, so the memory layout changes nothing"
    ]
    assert space.dims["compile"] == Choice(("none", "default"))  # the other levers stay


@pytest.mark.e2e
def test_channels_last_fixed_on_for_such_a_model_is_refused() -> None:
    from tuner.errors import ConfigError

    with pytest.raises(ConfigError, match="search_space.channels_last"):
        runnable_levers(parse_space({"channels_last": True}, "x.yaml"), build_task("mnist1d-cnn"), "x.yaml")


def test_an_own_loop_keeps_the_levers_its_session_applies_and_loses_the_rest_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "fixtures" / "own_job"))
    space, notes = runnable_levers(parse_space(LEVERS, "x.yaml"), build_task("own_job_mod:own_loop"), "x.yaml")
    assert set(LEVERS) & set(space.dims) == {"compile", "accumulate", "lr_scaling"}  # session.compile, train_step, schedule
    assert [n.partition(":")[0] for n in notes] == ["removed channels_last", "removed ramp_start", "removed ramp_frac"]
    assert all("trains with its own loop: of the built-in loop's levers only compile, accumulate, lr_scaling reach it" in n for n in notes)


@pytest.mark.e2e
def test_a_study_searches_the_levers_and_exports_them_for_tuner_train(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "levers.yaml", n_trials=4)
    body = yaml.safe_load(path.read_text())
    body["search_space"]["override"].update({k: v for k, v in LEVERS.items() if k != "compile"})  # compilation: tests/train/test_levers.py
    body["sampler"] = {"name": "random"}
    path.write_text(yaml.safe_dump(body))
    prepared = prepare(load_experiment(path))
    assert any(n.startswith("removed channels_last=True") for n in prepared.notes)
    run = cli("run", str(path), cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    mlflow.set_tracking_uri(load_experiment(path).tracking_uri)
    children = mlflow.search_runs(search_all_experiments=True, filter_string="tags.mlflow.parentRunId != ''", output_format="list")
    assert children and all(
        {"accumulate", "lr_scaling", "ramp_start", "ramp_frac", "compile", "channels_last"} <= set(r.data.params) for r in children
    )
    assert {r.data.params["lr_scaling"] for r in children} <= {"none", "sqrt", "linear"}
    best = cli("best", str(path), "-o", "best.yaml", cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    exported = yaml.safe_load((tmp_path / "best.yaml").read_text())
    space = exported.get("search_space", exported)
    # The searched levers; compile is fixed at its default here, and an export leaves out a default nothing changed.
    for name in ("accumulate", "lr_scaling", "ramp_start", "channels_last"):
        assert name in str(space), name
    replay = cli("train", "best.yaml", cwd=tmp_path, timeout=300)
    assert replay.returncode == 0, replay.stderr
