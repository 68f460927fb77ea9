"""`tuner worker --replay`: real workers on a real storage whose trials replay the committed
table in real time (tuner/simulate/paced_time.py), and the overhead they report (tuner/study/run/overhead.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest
from conftest import REPO_ROOT, cli, write
from optuna.trial import TrialState

from tuner.simulate.paced_time import PacedTime
from tuner.simulate.table import load_table
from tuner.study.record import TrialRecord, finished_search_trials
from tuner.study.run.overhead import Overhead

TABLE = REPO_ROOT / "benchmarks" / "tables" / "mnist1d_cnn.json.gz"
SCALE = 0.05  # the table's trials, up to 6 s, last up to 0.3 s


def experiment(folder: Path, cap_s: float = 6.0 * SCALE) -> Path:
    return write(
        folder / "replayed.yaml",
        f"""
        name: replayed
        task: mnist1d-cnn
        search_space: {REPO_ROOT / "search_spaces" / "default.yaml"}
        objective: {{target: 0.90, eval_every_samples: 2000, cap_s: {cap_s}, clock: robust}}
        sampler: {{name: tpe, n_startup_trials: 4}}
        budget: {{n_trials: 12}}
        confirm: {{after_search: false}}
        storage: sqlite:///{folder / "study.db"}
        """,
    )


@pytest.mark.e2e
def test_three_replaying_workers_finish_exactly_the_budget_in_real_time_and_report_their_overhead(tmp_path: Path) -> None:
    path = experiment(tmp_path)
    cmd = [sys.executable, "-m", "tuner", "worker", str(path), "--no-tracking", "--replay", str(TABLE), "--time-scale", str(SCALE)]
    env = {**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    workers = [
        subprocess.Popen([*cmd, "--worker-index", str(i)], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True) for i in range(3)
    ]
    errs = [w.communicate(timeout=300)[1] for w in workers]
    assert [w.returncode for w in workers] == [0, 0, 0], errs
    study = optuna.load_study(study_name="replayed", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert len(finished_search_trials(study)) == 12
    trials = study.get_trials(deepcopy=False)
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    table = load_table(TABLE)
    for t in trials:
        record = TrialRecord.of(t)
        table.lookup(record.config, record.seed)  # every trial is a recorded configuration and seed: NotInTable otherwise
        # Paced: a trial lasts at least the replayed time to its first crossing.
        if record.reached:
            assert (t.datetime_complete - t.datetime_start).total_seconds() >= record.value * 0.999
    counted = 0
    for err in errs:
        [line] = [line for line in err.splitlines() if line.startswith("worker overhead:")]
        trials_here, storage_ms, storage_calls = re.search(
            r"(\d+) trials here; storage ([\d.]+) ms/trial \([\d.]+ s, (\d+) calls\)", line
        ).groups()
        counted += int(trials_here)
        assert float(storage_ms) > 0 and int(storage_calls) >= int(trials_here)
        assert "sampler" in line
    assert counted == len(trials)


@pytest.mark.e2e
def test_a_replay_of_a_longer_cap_than_the_table_holds_is_refused_in_one_line_before_any_write(tmp_path: Path) -> None:
    path = experiment(tmp_path, cap_s=1.0)  # the table stops at 6 s: 0.3 s at this scale
    result = cli("worker", str(path), "--no-tracking", "--replay", str(TABLE), "--time-scale", str(SCALE), cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "objective.cap_s" in line and "at most the table's 6.0 x the time scale 0.05" in line, line
    assert not (tmp_path / "study.db").exists()
    alone = cli("worker", str(path), "--no-tracking", "--time-scale", "0.5", cwd=tmp_path)  # a scale with nothing to scale
    assert alone.returncode == 2 and "--time-scale: expected only with --replay, got 0.5" in alone.stderr, alone.stderr
    assert not (tmp_path / "study.db").exists()


def test_the_paced_clock_sleeps_off_replayed_time_and_takes_on_the_real_clocks_lead() -> None:
    paced = PacedTime()
    start = paced.now()
    paced.advance(0.2)
    assert paced.now() == pytest.approx(start + 0.2)  # advancing does not wait
    paced.sync()
    assert time.monotonic() >= start + 0.2  # sync waited until the real clock caught up
    time.sleep(0.1)  # the storage, the sampler, a busy machine: real time the replay did not account for
    paced.sync()
    assert paced.now() >= start + 0.3


def test_overhead_counts_a_nested_call_in_its_own_share_and_ignores_other_threads() -> None:
    class Storage:
        def get_all_trials(self) -> None:
            time.sleep(0.05)

    class Sampler:
        def __init__(self, storage: Storage) -> None:
            self.storage = storage

        def sample_relative(self) -> None:
            time.sleep(0.02)
            self.storage.get_all_trials()  # a sampler reads the study through the storage

    storage = Storage()
    sampler = Sampler(storage)
    overhead = Overhead()
    overhead.watch(storage, "storage", ["get_all_trials", "not_a_method"])
    overhead.watch(sampler, "sampler", ["sample_relative"])
    sampler.sample_relative()
    other = threading.Thread(target=storage.get_all_trials)  # as Optuna's heartbeat thread would
    other.start()
    other.join()
    assert overhead.calls == {"storage": 1, "sampler": 1}
    assert overhead.seconds["storage"] >= 0.05
    assert 0.02 <= overhead.seconds["sampler"] < 0.065  # with the nested read it would be 0.07 or more
    assert re.fullmatch(
        r"storage \d+\.\d ms/trial \(0\.\d\d s, 1 calls\); sampler \d+\.\d ms/trial \(0\.0\d s, 1 calls\)", overhead.line(1)
    )
