"""A disk that fills up mid-study: the SQLite study and the local MLflow store on a small tmpfs.

The run ends with one line naming the file it could not write (exit 1, no traceback), what was
stored stays intact, and once space is freed the same command resumes the study to its end with
`tuner doctor` finding one MLflow run per ended trial. Mounting a tmpfs needs root (or
CAP_SYS_ADMIN); elsewhere the test skips and says why. Slow: run it with ``-m slow``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEFAULT_SPACE, cli, write

from tuner.study.storage.storage_errors import EXIT_STORAGE_LOST

SIZE = "16m"  # the study, MLflow's store and its artifacts for 6 trials take about a third


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(disk)], capture_output=True, text=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {(mounted.stderr.strip() or 'mount failed').splitlines()[-1]}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def fill(disk: Path) -> Path:
    """Write zeros until the filesystem refuses; returns the file that holds them."""
    filler = disk / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(bytes(1 << 16))
                out.flush()
        except OSError:
            pass
    return filler


def finished(database: Path) -> int:
    with sqlite3.connect(database) as db:
        try:
            return db.execute("SELECT count(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
        except sqlite3.OperationalError:  # the file is there before Optuna's tables are
            return 0


@pytest.mark.slow  # three CLI processes that import MLflow: about 70 s on the 2-core VM
def test_a_full_disk_ends_the_run_in_one_line_and_the_study_resumes_once_space_is_freed(small_disk: Path, _empty_mlflow_db: Path) -> None:
    (small_disk / "mlruns").mkdir()
    shutil.copy(_empty_mlflow_db, small_disk / "mlruns" / "mlflow.db")
    experiment = write(
        small_disk / "full.yaml",
        f"""
        name: full
        task: synthetic
        task_options: {{noise: 3.0}}
        search_space:
          file: {DEFAULT_SPACE}
          override: {{precision: fp32, batch_size: {{choices: [32, 64]}}}}
        objective: {{target: 0.99, eval_every_samples: 256, cap_s: 0.3}}
        sampler: {{name: random}}
        pruner: {{name: none}}
        confirm: {{after_search: false}}
        race: null
        budget: {{n_trials: 6}}
        heartbeat: {{interval_s: 1, grace_s: 3}}
        trainer: {{threads: 1}}
        storage: sqlite:///{small_disk / "study.db"}
        tracking_uri: sqlite:///{small_disk / "mlruns" / "mlflow.db"}
        """,
    )
    env = {**os.environ, "TUNER_CACHE_DIR": str(small_disk.parent / "cache")}
    run = subprocess.Popen(
        [sys.executable, "-m", "tuner", "run", str(experiment)], cwd=small_disk, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (small_disk / "study.db").exists() or finished(small_disk / "study.db") < 2:
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read() if run.poll() is not None else "timed out"
            time.sleep(0.2)
        filler = fill(small_disk)
        stored = finished(small_disk / "study.db")
        err = run.communicate(timeout=120)[1]
    finally:
        run.kill() if run.poll() is None else None
    assert run.returncode not in (0, EXIT_STORAGE_LOST), err  # a full disk is not waited out
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        f"tuner: error: no space left on the disk holding {small_disk / 'study.db'}: nothing more could be stored; "
        "the trials stored so far are intact. Free some space, then run the same command to resume"
    )
    with sqlite3.connect(small_disk / "study.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert finished(small_disk / "study.db") >= stored >= 2  # nothing stored was lost

    filler.unlink()
    resumed = cli("run", str(experiment), cwd=small_disk, env={"TUNER_CACHE_DIR": env["TUNER_CACHE_DIR"]}, timeout=300)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr[-3000:]
    assert finished(small_disk / "study.db") == 6
    doctor = cli("doctor", str(experiment), cwd=small_disk, env={"TUNER_CACHE_DIR": env["TUNER_CACHE_DIR"]})
    assert doctor.returncode == 0 and doctor.stdout.startswith("ok: study 'full'"), doctor.stdout + doctor.stderr
