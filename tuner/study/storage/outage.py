"""A storage that goes away for a moment is waited out: a database restarted, failed over or
rescheduled, a storage proxy killed and started again.

Every call a worker makes to its storage (Optuna's ``BaseStorage`` methods, and tuner's own on
a ``BudgetedStorage`` or a proxy's client) goes through ``Outage.call``: a call that fails
because the storage cannot be reached is tried again, with backoff, for up to
``heartbeat.retry_s`` from the first failure; the worker prints one line when the outage
starts and one when it ends, and its running trial goes on (its result is written once the
storage is back). Past the limit the storage is *lost*: every call raises ``StorageLost`` at
once, and the command exits ``EXIT_STORAGE_LOST`` with one line naming the storage (the
password masked), a code the launchers (deploy/) start the worker again on.

The retry sits under Optuna, in the storage, on purpose: Optuna's trial loop cannot survive a
failed write (a failed commit while it records a trial's state ends in its own
``UnboundLocalError``), so an outage must never reach it while the limit lasts.
"""

from __future__ import annotations

import errno
import functools
import logging
import sqlite3
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy.exc

from tuner.errors import first_line
from tuner.redact import redact

EXIT_STORAGE_LOST = 75  # EX_TEMPFAIL (sysexits.h): a temporary failure, run the same command again
DEFAULT_RETRY_S = 300
FIRST_WAIT_S = 0.25
MAX_WAIT_S = 5.0  # once the storage is back, calls resume within this long
LOGGER = "tuner.study.storage.outage"  # the first outage's traceback, at DEBUG (shown with --verbose)

# The methods that reach the storage: Optuna's BaseStorage, the private ones its cache layer
# (optuna/storages/_cached_storage.py) calls on an RDBStorage, and tuner's own.
CALLS = (
    "create_new_study",
    "delete_study",
    "set_study_user_attr",
    "set_study_system_attr",
    "get_study_id_from_name",
    "get_study_name_from_id",
    "get_study_directions",
    "get_study_user_attrs",
    "get_study_system_attrs",
    "get_all_studies",
    "create_new_trial",
    "_create_new_trial",
    "set_trial_param",
    "_set_trial_param",
    "get_trial_id_from_study_id_trial_number",
    "get_trial_number_from_id",
    "get_trial_param",
    "get_best_trial",
    "_get_best_trial_id",
    "set_trial_state_values",
    "set_trial_intermediate_value",
    "set_trial_user_attr",
    "set_trial_system_attr",
    "set_trial_user_attrs",
    "get_trial",
    "get_all_trials",
    "_get_trials",
    "get_n_trials",
    "record_heartbeat",
    "_get_stale_trial_ids",
    "finished_searched",
)

SQLITE_PASSING = ("database is locked", "unable to open database file")

_verbose = False


class StorageLost(Exception):
    """The storage stayed unreachable past ``retry_s``: the command exits ``EXIT_STORAGE_LOST``."""


def show_first_traceback(verbose: bool) -> None:
    """With ``--verbose``, the first storage error's traceback is printed (tuner/cli/__init__.py)."""
    global _verbose
    _verbose = verbose


def _chain(err: BaseException) -> list[BaseException]:
    """The error and those it was raised from or during (Optuna wraps a failed commit)."""
    seen: list[BaseException] = []
    while err is not None and all(err is not e for e in seen):
        seen.append(err)
        err = err.__cause__ or getattr(err, "orig", None) or err.__context__
    return seen


def disk_full(err: BaseException) -> bool:
    """A write refused for want of space: SQLite's ``database or disk is full``, or ENOSPC."""
    return any(
        (isinstance(e, OSError) and e.errno == errno.ENOSPC)
        or (isinstance(e, sqlite3.OperationalError) and "disk is full" in str(e))
        or (isinstance(e, sqlite3.DatabaseError) and getattr(e, "sqlite_errorcode", None) == 13)  # SQLITE_FULL
        for e in _chain(err)
    )


def unreachable(err: BaseException) -> bool:
    """The storage could not be reached, or dropped the connection: worth waiting out.

    A database that refuses a statement (bad SQL, a constraint), a full disk, and a proxy
    that answers with an error are not: trying again would fail the same way.
    """
    if disk_full(err):
        return False
    chain = _chain(err)
    sqlite = next((e for e in chain if isinstance(e, sqlite3.Error)), None)
    if sqlite is not None:  # SQLite is a file: only a lock held too long, or a file not there for a moment, may pass
        return any(words in str(sqlite) for words in SQLITE_PASSING)
    for e in chain:
        if isinstance(e, sqlalchemy.exc.DBAPIError) and (e.connection_invalidated or isinstance(e, sqlalchemy.exc.OperationalError)):
            return True
        if isinstance(e, (sqlalchemy.exc.InterfaceError, sqlalchemy.exc.TimeoutError)):  # TimeoutError: no pooled connection came
            return True
        code = getattr(e, "code", None)
        if callable(code) and type(e).__module__.startswith("grpc") and getattr(code(), "name", "") == "UNAVAILABLE":
            return True  # the proxy is down, restarting, or waiting out its own database past its limit
    return False


def storage_of(err: BaseException) -> str | None:
    """The storage URL a failed storage call was made to (set by ``Outage.call``), if any."""
    return next((e.tuner_storage for e in _chain(err) if hasattr(e, "tuner_storage")), None)


