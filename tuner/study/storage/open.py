"""A storage URL becomes an Optuna storage: checked before use, with heartbeats, created once.

Heartbeats are what make a crash cost one trial: every running trial's worker writes a
heartbeat every ``interval_s``; a trial whose heartbeat is older than ``grace_s`` is marked
FAIL by the next worker that starts a trial, and re-queued (``max_retry`` times) with the
same parameters. On the machine where it ran, a trial whose process is gone is failed at
once, without waiting for the grace period (tuner/study/storage/owner.py). Optuna supports
this on its RDB storages (SQLite, PostgreSQL, MySQL) only, and through `tuner storage-proxy`
(``grpc://HOST:PORT``, tuner/study/storage/proxy.py).
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import sqlite3
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import optuna
import sqlalchemy
import sqlalchemy.exc
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial

from tuner.errors import ConfigError, first_line
from tuner.study.record import retry_attrs
from tuner.study.storage.budget import WORKER_CONNECTIONS, BudgetedStorage
from tuner.study.storage.proxy import ProxyStorage, is_proxy, reader

if TYPE_CHECKING:
    from tuner.study.experiment.load import Heartbeat

# A storage that cannot be opened (no driver, no server, no folder) is bad input, not a crash.
STORAGE_ERRORS = (ImportError, sqlalchemy.exc.SQLAlchemyError, sqlite3.Error, OSError)
CONNECT_TIMEOUT_S = 5

StaleListener = Callable[[optuna.Study, FrozenTrial], None]


def storage_error(source: str, url: str, err: BaseException) -> ConfigError:
    """The one-line error for a storage that cannot be used (the password is masked)."""
    first = first_line(err, type(err).__name__)
    return ConfigError(source, "storage", "a database this machine can open", f"{url} ({first})")


def sqlite_path(url: str) -> Path | None:
    """The file behind a ``sqlite:///`` URL; None for other databases and in-memory SQLite."""
    if not url.startswith("sqlite:///"):
        return None
    path = url.removeprefix("sqlite:///").split("?", 1)[0]
    return None if path in ("", ":memory:") else Path(path)


def check_storage(url: str, source: str) -> None:
    """Reach the database without writing anything to it; raises ConfigError when it cannot."""
    try:
        probe_database(url)
    except STORAGE_ERRORS as err:
        raise storage_error(source, url, err) from None


def probe_database(url: str) -> None:
    """Connect and read once; raises the driver's own error (one of STORAGE_ERRORS)."""
    path = sqlite_path(url)
    if is_proxy(url):
        ProxyStorage(url).close()  # reachable, and tuner's own proxy
    elif path is not None:
        _check_sqlite(path)
    elif not url.startswith("sqlite"):
        engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
        try:
            with engine.connect() as connection:
                connection.execute(sqlalchemy.text("SELECT 1"))
        finally:
            engine.dispose()


def _check_sqlite(path: Path) -> None:
    if not path.exists():
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise FileNotFoundError(f"folder {folder} does not exist")
        return  # SQLite creates the file on first use; the folder is all it needs
    # Read-only, so that a file that is not a database is refused without being touched.
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=CONNECT_TIMEOUT_S)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        connection.close()


class StaleTrialHandler:
    """Called by Optuna for each trial whose worker died (now FAIL): its process gone, or its heartbeats stopped.

    Re-queues the trial with the same parameters (``max_retry`` times in all), then tells
    the listeners, so that tracking can close the dead trial's run.
    """

    def __init__(self, max_retry: int, listeners: list[StaleListener] | None = None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self.retry = RetryHeartbeatStaleTrialCallback(max_retry=max_retry)
        self.listeners = list(listeners or [])

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        # Optuna copies the user attributes to the re-run; ``retry_of`` there is the one mark
        # a live trial can read (Optuna 5's Trial has no system_attrs).
        queued = copy.copy(trial)
        queued.user_attrs = retry_attrs(trial, trial.system_attrs.get("failed_trial", trial.number))
        self.retry(study, queued)
        for listener in self.listeners:
            listener(study, trial)


@contextlib.contextmanager
def first_use_lock(url: str) -> Iterator[None]:
    """Serialise table creation across processes that open one fresh SQLite file at once.

    They would race (``table ... already exists``, ``UNIQUE constraint failed:
    alembic_version``). A flock on the database file itself (SQLite creates the file the
    same way and uses other locks) lets the first create the tables and the others find
    them. Server databases get a retry instead (see ``open_storage``).
    """
    path = sqlite_path(url)
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def optuna_storage(url: str, source: str) -> str | optuna.storages.BaseStorage:
    """What Optuna's functions take for ``url``, to read a study: the URL itself, or a client of a
    storage proxy (any Optuna gRPC proxy serves reads); an unreachable proxy is a ConfigError."""
    if not is_proxy(url):
        return url
    try:
        return reader(url)
    except STORAGE_ERRORS as err:
        raise storage_error(source, url, err) from None


def open_storage(
    url: str,
    heartbeat: Heartbeat | None,
    source: str,
    on_stale: StaleListener | None = None,
    connections: int = WORKER_CONNECTIONS,
    records_owner: bool = True,
) -> optuna.storages.BaseStorage:
    """The Optuna storage for ``url``, tables created if needed; failures are ConfigErrors.

    With ``heartbeat.interval_s`` set, trials send heartbeats and a dead worker's trial is
    failed and re-queued (see the module docstring); a storage that cannot be reached is
    waited out for ``heartbeat.retry_s``. A server database gets a pool of ``connections``.
    ``records_owner``: trials started through it belong to this process (False for a storage proxy).
    """
    listeners = [on_stale] if on_stale else []
    retry_s = heartbeat.retry_s if heartbeat is not None else None  # an outage waited out (tuner/study/storage/outage.py)
    if is_proxy(url):
        # The proxy made the tables; its experiment's heartbeat applies to every worker, this one's re-runs.
        try:
            return ProxyStorage(url, on_stale=StaleTrialHandler(heartbeat.max_retry if heartbeat else 0, listeners), retry_s=retry_s)
        except STORAGE_ERRORS as err:
            raise storage_error(source, url, err) from None
    kwargs = {}
    if heartbeat is not None and heartbeat.interval_s is not None:
        kwargs = {
            "heartbeat_interval": heartbeat.interval_s,
            "grace_period": heartbeat.grace_s,
            "heartbeat_stale_trial_callback": StaleTrialHandler(heartbeat.max_retry, listeners),
        }
    for attempt in range(3):
        try:
            with first_use_lock(url), warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeat_interval
                # RDBStorage that keeps the trial budget across workers (tuner/study/storage/budget.py).
                return BudgetedStorage(url, connections=connections, retry_s=retry_s, records_owner=records_owner, **kwargs)
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError, sqlalchemy.exc.ProgrammingError) as err:
            # A server database has no first-use lock: a worker that lost the race (PostgreSQL says
            # `relation "studies" already exists`, a ProgrammingError) finds the tables on retry.
            if attempt == 2 or sqlite_path(url) is not None:
                raise storage_error(source, url, err) from None
        except STORAGE_ERRORS as err:
            raise storage_error(source, url, err) from None
    raise AssertionError("unreachable")
