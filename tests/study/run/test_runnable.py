"""What of a space this machine can run (tuner/study/run/runnable.py): data-parallel process counts."""

from __future__ import annotations

from pathlib import Path

from conftest import CPU, synthetic_experiment

from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runnable import max_devices, runnable_space, unrunnable_devices
from tuner.study.space.space import Choice, Fixed, SearchSpace


def test_device_counts_the_machine_cannot_run_are_removed_before_the_study(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "ddp.yaml", "")
    text = path.read_text().replace("precision: fp32", "precision: fp32\n    devices: {choices: [1, 2, 4096]}")
    path.write_text(text)
    experiment = load_experiment(path)
    space, notes = runnable_space(experiment, CPU)
    assert space.dims["devices"] == Choice((1, 2))
    assert any("removed devices=4096" in n and "CPU core" in n for n in notes)
    assert max_devices(space) == 2


def test_max_devices_reads_fixed_and_absent_dimensions() -> None:
    assert max_devices(SearchSpace({})) == 1
    assert max_devices(SearchSpace({"devices": Fixed(3)})) == 3
    assert unrunnable_devices(SearchSpace({"devices": Fixed(1)}), CPU) == {}
