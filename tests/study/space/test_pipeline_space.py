"""The data-pipeline dimensions: removed where no loader exists, tuned where one does, and their wait shown."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from conftest import CPU, cli, synthetic_experiment, write

from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.space.space import Choice, Fixed
from tuner.tasks.image_folder_gen import make_image_folder

PIPELINE = """
    num_workers: {choices: [0, 1]}
    persistent_workers: {choices: [false, true], when: {num_workers: [1]}}
    prefetch_factor: {choices: [2, 4], when: {num_workers: [1]}}
    pin_memory: {choices: [false, true]}
    cache: {choices: [none, memory, device]}"""


def test_a_tensor_task_loses_the_pipeline_dimensions_with_a_reason(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "tensors.yaml")
    path.write_text(path.read_text().replace("precision: fp32", "precision: fp32" + PIPELINE))
    prepared = prepare(load_experiment(path))
    assert not {"num_workers", "persistent_workers", "prefetch_factor", "pin_memory", "cache"} & set(prepared.space.dims)
    assert "removed cache: task synthetic gives tensors, not Datasets: there is no DataLoader to tune" in prepared.notes
    assert sum(n.startswith("removed ") and "no DataLoader" in n for n in prepared.notes) == 5


def image_experiment(tmp_path: Path, n_trials: int = 2) -> Path:
    folder = make_image_folder(tmp_path / "shapes", n=60, size=16, classes=3, seed=0, test_fraction=0.25)
    return write(
        tmp_path / "images.yaml",
        f"""
        name: images
        task: image-folder
        task_options: {{path: {folder}, size: 16}}
        search_space:
          lr: 0.01
          batch_size: 15
          width: 0.25{PIPELINE.replace(chr(10) + "    ", chr(10) + "          ")}
        objective: {{target: 1.0, eval_every_samples: 45, cap_s: 30, clock: train, max_samples: 90}}
        sampler: {{name: random}}
        budget: {{n_trials: {n_trials}}}
        confirm: {{after_search: false}}
        storage: sqlite:///{tmp_path / "study.db"}
        tracking_uri: sqlite:///{tmp_path / "mlruns" / "mlflow.db"}
        trainer: {{threads: 1}}
        """,
    )


def test_a_dataset_task_keeps_them_but_pinned_memory_on_a_cpu(tmp_path: Path) -> None:
    prepared = prepare(load_experiment(image_experiment(tmp_path)))
    assert prepared.device == CPU
    assert prepared.space.dims["pin_memory"] == Fixed(False)
    assert prepared.space.dims["cache"] == Choice(("none", "memory", "device"))
    assert any(n.startswith("removed pin_memory=True: pinned memory only speeds copies to a GPU") for n in prepared.notes)


@pytest.mark.e2e
def test_a_study_shows_each_trials_data_wait_in_the_progress_and_in_mlflow(tmp_path: Path) -> None:
    path = image_experiment(tmp_path)
    result = cli("run", str(path), cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "removed pin_memory=True" in result.stderr + result.stdout
    output = (result.stderr + result.stdout).splitlines()
    lines = [line for line in output if line.startswith("trial ") and " value " in line]
    assert len(lines) == 2 and all("data wait " in line for line in lines), lines
    assert any(line.split()[0] == "trial" and "data_wait" in line.split() for line in output if line.strip())  # a closing table
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    runs = mlflow.search_runs(search_all_experiments=True, filter_string="tags.mlflow.parentRunId != ''", output_format="list")
    runs = [r for r in runs if "data_wait_share" in r.data.metrics]
    assert len(runs) == 2
    assert all(0 < r.data.metrics["data_wait_share"] < 1 for r in runs)
    assert {r.data.params["cache"] for r in runs} <= {"none", "memory", "device"}


def test_pipeline_values_fixed_at_their_defaults_go_without_a_note(tmp_path: Path) -> None:
    # What `tuner best` exports fixes every dimension: replaying it on a tensor task stays quiet.
    path = synthetic_experiment(tmp_path / "exported.yaml")
    fixed = "\n    num_workers: 0\n    pin_memory: false\n    cache: none\n    prefetch_factor: 2\n    persistent_workers: false"
    path.write_text(path.read_text().replace("precision: fp32", "precision: fp32" + fixed))
    prepared = prepare(load_experiment(path))
    assert "cache" not in prepared.space.dims and not any("DataLoader" in n for n in prepared.notes)