def _reason(err: BaseException) -> str:
    """The driver's own words (the end of Optuna's or SQLAlchemy's chain), short, passwords masked."""
    root = _chain(err)[-1]
    return redact(f"{type(root).__name__}: {first_line(root)}")[:160]


class Outage:
    """The outage state of one storage, shared by the threads that call it (the trial loop, Optuna's heartbeat)."""

    def __init__(self, url: str, retry_s: float, out: Any = None) -> None:
        self.url = redact(url)
        self.retry_s = retry_s
        self.out = out
        self.since: float | None = None  # when the current outage started (time.monotonic)
        self.lost: str | None = None  # the one line, once the storage is lost
        self._lock = threading.Lock()
        self._inside = threading.local()

    def _say(self, line: str) -> None:
        print(line, file=self.out or sys.stderr, flush=True)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, tried again while the storage cannot be reached (up to ``retry_s``)."""
        if getattr(self._inside, "active", False):
            return fn(*args, **kwargs)  # a storage call made by a storage call: the outer one retries
        self._inside.active = True
        try:
            return self._retried(fn, args, kwargs)
        finally:
            self._inside.active = False

    def _retried(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        wait_s = FIRST_WAIT_S
        while True:
            if self.lost is not None:
                raise StorageLost(self.lost)
            try:
                result = fn(*args, **kwargs)
            except Exception as err:
                if not unreachable(err):
                    if not hasattr(err, "tuner_storage"):
                        err.tuner_storage = self.url  # for the one line the command prints (tuner/cli/__init__.py)
                    raise
                left = self._failed(err)
                if left <= 0:
                    raise StorageLost(self.lost) from None
                time.sleep(min(wait_s, left))
                wait_s = min(wait_s * 2, MAX_WAIT_S)
                continue
            if self.since is not None:
                self._back()
            return result

    def _failed(self, err: Exception) -> float:
        """Note a failed call; returns the seconds left before the storage is lost."""
        with self._lock:
            now = time.monotonic()
            if self.since is None:
                self.since = now
                reason = _reason(err)
                self._say(f"tuner: storage {self.url} unreachable ({reason}); waiting up to {self.retry_s:g} s for it (heartbeat.retry_s)")
                if _verbose:
                    logging.getLogger(LOGGER).error("tuner: the first storage error's traceback (--verbose):", exc_info=err)
            left = self.since + self.retry_s - now
            if left <= 0 and self.lost is None:
                reason = _reason(err)
                self.lost = (
                    f"storage {self.url} unreachable for {self.retry_s:g} s ({reason}); "
                    f"exiting {EXIT_STORAGE_LOST} so that the launcher starts this worker again (heartbeat.retry_s)"
                )
            return left

    def _back(self) -> None:
        with self._lock:
            if self.since is not None:
                self._say(f"tuner: storage {self.url} is back after {time.monotonic() - self.since:.1f} s; going on")
                self.since = None


T = TypeVar("T")


def waits_out_outages(cls: type[T]) -> type[T]:
    """Class decorator: the storage's calls (``CALLS``) go through the instance's ``_outage``
    (an ``Outage``; none set: called as they are)."""
    for name in CALLS:
        method = getattr(cls, name, None)
        if method is not None:
            wrapped = _through_outage(method)
            setattr(cls, name, _beat_quietly(wrapped) if name == "record_heartbeat" else wrapped)
    return cls


def _through_outage(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        outage = getattr(self, "_outage", None)
        if outage is None:
            return method(self, *args, **kwargs)
        return outage.call(method, self, *args, **kwargs)

    return call


def _beat_quietly(method: Callable[..., None]) -> Callable[..., None]:
    """Optuna's heartbeat thread dies with a traceback on any error: once the storage is lost (or
    its disk full), the beats stop quietly and the trial loop's next call ends the command."""

    @functools.wraps(method)
    def beat(self: Any, trial_id: int) -> None:
        try:
            method(self, trial_id)
        except Exception as err:
            if not isinstance(err, StorageLost) and not disk_full(err):
                raise

    return beat


def failure_line(err: BaseException) -> tuple[str, int] | None:
    """The one line, and the exit code, for a command ended by a storage error; None for any other error.

    A storage lost past ``retry_s`` exits ``EXIT_STORAGE_LOST``; a full disk names its file
    (what was stored is intact: SQLite wrote nothing half); any other storage error, one line.
    """
    chain = _chain(err)
    lost = next((e for e in chain if isinstance(e, StorageLost)), None)
    if lost is not None:
        return str(lost), EXIT_STORAGE_LOST
    url = storage_of(err)
    if disk_full(err):
        named = next((e.filename for e in chain if isinstance(e, OSError) and e.filename), None)
        where = named or (url.removeprefix("sqlite:///").split("?", 1)[0] if url and url.startswith("sqlite:///") else url)
        line = f"no space left on the disk holding {where}: nothing more could be stored; the trials stored so far are intact. "
        return line + "Free some space, then run the same command to resume", 1
    failed = next((e for e in chain if _storage_error(e)), None)
    if failed is None:
        return None
    if _verbose:
        traceback.print_exception(failed, file=sys.stderr)
    where = f"storage {url}" if url else "the study's storage"
    return f"{where} failed: {type(failed).__name__}: {redact(first_line(failed))[:200]}", 1


def _storage_error(err: BaseException) -> bool:
    return isinstance(err, (sqlalchemy.exc.SQLAlchemyError, sqlite3.Error)) or type(err).__module__.startswith("grpc")
