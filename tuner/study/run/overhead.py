"""Where a worker's study loop spends its time besides training: the storage's calls and the sampler's.

``Overhead.watch`` wraps the public methods of one object (the study's storage, its
sampler) so that each call the study loop makes is timed into a named share. Time is counted
once, in the innermost share: the storage reads a sampler makes count as storage, not
sampler. Calls from other threads (Optuna's heartbeat, the MLflow writer) overlap the trials
and are not counted. `tuner worker` prints the shares when it ends, so that whoever runs many
workers sees whether the storage (docs/scaling.md) or the sampler holds them back.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.train.result import TrialResult


class Overhead:
    """Seconds and calls per share on the creating thread, counted exclusively (see the module's docstring)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._thread = threading.get_ident()
        self._open: list[list] = []  # per open call: its share, and the time its nested watched calls took

    def watch(self, obj: Any, share: str, methods: Iterable[str]) -> None:
        """Count every call of ``obj``'s ``methods`` (those it has) in ``share``."""
        for name in methods:
            method = getattr(obj, name, None)
            if callable(method):
                setattr(obj, name, self._timed(method, share))

    def _timed(self, method: Callable[..., Any], share: str) -> Callable[..., Any]:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self._thread:
                return method(*args, **kwargs)
            # A call within a call of the same share (Optuna's cache calling the database) is one call.
            outer = self._open[-1][0] if self._open else None
            self._open.append([share, 0.0])
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                took = time.perf_counter() - started
                nested = self._open.pop()[1]
                if self._open:
                    self._open[-1][1] += took
                self.seconds[share] = self.seconds.get(share, 0.0) + took - nested
                if outer != share:
                    self.calls[share] = self.calls.get(share, 0) + 1

        return timed

    def line(self, trials: int) -> str:
        """Each share's seconds, per trial and in all."""
        per = max(1, trials)
        shares = [f"{share} {s / per * 1000:.1f} ms/trial ({s:.2f} s, {self.calls[share]} calls)" for share, s in self.seconds.items()]
        return "; ".join(shares) or "no storage or sampler calls"


# What the study loop calls: Optuna's storage interface, and the stale-trial check it runs before each trial.
# tuner's storages add a write of several attributes at once (tuner/study/record.py: write_attrs).
STORAGE_METHODS = (*(m for m in dir(optuna.storages.BaseStorage) if not m.startswith("_")), "_get_stale_trial_ids", "set_trial_user_attrs")
SAMPLER_METHODS = ("infer_relative_search_space", "sample_relative", "sample_independent", "before_trial", "after_trial")


class WatchOverhead(StudyHooks):
    """Times the study's storage and sampler calls (set last: the sampler is the one other hooks chose) and counts the trials run."""

    def __init__(self) -> None:
        self.overhead = Overhead()
        self.trials = 0

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        self.overhead.watch(study._storage, "storage", STORAGE_METHODS)
        if hasattr(study._storage, "_backend"):  # Optuna's cache in front of a database, which some writes go to directly
            self.overhead.watch(study._storage._backend, "storage", STORAGE_METHODS)
        self.overhead.watch(study.sampler, "sampler", SAMPLER_METHODS)

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        self.trials += 1

    def line(self) -> str:
        return f"{self.trials} trials here; {self.overhead.line(self.trials)}"
