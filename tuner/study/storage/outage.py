"""A storage that goes away for a moment is waited out: a database restarted, failed over or
rescheduled, a storage proxy killed and started again.

Every call a worker makes to its storage (Optuna's ``BaseStorage`` methods, and tuner's own on
a ``BudgetedStorage`` or a proxy's client) goes through ``Outage.call``: a call that fails
because the storage cannot be reached is tried again, with backoff, for up to
``heartbeat.retry_s`` from the first failure; the worker prints one line when the outage
starts and one when it ends, and its running trial goes on (its result is written once the
storage is back). Which errors count as an outage: tuner/study/storage/storage_errors.py. Past
the limit the storage is *lost*: every call raises ``StorageLost`` at once, and the command
exits ``EXIT_STORAGE_LOST`` with one line naming the storage (the password masked), a code the
launchers (deploy/) start the worker again on.

The retry sits under Optuna, in the storage, on purpose: Optuna's trial loop cannot survive a
failed write (a failed commit while it records a trial's state ends in its own
``UnboundLocalError``), so an outage must never reach it while the limit lasts.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tuner import signals
from tuner.redact import redact
from tuner.study.storage.storage_errors import EXIT_STORAGE_LOST, LOGGER, StorageLost, disk_full, reason, unreachable, verbose

FIRST_WAIT_S = 0.25
MAX_WAIT_S = 5.0  # once the storage is back, calls resume within this long

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
    "study_of_trial",
)


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
        self._inside.active, self._inside.retried = True, False
        try:
            return self._retried(fn, args, kwargs)
        finally:
            self._inside.active = False

    def retried(self) -> bool:
        """Whether this thread's last call was tried more than once: its first try may have been done."""
        return getattr(self._inside, "retried", False)

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
                self._wait(min(wait_s, left))
                wait_s = min(wait_s * 2, MAX_WAIT_S)
                self._inside.retried = True
                continue
            if self.since is not None:
                self._back()
            return result

    @staticmethod
    def _wait(seconds: float) -> None:
        """Sleep; on the main thread a SIGTERM or SIGINT that came meanwhile ends the wait (a pod
        deleted during an outage exits 143 within its grace period, its trial re-run later)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if threading.current_thread() is threading.main_thread():
                signals.raise_if_pending()
            time.sleep(min(left, 0.1))

    def _failed(self, err: Exception) -> float:
        """Note a failed call; returns the seconds left before the storage is lost."""
        with self._lock:
            now = time.monotonic()
            if self.since is None:
                self.since = now
                why = reason(err)
                self._say(f"tuner: storage {self.url} unreachable ({why}); waiting up to {self.retry_s:g} s for it (heartbeat.retry_s)")
                if verbose():
                    logging.getLogger(LOGGER).error("tuner: the first storage error's traceback (--verbose):", exc_info=err)
            left = self.since + self.retry_s - now
            if left <= 0 and self.lost is None:
                why = reason(err)
                self.lost = (
                    f"storage {self.url} unreachable for {self.retry_s:g} s ({why}); "
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
            if name == "record_heartbeat":
                wrapped = _beat_quietly(wrapped)
            elif name == "set_trial_state_values":
                wrapped = _done_once(wrapped, _finished_as_asked, True)
            elif name in ("set_trial_param", "_set_trial_param"):
                wrapped = _done_once(wrapped, _param_as_asked, None)
            setattr(cls, name, wrapped)
    return cls


def _through_outage(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        outage = getattr(self, "_outage", None)
        if outage is None:
            return method(self, *args, **kwargs)
        return outage.call(method, self, *args, **kwargs)

    return call


def _finished_as_asked(trial: Any, state: Any, values: Any = None) -> bool:
    return trial.state == state and (values is None or list(trial.values or []) == list(values))


def _param_as_asked(trial: Any, param_name: str, param_value_internal: float, distribution: Any) -> bool:
    shown = trial.params.get(param_name)
    return trial.distributions.get(param_name) == distribution and distribution.to_internal_repr(shown) == param_value_internal


def _done_once(method: Callable[..., Any], as_asked: Callable[..., bool], answer: Any) -> Callable[..., Any]:
    """A write whose answer was lost with the connection may have been done (a proxy killed, or a
    database restarted, after the commit): tried again it is refused (a trial already finished, a
    parameter already set); when the trial shows the write as asked, it was this call's, done once."""

    @functools.wraps(method)
    def write(self: Any, trial_id: int, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, trial_id, *args, **kwargs)
        except Exception:
            outage = getattr(self, "_outage", None)
            if outage is None or not outage.retried() or not as_asked(self.get_trial(trial_id), *args, **kwargs):
                raise
            return answer

    return write


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
