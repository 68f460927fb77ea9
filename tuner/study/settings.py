"""The sections of an experiment file as typed settings: each field's default and what it allows.

tuner/study/experiment.py reads a file into these (strictly, unknown keys refused); the
``check``/``allowed`` metadata of a field is what its one-line error says is allowed.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any

from tuner.train.clocks import CLOCKS
from tuner.train.time_to_target import StopRule

SAMPLERS = ("tpe", "random", "gp", "qmc")
PRUNERS = ("equal_time", "median", "percentile", "successive_halving", "hyperband", "wilcoxon", "none")
STORAGE_SCHEMES = ("sqlite", "postgresql", "mysql")
MINIMIZE = ("time", "cost", "energy")  # what the study minimizes on the way to the target
CONFIRM_RULES = ("all", "majority")


def _check(fn: typing.Callable[[Any], bool], allowed: str) -> dict[str, Any]:
    return {"check": fn, "allowed": allowed}


@dataclass(frozen=True)
class Objective:
    """What counts as reaching the goal, how often to look, and how long a trial may take."""

    target: float = field(default=0.9, metadata=_check(lambda v: 0 < v <= 1, "a number in (0, 1]"))
    eval_every_samples: int = field(default=2000, metadata=_check(lambda v: v > 0, "an integer > 0"))
    cap_s: float = field(default=20.0, metadata=_check(lambda v: v > 0, "a number of seconds > 0"))
    clock: str = field(default="robust", metadata=_check(lambda v: v in CLOCKS, "one of " + ", ".join(CLOCKS)))
    max_samples: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0"))
    minimize: str = field(default="time", metadata=_check(lambda v: v in MINIMIZE, "one of " + ", ".join(MINIMIZE)))

    def stop_rule(self) -> StopRule:
        """When a trial of this objective stops, for the training layer (tuner/train/)."""
        return StopRule(self.target, self.eval_every_samples, self.cap_s, self.clock, self.max_samples)


@dataclass(frozen=True)
class Sampler:
    """Which Optuna sampler proposes configurations."""

    name: str = field(default="tpe", metadata=_check(lambda v: v in SAMPLERS, "one of " + ", ".join(SAMPLERS)))
    n_startup_trials: int = field(default=8, metadata=_check(lambda v: v >= 0, "an integer >= 0"))


@dataclass(frozen=True)
class Budget:
    """When a study stops: a total number of finished trials, or wall time for this run."""

    n_trials: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0"))
    timeout_s: float | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "a number of seconds > 0"))


@dataclass(frozen=True)
class Trainer:
    """How trials use the machine."""

    device: str = field(default="auto", metadata=_check(lambda v: v in ("auto", "cpu") or v.startswith("cuda"), "auto, cpu, cuda or cuda:N"))
    threads: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0 (default: 1)"))


@dataclass(frozen=True)
class Pruning:
    """How trials stop early: a pruner by name (tuner/study/pruners/), and capping at the incumbent.

    Time is on the objective's clock. ``percentile`` keeps the best that many percent at
    each time (Optuna's meaning; 50 is the median). ``cap_slack: null`` turns capping off.
    """

    name: str = field(default="equal_time", metadata=_check(lambda v: v in PRUNERS, "one of " + ", ".join(PRUNERS)))
    percentile: float = field(default=50.0, metadata=_check(lambda v: 0 < v < 100, "a number between 0 and 100 exclusive"))
    warmup_s: float | None = field(default=None, metadata=_check(lambda v: v is None or v >= 0, "a number of seconds >= 0, or null (a tenth of objective.cap_s)"))
    min_trials: int = field(default=5, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    cap_slack: float | None = field(default=1.2, metadata=_check(lambda v: v is None or v >= 1, "a number >= 1, or null (no capping)"))
    bucket_s: float | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "a number of seconds > 0, or null (objective.cap_s / 20)"))

    def warmup_for(self, cap_s: float) -> float:
        """No pruning before this time: early curves say little, schedules warm up."""
        return self.warmup_s if self.warmup_s is not None else cap_s / 10

    def bucket_for(self, cap_s: float) -> float:
        """The width of one step for Optuna's pruners; each report is a storage write."""
        return self.bucket_s if self.bucket_s is not None else cap_s / 20


@dataclass(frozen=True)
class Confirm:
    """Re-running the top-k configurations on fresh seeds (tuner/study/confirmation.py).

    ``after_search`` runs it at the end of `tuner run`; with a time budget it keeps
    ``budget_share`` of it for confirmation. `tuner confirm` runs it on demand.
    """

    top_k: int = field(default=3, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    seeds: int = field(default=3, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    after_search: bool = True
    budget_share: float = field(default=0.25, metadata=_check(lambda v: 0 <= v < 1, "a number in [0, 1)"))
    # How many confirmation seeds must reach the target for a configuration to win.
    require: str = field(default="all", metadata=_check(lambda v: v in CONFIRM_RULES, "one of " + ", ".join(CONFIRM_RULES)))


@dataclass(frozen=True)
class Race:
    """Racing on seeds (tuner/study/racing.py): a trial within ``margin`` x the incumbent is
    re-run on ``seeds`` more seeds at once. ``race: null`` turns it off."""

    margin: float = field(default=1.25, metadata=_check(lambda v: v >= 1, "a number >= 1"))
    seeds: int = field(default=2, metadata=_check(lambda v: v >= 1, "an integer >= 1"))


@dataclass(frozen=True)
class Heartbeat:
    """Crash safety: a trial whose worker is silent for ``grace_s`` is failed and re-run.

    ``interval_s: null`` turns heartbeats off. ``max_retry`` re-runs of a dead worker's
    trial with the same parameters (tuner/study/storage.py).
    """

    interval_s: int | None = field(default=10, metadata=_check(lambda v: v is None or v > 0, "a whole number of seconds > 0, or null (off)"))
    grace_s: int = field(default=60, metadata=_check(lambda v: v > 0, "a whole number of seconds > 0 (more than interval_s)"))
    max_retry: int = field(default=1, metadata=_check(lambda v: v >= 0, "an integer >= 0"))
