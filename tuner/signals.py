"""SIGINT and SIGTERM end the running trial as `interrupted`, and the command exits 130/143.

A signal raises ``Interrupted`` (a ``KeyboardInterrupt``, so the trainer's one path for
Ctrl-C handles both) only while a trial trains. Anywhere else (Optuna writing a trial,
tracking closing a run) it is held until the next safe point: the next trial's start, or
the callback after a trial, which stops the study. A second signal raises at once, so a
stuck process can still be stopped from the keyboard.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

import optuna
from optuna.trial import FrozenTrial

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The process was asked to stop by a signal; ``exit_code`` is the shell's 128 + number."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


_armed = False
_pending: int | None = None


def _handle(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _armed or _pending is not None:
        # Kept pending as well: a raise that lands in a weakref callback or __del__ (the
        # garbage collector runs them mid-training) is swallowed by Python, and the
        # trial's next evaluation (``raise_if_pending`` as a listener) raises it again.
        _pending = signum
        raise Interrupted(signum)
    _pending = signum


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Install the handlers for a command's lifetime (main thread only), then restore them."""
    global _pending
    previous = {s: signal.signal(s, _handle) for s in HANDLED}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _pending = None


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """The region where a signal raises at once: training, which holds nothing half-written."""
    global _armed
    raise_if_pending()
    _armed = True
    try:
        yield
    finally:
        _armed = False


def raise_if_pending(*_: object) -> None:
    """Raise the held signal, if one came while it was not safe to raise (or was swallowed).

    Takes and ignores any arguments, so it also serves as an evaluation listener.
    """
    global _pending
    if _pending is not None:
        signum, _pending = _pending, None
        raise Interrupted(signum)


def stop_on_signal(study: optuna.Study, trial: FrozenTrial) -> None:
    """Optuna callback: a signal held during a trial's bookkeeping stops the study here."""
    if _pending is not None:
        study.stop()


def exit_code(err: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return getattr(err, "exit_code", 130)
