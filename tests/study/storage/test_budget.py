"""The study-wide trial budget (tuner/study/storage/budget.py): exact under racing worker processes."""

from __future__ import annotations

import collections
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import optuna
import pytest
import racer
from optuna.trial import TrialState

from tuner.study.storage.budget import BudgetedStorage, BudgetSpent, Limit
from tuner.study.storage.budget_loop import budgeted, optimize_queued

RACER = racer.PATH  # the worker script each racing process runs

WORKERS = 3
N_TOTAL = 20
QUEUED = [0.5 + i / 100 for i in range(6)]


def race(url: str, cwd: Path, name: str = "race") -> optuna.Study:
    study = optuna.create_study(study_name=name, storage=BudgetedStorage(url))  # once, before the workers
    for x in QUEUED:  # warm starts: each must run exactly once
        study.enqueue_trial({"x": x})
    procs = [subprocess.Popen([sys.executable, RACER, url, name, str(N_TOTAL), str(seed)], cwd=cwd) for seed in range(WORKERS)]
    assert [p.wait(timeout=180) for p in procs] == [0] * WORKERS
    return optuna.load_study(study_name=name, storage=url)


def check_exact(study: optuna.Study) -> None:
    trials = study.get_trials(deepcopy=False)
    states = collections.Counter(t.state for t in trials)
    assert states[TrialState.COMPLETE] + states[TrialState.PRUNED] == N_TOTAL, states
    assert states[TrialState.RUNNING] == states[TrialState.WAITING] == 0, states
    assert len({t.number for t in trials}) == len(trials)
    for x in QUEUED:
        assert sum(t.params.get("x") == x for t in trials) == 1, f"queued x={x} ran more or less than once"


@pytest.mark.e2e
def test_racing_workers_on_sqlite_finish_exactly_the_budget(tmp_path: Path) -> None:
    check_exact(race(f"sqlite:///{tmp_path / 'race.db'}", tmp_path))


@pytest.mark.e2e
def test_racing_workers_on_postgres_finish_exactly_the_budget(tmp_path: Path, postgres_url: str) -> None:
    import uuid

    check_exact(race(postgres_url, tmp_path, f"race-{uuid.uuid4().hex[:8]}"))  # the server outlives the test: a new name


def test_no_new_trial_starts_once_finished_plus_running_fill_the_budget(tmp_path: Path) -> None:
    storage = BudgetedStorage(f"sqlite:///{tmp_path / 'one.db'}")
    study = optuna.create_study(study_name="one", storage=storage)
    storage.set_limit(study._study_id, Limit(counted=2))
    done = study.ask()
    study.tell(done, 1.0)
    running = study.ask()
    with pytest.raises(BudgetSpent):
        study.ask()
    study.tell(running, state=TrialState.FAIL)  # a failed trial frees its place
    study.ask()
    with pytest.raises(BudgetSpent):
        study.ask()


def test_queued_trials_run_and_nothing_else(tmp_path: Path) -> None:
    study = optuna.create_study(study_name="q", storage=BudgetedStorage(f"sqlite:///{tmp_path / 'q.db'}"))
    study.enqueue_trial({"x": 0.25})
    study.enqueue_trial({"x": 0.75})
    seen: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimize_queued(study, lambda t: seen.append(t.suggest_float("x", 0, 1)) or 0.0, 2, (), [])
    assert seen == [0.25, 0.75]
    assert len(study.trials) == 2
    assert budgeted(study)._limits == {}  # the limit is lifted afterwards


def test_race_confirmation_and_baseline_runs_start_on_top_of_the_budget(tmp_path: Path) -> None:
    from tuner.study.record import baseline_attrs, confirmation_attrs, race_attrs

    storage = BudgetedStorage(f"sqlite:///{tmp_path / 'top.db'}")
    study = optuna.create_study(study_name="top", storage=storage)
    storage.set_limit(study._study_id, Limit(counted=1))
    study.tell(study.ask(), 1.0)  # the one searched configuration
    for attrs in (race_attrs(0, 200_000), confirmation_attrs(0, 100_000), baseline_attrs({}, 100_000)):
        study.enqueue_trial({}, user_attrs=attrs)
    reruns = [study.ask() for _ in range(3)]  # queued re-runs are taken though the budget is full...
    assert [sorted(t.user_attrs) for t in reruns] == [["race_of", "seed"], ["confirm_of", "seed"], ["baseline", "config", "seed"]]
    for trial in reruns:
        study.tell(trial, 1.0)
    with pytest.raises(BudgetSpent):  # ...and never count in it: no new search trial starts
        study.ask()
    study.enqueue_trial({"x": 0.5})  # a queued search trial (a warm start) counts like a sampled one
    with pytest.raises(BudgetSpent):
        study.ask()


def test_a_worker_turned_away_asks_again_once_per_heartbeat_not_every_second(tmp_path: Path) -> None:
    from tuner.study.storage.budget_loop import poll_wait_s

    beating = BudgetedStorage(f"sqlite:///{tmp_path / 'b.db'}", heartbeat_interval=10, grace_period=60)
    waits = [poll_wait_s(beating, 1.0) for _ in range(40)]
    assert all(7.5 <= w <= 12.5 for w in waits) and len(set(waits)) > 1  # jittered: workers turned away together spread out
    silent = BudgetedStorage(f"sqlite:///{tmp_path / 's.db'}")
    assert 0.75 <= poll_wait_s(silent, 1.0) <= 1.25


def test_a_trial_another_worker_is_failing_is_not_failed_again_on_sqlite(tmp_path: Path) -> None:
    """Two workers found the trial stale; the other one's transaction holds the write lock, the
    trial already FAIL in it. This worker must wait and then find it finished: failing it too
    would queue its re-run twice (SQLite has no SELECT ... FOR UPDATE; budget.py locks first)."""
    path = tmp_path / "stale.db"
    storage = BudgetedStorage(f"sqlite:///{path}")
    trial_id = optuna.create_study(study_name="stale", storage=storage).ask()._trial_id
    other = sqlite3.connect(path, isolation_level=None, timeout=30)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE trials SET state = 'FAIL' WHERE trial_id = ?", (trial_id,))
    outcome: list[object] = []

    def fail_it() -> None:
        try:
            outcome.append(storage.set_trial_state_values(trial_id, TrialState.FAIL))
        except optuna.exceptions.UpdateFinishedTrialError as err:
            outcome.append(err)

    this = threading.Thread(target=fail_it)
    this.start()
    time.sleep(1.0)  # this worker is now waiting for the lock, or (unlocked) has read the trial as RUNNING
    other.execute("COMMIT")
    this.join(timeout=30)
    assert len(outcome) == 1 and isinstance(outcome[0], optuna.exceptions.UpdateFinishedTrialError), outcome
