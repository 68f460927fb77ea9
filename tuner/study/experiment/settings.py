"""The sections of an experiment file as typed settings: each field's default and what it allows.

tuner/study/experiment/load.py reads a file into these (strictly, unknown keys refused); the
``check``/``allowed`` metadata of a field is what its one-line error says is allowed.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, field
from typing import Any

from tuner.errors import ConfigError
from tuner.train.clocks import CLOCK_CHOICES
from tuner.train.target import DIRECTIONS, Target, inferred_direction, is_fraction
from tuner.train.time_to_target import StopRule

SAMPLERS = ("tpe", "random", "gp", "qmc")
# grpc://HOST:PORT: a `tuner storage-proxy` in front of one of the others (tuner/study/storage/proxy.py).
STORAGE_SCHEMES = ("sqlite", "postgresql", "mysql", "grpc")
# The objectives and pruners are declared with their behaviour, above these settings
# (tuner/study/scoring/objectives.py, tuner/study/stopping/pruner_registry.py): the names a file
# gives are checked against them once the sections are read (tuner/study/run/experiment_file.py).
MINIMIZE_NAMED = "an objective's name, or a list of two or more"
PRUNER_NAMED = "a pruner's name"


CONFIRM_RULES = ("all", "majority")
SCREEN_SAMPLES = ("any_batch", "no_larger_batch")  # whose samples to target the pre-screen trusts
WEIGHTS = ("none", "best", "reached")  # which trials' trained weights go to their MLflow runs


# A study name becomes an MLflow experiment name, part of file names (reports/report-NAME.html)
# and a folder of lock files: one short path component, which no shell or URL needs to quote.
NAME_CHARACTERS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
NAME_MAX = 100  # an experiment's name (`name:`, or its file's name)
# A study name given by a flag may be longer: names made from an experiment's add a suffix
# (nightly studies -night-YYYYMMDD, a report's reproduce command -again) and come back by flag.
STUDY_NAME_MAX = 128


def name_allowed(limit: int = NAME_MAX) -> str:
    """What a study name may be, as its one-line error and the experiment-file reference say it."""
    return f"a study name of 1 to {limit} characters: letters, digits, '.', '_' or '-', starting with a letter or digit"


def check_name(name: str, source: str, key: str, limit: int = NAME_MAX) -> str:
    """The name, if it is a valid study name of at most ``limit`` characters; else a one-line ConfigError."""
    if len(name) <= limit and NAME_CHARACTERS.fullmatch(name):
        return name
    allowed = name_allowed(limit)
    # A huge name is echoed by its length and start: the line must stay readable.
    given = name if len(name) <= limit else f"{name[:40]}... ({len(name)} characters)"
    raise ConfigError(source, key, allowed, given)


def _check(fn: typing.Callable[[Any], bool], allowed: str) -> dict[str, Any]:
    return {"check": fn, "allowed": allowed}


# The cap is this many times the baseline's time to target: above the capping bound the
# baseline sets as the first incumbent (pruner.cap_slack, 1.2 by default), so that while
# capping is on it, not the cap, ends a slow trial; a configuration that needs twice the
# baseline's time cannot win, and a miss (scored from the cap, tuner/study/scoring/censoring.py)
# stays above every time that could.
CAP_MULTIPLE = 2.0
AUTO = "auto"  # objective.cap_s: a multiple of the baseline's time to target
# ``cap_s: auto`` before the baseline has a time, without a time budget to run it to: an hour.
AUTO_FALLBACK_S = 3600.0


def _valid_cap(v: Any) -> bool:
    return v == AUTO if isinstance(v, str) else v > 0


TARGET_ALLOWED = "a finite number; a number in (0, 1] for an accuracy"


def check_target(objective: Objective, source: str) -> None:
    """Refuse, in one line, a metric whose direction is neither given nor implied by its name,
    a direction its name contradicts (a loss maximized: every trial would "reach" at its first
    evaluation) unless ``check_direction`` is off, and an accuracy target outside (0, 1]: a
    fraction never reaches more than 1."""
    if objective.direction is None:
        allowed = "maximize or minimize: the direction of metric " + repr(objective.metric) + " cannot be told from its name"
        raise ConfigError(source, "objective.direction", allowed, None)
    implied = inferred_direction(objective.metric)
    if objective.check_direction and implied is not None and objective.direction != implied:
        allowed = f"{implied} for metric {objective.metric} (or objective.check_direction: false to keep {objective.direction})"
        raise ConfigError(source, "objective.direction", allowed, objective.direction)
    if is_fraction(objective.metric) and objective.direction == "maximize" and not 0 < objective.target <= 1:
        raise ConfigError(source, "objective.target", f"a number in (0, 1] for metric {objective.metric} (a fraction)", objective.target)


@dataclass(frozen=True)
class Objective:
    """What counts as reaching the goal, how often to look, and how long a trial may take.

    ``metric`` names the held-out figure the target is a value of (``accuracy``, ``loss``, a
    metric the task declares, whatever an own loop reports) and ``direction`` which way is
    better; without one the name implies it (``check_target`` refuses a name that does not, and
    a direction the name contradicts, unless ``check_direction`` is false).
    """

    target: float = field(default=0.9, metadata=_check(lambda v: True, TARGET_ALLOWED))
    eval_every_samples: int = field(default=2000, metadata=_check(lambda v: v > 0, "an integer > 0"))
    # A number of seconds, or ``auto``: CAP_MULTIPLE x the baseline's measured time to target
    # (tuner/study/run/auto_cap.py resolves it once the study's first trial, the baseline, has ended).
    cap_s: float | str = field(default=20.0, metadata=_check(_valid_cap, f"a number of seconds > 0, or {AUTO}"))
    # ``auto`` names one clock when the study is made, stored with it (tuner/study/run/auto_clock.py).
    clock: str = field(default=AUTO, metadata=_check(lambda v: v in CLOCK_CHOICES, "one of " + ", ".join(CLOCK_CHOICES)))
    max_samples: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0"))
    # One name, or a list of two or more: a multi-objective study with a Pareto front.
    minimize: str | list[str] = field(
        default="time",
        metadata=_check(lambda v: True, MINIMIZE_NAMED),
    )
    # Whether one-time setup that a configuration causes (torch.compile's warm-up) counts in
    # its time to target: it amortises over a job of hours, and decides a short one.
    charge_setup: bool = field(default=True, metadata=_check(lambda v: isinstance(v, bool), "true or false"))
    metric: str = field(default="accuracy", metadata=_check(lambda v: v.strip() != "", "a metric's name (accuracy, loss, ...)"))
    direction: str | None = field(default=None, metadata=_check(lambda v: v is None or v in DIRECTIONS, " or ".join(DIRECTIONS)))
    # A metric whose name implies a direction (tuner/train/target.py) is refused the other one;
    # false lets it through, for a metric that only sounds like a loss or an accuracy.
    check_direction: bool = field(default=True, metadata=_check(lambda v: isinstance(v, bool), "true or false"))

    def __post_init__(self) -> None:
        if self.direction is None:  # the name's own direction; check_target refuses a name without one
            object.__setattr__(self, "direction", inferred_direction(self.metric))

    @property
    def cap_auto(self) -> bool:
        """``cap_s: auto``: the cap is known once the baseline has run (tuner/study/run/auto_cap.py)."""
        return self.cap_s == AUTO

    @property
    def goal(self) -> Target:
        """The target with its metric and direction (tuner/train/target.py)."""
        return Target(self.target, self.metric, self.direction or "maximize")

    def stop_rule(self) -> StopRule:
        """When a trial of this objective stops, for the training layer (tuner/train/)."""
        cap_s = AUTO_FALLBACK_S if self.cap_auto else float(self.cap_s)  # auto outside a study: no baseline measured it
        return StopRule(
            target=self.goal,
            eval_every_samples=self.eval_every_samples,
            cap_s=cap_s,
            clock=self.clock,
            max_samples=self.max_samples,
            charge_setup=self.charge_setup,
        )

    @property
    def names(self) -> tuple[str, ...]:
        """What the study minimizes, one name per objective."""
        return (self.minimize,) if isinstance(self.minimize, str) else tuple(self.minimize)

    @property
    def several(self) -> bool:
        """Several objectives: a multi-objective study whose result is a Pareto front."""
        return len(self.names) > 1


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

    device: str = field(
        default="auto", metadata=_check(lambda v: v in ("auto", "cpu") or v.startswith("cuda"), "auto, cpu, cuda or cuda:N")
    )
    threads: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0 (default: 1)"))
    # Bound the batch dimension by what one forward pass can take (tuner/study/run/batch_ceiling.py).
    batch_ceiling: bool | None = field(
        default=None, metadata=_check(lambda v: v is None or isinstance(v, bool), "true, false or null (on with a GPU, off on a CPU)")
    )


@dataclass(frozen=True)
class Pruning:
    """How trials stop early: a pruner by name (tuner/study/stopping/), and capping at the incumbent.

    Time is on the objective's clock. ``percentile`` keeps the best that many percent at
    each time (Optuna's meaning; 50 is the median). ``cap_slack: null`` turns capping off.
    """

    name: str = field(default="auto", metadata=_check(lambda v: True, PRUNER_NAMED))
    percentile: float = field(default=50.0, metadata=_check(lambda v: 0 < v < 100, "a number between 0 and 100 exclusive"))
    warmup_s: float | None = field(
        default=None, metadata=_check(lambda v: v is None or v >= 0, "a number of seconds >= 0, or null (a tenth of objective.cap_s)")
    )
    min_trials: int = field(default=5, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    cap_slack: float | None = field(default=1.2, metadata=_check(lambda v: v is None or v >= 1, "a number >= 1, or null (no capping)"))
    bucket_s: float | None = field(
        default=None, metadata=_check(lambda v: v is None or v > 0, "a number of seconds > 0, or null (objective.cap_s / 20)")
    )

    def warmup_for(self, cap_s: float) -> float:
        """No pruning before this time: early curves say little, schedules warm up."""
        return self.warmup_s if self.warmup_s is not None else cap_s / 10

    def bucket_for(self, cap_s: float) -> float:
        """The width of one step for Optuna's pruners; each report is a storage write."""
        return self.bucket_s if self.bucket_s is not None else cap_s / 20


@dataclass(frozen=True)
class Confirm:
    """Re-running the top-k configurations on fresh seeds (tuner/study/reruns/confirmation.py).

    ``after_search`` runs it at the end of `tuner run`; with a time budget it keeps
    ``budget_share`` of it for confirmation (``keep_time: false`` keeps none: the runs happen only
    when the time the search leaves holds all of them). `tuner confirm` runs it on demand. With
    ``clear_margin``, a search whose fastest run is that many times faster (or slower) than
    the baseline's fastest is not confirmed, and the baseline is not run again.
    """

    top_k: int = field(default=3, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    seeds: int = field(default=3, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    after_search: bool = True
    budget_share: float = field(default=0.25, metadata=_check(lambda v: 0 <= v < 1, "a number in [0, 1)"))
    keep_time: bool = True
    # How many confirmation seeds must reach the target for a configuration to win.
    require: str = field(default="all", metadata=_check(lambda v: v in CONFIRM_RULES, "one of " + ", ".join(CONFIRM_RULES)))
    # Nothing is re-run once the search's fastest run and the baseline's fastest are this factor
    # apart, either way: a clear call needs no seeds to show it, a close one does. null: always re-run.
    clear_margin: float | None = field(
        default=None, metadata=_check(lambda v: v is None or v > 1, "a number > 1, or null (always confirm)")
    )


@dataclass(frozen=True)
class Race:
    """Racing on seeds (tuner/study/reruns/racing.py): a trial within ``margin`` x the incumbent is
    re-run on ``seeds`` more seeds at once. ``race: null`` turns it off."""

    margin: float = field(default=1.25, metadata=_check(lambda v: v >= 1, "a number >= 1"))
    seeds: int = field(default=2, metadata=_check(lambda v: v >= 1, "an integer >= 1"))


@dataclass(frozen=True)
class Screen:
    """The throughput pre-screen (tuner/study/stopping/screen.py): a trial's first steps are timed
    (after ``warmup_steps``, its next ``steps``), and one that cannot beat the incumbent x
    ``pruner.cap_slack`` even with the fewest samples any trial needed ends as ``screened``.
    It starts once ``min_reached`` configurations reached the target; ``samples_from``
    says which trials' samples count: any batch's, or only those at the trial's batch or
    below (samples to target grow with the batch). ``screen: null`` turns it off."""

    warmup_steps: int = field(default=2, metadata=_check(lambda v: v >= 0, "an integer >= 0"))
    steps: int = field(default=5, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    min_reached: int = field(default=2, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    samples_from: str = field(default="any_batch", metadata=_check(lambda v: v in SCREEN_SAMPLES, "one of " + ", ".join(SCREEN_SAMPLES)))


@dataclass(frozen=True)
class Heartbeat:
    """Crash safety: a trial whose worker is silent for ``grace_s`` is failed and re-run.

    ``interval_s: null`` turns heartbeats off. ``max_retry`` re-runs of a dead worker's
    trial with the same parameters (tuner/study/storage/open.py). A storage that cannot be
    reached (a database restarted, a proxy started again) is waited out for ``retry_s``;
    past that the worker exits 75 (tuner/study/storage/outage.py).
    """

    interval_s: int | None = field(
        default=10, metadata=_check(lambda v: v is None or v > 0, "a whole number of seconds > 0, or null (off)")
    )
    grace_s: int = field(default=60, metadata=_check(lambda v: v > 0, "a whole number of seconds > 0 (more than interval_s)"))
    max_retry: int = field(default=1, metadata=_check(lambda v: v >= 0, "an integer >= 0"))
    retry_s: float = field(default=300.0, metadata=_check(lambda v: v >= 0, "a number of seconds >= 0 (0: exit at the first outage)"))


@dataclass(frozen=True)
class Tracking:
    """What MLflow keeps beside each trial's figures (tuner/track/trial_runs.py).

    ``weights``: which reached trials log their trained weights (``model.pt``, the file
    `tuner train --save` writes) as an artifact of their child run: ``best`` (confirmation
    runs, and each search trial that was the study's best when it ended), ``reached`` (every
    trial that reached the target) or ``none``.
    """

    weights: str = field(default="best", metadata=_check(lambda v: v in WEIGHTS, "one of " + ", ".join(WEIGHTS)))
