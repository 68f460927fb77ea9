"""tuner/study/storage/outage.py and storage_errors.py on their own: which errors are waited out, the lines said, the limit,
and the one line a command ends with. The errors are real ones, raised by the drivers here."""

from __future__ import annotations

import io
import logging
import os
import signal
import sqlite3
import time
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from conftest import free_port

from tuner import signals
from tuner.study.storage import storage_errors
from tuner.study.storage.budget import BudgetedStorage
from tuner.study.storage.outage import Outage
from tuner.study.storage.storage_errors import EXIT_STORAGE_LOST, StorageLost, disk_full, failure_line, unreachable


def refused_connection() -> Exception:
    """What a PostgreSQL that is down answers: a refused connection (SQLAlchemy's OperationalError)."""
    engine = sqlalchemy.create_engine(f"postgresql://tuner:pw@127.0.0.1:{free_port()}/tuner")
    try:
        engine.connect()
    except sqlalchemy.exc.OperationalError as err:
        return err
    finally:
        engine.dispose()
    raise AssertionError("connected to a port nothing listens on")


def sqlite_error(tmp_path: Path, sql: str, setup: str = "") -> sqlite3.Error:
    db = sqlite3.connect(tmp_path / "x.db")
    try:
        if setup:
            db.executescript(setup)
        db.execute(sql)
    except sqlite3.Error as err:
        return err
    finally:
        db.close()
    raise AssertionError(f"{sql} did not fail")


def test_an_unreachable_server_is_waited_out_and_a_refused_statement_or_full_disk_are_not(tmp_path: Path) -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    assert unreachable(refused_connection())
    assert not unreachable(sqlite_error(tmp_path, "SELECT * FROM missing"))
    # A database at its size limit answers as a full disk does (SQLITE_FULL).
    full = sqlite_error(tmp_path, "INSERT INTO t VALUES (zeroblob(100000))", "CREATE TABLE t (x); PRAGMA max_page_count = 2;")
    assert disk_full(full) and not unreachable(full)
    locker = sqlite3.connect(tmp_path / "locked.db")
    locker.execute("CREATE TABLE t (x)")
    locker.commit()
    locker.execute("BEGIN EXCLUSIVE")  # another process holding SQLite's lock past the wait
    try:
        with pytest.raises(sqlite3.OperationalError) as locked:
            sqlite3.connect(tmp_path / "locked.db", timeout=0).execute("SELECT * FROM t")
        assert "database is locked" in str(locked.value) and unreachable(locked.value)
    finally:
        locker.rollback()


def test_a_proxy_that_is_not_there_is_waited_out() -> None:
    grpc = pytest.importorskip("grpc", reason="the grpc extra is not installed")
    with grpc.insecure_channel(f"127.0.0.1:{free_port()}") as channel:
        call = channel.unary_unary("/tuner.StorageProxy/Hello")
        with pytest.raises(grpc.RpcError) as err:
            call(b"{}", timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE and unreachable(err.value)


class Flaky:
    """A storage call that fails with ``error`` until ``up_at`` (time.monotonic), then answers."""

    def __init__(self, error: Exception, down_s: float) -> None:
        self.error, self.up_at, self.calls = error, time.monotonic() + down_s, 0

    def __call__(self) -> str:
        self.calls += 1
        if time.monotonic() < self.up_at:
            raise self.error
        return "answer"


def test_an_outage_is_said_once_when_it_starts_and_once_when_it_ends() -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    out = io.StringIO()
    watch = Outage("postgresql://tuner:s3cret@db-host/tuner", retry_s=30, out=out)
    call = Flaky(refused_connection(), down_s=1.0)
    assert watch.call(call) == "answer" and call.calls >= 3
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "s3cret" not in out.getvalue(), lines
    assert lines[0].startswith("tuner: storage postgresql://tuner:***@db-host/tuner unreachable (OperationalError: ")
    assert lines[0].endswith("waiting up to 30 s for it (heartbeat.retry_s)")
    assert lines[1].startswith("tuner: storage postgresql://tuner:***@db-host/tuner is back after ")


def test_past_retry_s_the_storage_is_lost_and_every_call_fails_at_once() -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    watch = Outage("postgresql://tuner:s3cret@db-host/tuner", retry_s=0.5, out=io.StringIO())
    started = time.monotonic()
    with pytest.raises(StorageLost) as lost:
        watch.call(Flaky(refused_connection(), down_s=60))
    assert 0.5 <= time.monotonic() - started < 5
    assert str(lost.value).startswith("storage postgresql://tuner:***@db-host/tuner unreachable for 0.5 s (OperationalError: ")
    assert str(lost.value).endswith(f"exiting {EXIT_STORAGE_LOST} so that the launcher starts this worker again (heartbeat.retry_s)")
    answering = Flaky(RuntimeError("unused"), down_s=0)
    with pytest.raises(StorageLost):
        watch.call(answering)  # lost stays lost: the command ends, the launcher starts it again
    assert answering.calls == 0


def test_a_storage_lost_while_optuna_records_a_trial_ends_in_our_line_not_optunas_unbound_local(tmp_path: Path) -> None:
    storage = BudgetedStorage(f"sqlite:///{tmp_path / 's.db'}", retry_s=1)
    study = optuna.create_study(storage=storage)

    def objective(trial: optuna.Trial) -> float:
        storage._outage.lost = "storage sqlite:///s.db unreachable for 1 s (...); exiting 75 ..."  # as past the limit
        return 1.0

    with pytest.raises(Exception) as ended:  # Optuna's tell fails, then its get_trial, then its finally block
        study.optimize(objective, n_trials=1)
    assert isinstance(ended.value, UnboundLocalError)  # what surfaced as a traceback before
    assert failure_line(ended.value) == ("storage sqlite:///s.db unreachable for 1 s (...); exiting 75 ...", EXIT_STORAGE_LOST)


def test_with_verbose_the_first_outage_shows_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    storage_errors.quiet_storage_logs(True)
    try:
        with caplog.at_level(logging.ERROR, logger=storage_errors.LOGGER):
            Outage("postgresql://u:p@h/d", retry_s=30, out=io.StringIO()).call(Flaky(refused_connection(), down_s=0.6))
    finally:
        storage_errors.quiet_storage_logs(False)
    [record] = caplog.records  # once, for the first failure of the outage, not for every retry
    assert record.exc_info is not None and record.exc_info[0] is sqlalchemy.exc.OperationalError


def test_a_sigterm_ends_the_wait_for_a_storage_at_once_and_the_command_says_so_in_one_line() -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    watch = Outage("postgresql://u:p@h/d", retry_s=60, out=io.StringIO())
    started = time.monotonic()
    with signals.handled():
        os.kill(os.getpid(), signal.SIGTERM)  # held: no trial is training (as while Optuna records one)
        with pytest.raises(signals.Interrupted) as stopped:
            watch.call(Flaky(refused_connection(), down_s=60))
    assert time.monotonic() - started < 5 and stopped.value.exit_code == 143
    try:  # as in Optuna's trial loop: the interrupt under its own error, raised while recording the trial
        try:
            raise stopped.value
        finally:
            raise UnboundLocalError("cannot access local variable 'updated_state'")
    except UnboundLocalError as err:
        assert failure_line(err) == ("interrupted by SIGTERM; run the same command to resume", 143)
