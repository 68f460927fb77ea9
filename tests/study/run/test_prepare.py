"""Preparing a study (tuner/study/run/prepare.py): one narrowing pipeline in a fixed order, and
nothing written anywhere, so that a command with a bad store leaves none behind."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import cli, free_port, no_stores_in, synthetic_experiment

from tuner.study.run.batch_ceiling import CEILINGS_STUDY, keep_ceilings, stored_ceilings
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import (
    NARROWING,
    batch_ceiling,
    data_pipeline,
    levers,
    on_hardware,
    precision_speed,
    prepare,
    pretrained_fits,
    task_names,
)
from tuner.study.study_record import ceiling_entry

CEILING_ON = "trainer:\n  threads: 1\n  batch_ceiling: true\n"


def test_the_narrowing_steps_run_once_each_in_their_declared_order() -> None:
    # The ceiling probes the widest model the steps before it leave, in the precisions they leave;
    # the pretrained check every width left.
    assert NARROWING == (on_hardware, task_names, data_pipeline, levers, precision_speed, batch_ceiling, pretrained_fits)


def test_preparing_with_the_ceiling_on_measures_it_and_writes_nothing(tmp_path: Path) -> None:
    experiment = load_experiment(synthetic_experiment(tmp_path / "p.yaml", CEILING_ON))
    prepared = prepare(experiment)
    assert any("batch ceiling" in n and "measured in" in n for n in prepared.notes)
    [(name, entry)] = prepared.to_keep.items()
    assert no_stores_in(tmp_path)  # not even an empty SQLite file
    assert prepared.threads == 1
    # The run keeps it; a second preparation reads it and has nothing more to keep.
    keep_ceilings(experiment, prepared.to_keep)
    study = optuna.load_study(study_name=CEILINGS_STUDY, storage=experiment.storage)
    assert ceiling_entry(study, name) == entry
    again = prepare(experiment)
    assert again.to_keep == {} and any("read from the storage" in n for n in again.notes)


def test_reading_a_storage_without_tables_leaves_it_untouched(tmp_path: Path) -> None:
    empty = tmp_path / "study.db"
    empty.write_bytes(b"")  # an empty file is an empty SQLite database
    experiment = load_experiment(synthetic_experiment(tmp_path / "e.yaml", CEILING_ON))
    assert stored_ceilings(experiment) is None
    assert empty.read_bytes() == b""  # no tables created, no version stamped


@pytest.mark.e2e
def test_a_run_with_a_bad_tracking_uri_writes_no_storage_even_with_the_ceiling_on(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "pre.yaml", CEILING_ON, n_trials=1)
    bad = cli("run", str(path), "--tracking-uri", f"http://127.0.0.1:{free_port()}", cwd=tmp_path)
    assert bad.returncode == 2, bad.stderr
    assert "tracking_uri" in bad.stderr and "Traceback" not in bad.stderr
    assert no_stores_in(tmp_path)
    # The same run without tracking measures the ceiling and keeps it in the storage it writes.
    good = cli("run", str(path), "--no-tracking", "--quiet", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert "batch ceiling" in good.stderr and "measured in" in good.stderr
    stored = optuna.load_study(study_name=CEILINGS_STUDY, storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert len(stored.user_attrs) == 1
