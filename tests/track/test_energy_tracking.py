"""Energy in MLflow: each trial run logs its energy and its energy to the target in joules where
a counter was read, the study run the winner's and the baseline's medians, and `tuner run`'s
closing summary says the same in one line.

A real study (synthetic task, confirmation and baseline on) into a real local MLflow store. The
energy source alone is made up: no machine that runs the tests has a counter a user may read (the
GPU's, through NVML, is checked by benchmarks/gpu_check.py), so the RAPL discovery is given a
counter that reads 50 W of the host clock.
"""

from __future__ import annotations

import time
from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment
from mlflow import MlflowClient

from tuner.cli import main as cli
from tuner.train import energy

WATTS = 50.0


class FiftyWatts:
    """The energy Counter interface (tuner/train/energy.py) on the host clock: 50 J per second."""

    name = "fifty-watts"
    joules_per_unit = 1e-6
    wraps_at = None

    def read(self) -> int:
        return int(time.perf_counter() * WATTS * 1e6)


@pytest.mark.e2e
def test_a_study_logs_each_trials_energy_and_the_medians_in_mlflow(tmp_path: Path, tracking_uri: str, monkeypatch, capsys) -> None:
    monkeypatch.setattr(energy, "rapl_zones", lambda root=energy.RAPL_ROOT: [FiftyWatts()])
    # One searched configuration and a baseline at a fortieth of its rate: the search has a winner
    # to compare with the baseline, however loaded the machine.
    extra = f"tracking_uri: {tracking_uri}\nsearch_space: {{lr: 0.02, batch_size: 64}}\nbaseline: {{lr: 0.0005, batch_size: 64}}\n"
    path = synthetic_experiment(tmp_path / "watts.yaml", extra, n_trials=3, confirm=True)
    assert cli(["run", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.startswith("energy (")]
    assert line.startswith("energy (rapl (fifty-watts)): winner ") and " J against the baseline's " in line, line

    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("watts").experiment_id])
    [parent] = [r for r in runs if r.data.tags.get("tuner.role") == "parent"]
    children = [r for r in runs if r.data.tags.get("tuner.role") != "parent"]
    roles = {r.data.tags["tuner.role"] for r in children}
    assert {"trial", "confirmation", "baseline"} <= roles, roles
    study = optuna.load_study(study_name="watts", storage=f"sqlite:///{tmp_path / 'study.db'}")
    measured = {t.number: t.user_attrs for t in study.trials}
    for run in children:
        m, attrs = run.data.metrics, measured[int(run.data.tags["tuner.trial_number"])]
        # The joules the trial measured over its timed region: what the counter gave, within the
        # trial's wall time (a boundary's read can come a thread switch after the clock's: not compared closer).
        assert m["energy_J"] == pytest.approx(attrs["energy_j"]) and 0 < m["energy_J"] <= WATTS * m["total_wall_s"] + 0.5
        if run.data.tags["tuner.train.result"] == "reached":
            assert m["energy_J_to_target"] == m["energy_J"]  # a reached trial stops at its crossing
        else:
            assert "energy_J_to_target" not in m
        assert "host_syncs_per_step" not in m  # a CPU: nothing to count

    def medians(role: str) -> float:
        values = sorted(r.data.metrics["energy_J"] for r in children if r.data.tags["tuner.role"] == role)
        return values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2

    p = parent.data.metrics
    assert p["baseline_median_energy_J"] == pytest.approx(medians("baseline"))
    assert p["winner_median_energy_J"] > 0
    assert f"{p['winner_median_energy_J']:.3g}" in line or f"{p['winner_median_energy_J']:.4g}" in line
