"""Which storage errors are an outage, and the one line a command ends with on a storage error.

A storage that cannot be reached (a refused or dropped connection, a database shutting down or
starting up, a proxy that is not there) is waited out (tuner/study/storage/outage.py); a full
disk, a refused statement, or a proxy that answers with an error are not. Whatever ends a
command, it prints one line (tuner/cli/__init__.py): never a library's traceback; with
``--verbose`` the first one's as well.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import sys
import traceback

import sqlalchemy.exc

from tuner.errors import first_line
from tuner.redact import redact

EXIT_STORAGE_LOST = 75  # EX_TEMPFAIL (sysexits.h): a temporary failure, run the same command again
LOGGER = "tuner.study.storage.outage"  # the first outage's traceback, with --verbose only
OPTUNA_RDB_LOGGER = "optuna.storages._rdb.storage"
GRPC_LOST_WORDS = ("Stream removed", "RST_STREAM", "Socket closed", "Connection reset", "GOAWAY")
SQLITE_PASSING = ("database is locked", "unable to open database file")

_verbose = False


def verbose() -> bool:
    """Whether the command runs with ``--verbose``: the first storage error's traceback is shown."""
    return _verbose


class StorageLost(Exception):
    """The storage stayed unreachable past ``retry_s``: the command exits ``EXIT_STORAGE_LOST``."""


class _DropFallbackNotice(logging.Filter):
    """Optuna's RDBStorage logs a failed read (``Caught an error from sqlalchemy: ...``, the whole
    statement) before it tries a slower query; in an outage that one fails too and is waited out."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Caught an error from sqlalchemy")


def quiet_storage_logs(verbose: bool) -> None:
    """No library's pages on a storage error; with ``--verbose`` the first one's traceback (tuner/cli/__init__.py)."""
    global _verbose
    _verbose = verbose
    rdb = logging.getLogger(OPTUNA_RDB_LOGGER)
    if not any(isinstance(f, _DropFallbackNotice) for f in rdb.filters):
        rdb.addFilter(_DropFallbackNotice())


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
        if callable(code) and type(e).__module__.startswith("grpc") and _connection_lost(code().name, e.details() or ""):
            return True  # the proxy is down, restarting, or waiting out its own database past its limit
    return False


def _connection_lost(code: str, details: str) -> bool:
    """gRPC's word for a proxy that is not there (UNAVAILABLE), or for a call it was answering when it
    was killed: gRPC's status then depends on where the stream broke, its words say that it broke."""
    return code == "UNAVAILABLE" or (code in ("UNKNOWN", "INTERNAL", "CANCELLED") and any(w in details for w in GRPC_LOST_WORDS))


def storage_of(err: BaseException) -> str | None:
    """The storage URL a failed storage call was made to (set by ``Outage.call``), if any."""
    return next((e.tuner_storage for e in _chain(err) if hasattr(e, "tuner_storage")), None)


def reason(err: BaseException) -> str:
    """The driver's own words (the end of Optuna's or SQLAlchemy's chain), short, passwords masked."""
    root = _chain(err)[-1]
    if callable(getattr(root, "code", None)) and callable(getattr(root, "details", None)):  # gRPC's status and its words
        return redact(f"{root.code().name}: {first_line(root.details() or '')}")[:160]
    return redact(f"{type(root).__name__}: {first_line(root)}")[:160]


def failure_line(err: BaseException) -> tuple[str, int] | None:
    """The one line, and the exit code, for a command ended by a storage error; None for any other error.

    A storage lost past ``retry_s`` exits ``EXIT_STORAGE_LOST``; a signal that ended an outage's
    wait, 130 or 143; a full disk names its file
    (what was stored is intact: SQLite wrote nothing half); any other storage error, one line.
    """
    chain = _chain(err)
    lost = next((e for e in chain if isinstance(e, StorageLost)), None)
    if lost is not None:
        return str(lost), EXIT_STORAGE_LOST
    stopped = next((e for e in chain if isinstance(e, KeyboardInterrupt)), None)
    if stopped is not None:  # a signal ended an outage's wait under Optuna, which then failed on its own
        return f"{stopped or 'interrupted'}; run the same command to resume", getattr(stopped, "exit_code", 130)
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
    return f"{where} failed: {reason(failed)}", 1


def _storage_error(err: BaseException) -> bool:
    return isinstance(err, (sqlalchemy.exc.SQLAlchemyError, sqlite3.Error)) or type(err).__module__.startswith("grpc")
