"""tuner/track/ read from its source: tracking reaches MLflow through the store, and nothing reaches up into the study runner."""

from __future__ import annotations

from test_layers import GRAPH, MODULES, find_cycle, imports

TRACK = {name: path for name, path in MODULES.items() if name.startswith("tuner.track")}
# What runs a study, and the commands: tracking is told about a study through its hooks, never drives one.
ABOVE_TRACK = ("tuner.study.run.runner", "tuner.study.run.workers", "tuner.orchestrate", "tuner.cli", "tuner.nightly", "tuner.api")


# The modules a study's tracking runs through: they reach MLflow through the store only.
THROUGH_THE_STORE = ("trial_runs", "writer", "sync", "summary", "publish", "run_layout", "plots")


def test_the_trial_path_reaches_mlflow_through_the_store_only() -> None:
    importers = {name for name, path in TRACK.items() if any(m == "mlflow" or m.startswith("mlflow.") for m in imports(path, MODULES))}
    assert "tuner.track.store" in importers
    assert not importers & {f"tuner.track.{m}" for m in THROUGH_THE_STORE}


def test_track_does_not_import_the_study_runner_or_the_commands() -> None:
    bad = [f"{name} imports {m}" for name in TRACK for m in GRAPH[name] if m.startswith(ABOVE_TRACK)]
    assert not bad


def test_no_import_cycle_inside_track() -> None:
    inside = {name: {m for m in GRAPH[name] if m in TRACK} for name in TRACK}
    assert find_cycle(inside) is None
