"""How a trial ended, and everything recorded about it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from tuner.train.clocks import CLOCK_FIELDS, robust_seconds
from tuner.train.target import Target, as_target


class Outcome(str, Enum):
    """The one recorded way a trial ended."""

    REACHED = "reached"  # first evaluation at or past the target, in its direction
    CAPPED = "capped"  # passed the incumbent's time: it can no longer win
    PRUNED = "pruned"  # behind the other trials at the same elapsed time
    DIVERGED = "diverged"  # non-finite or exploding loss
    TIMEOUT = "timeout"  # per-trial cap, sample limit or schedule horizon without the target
    OOM = "oom"  # out of memory
    FAILED = "failed"  # an exception in the task or the trainer
    INTERRUPTED = "interrupted"  # stopped from outside: Ctrl-C, a signal, the study's deadline
    SCREENED = "screened"  # its first steps' throughput could not beat the incumbent (tuner/train/screen.py)


@dataclass(frozen=True)
class Evaluation:
    """One look at the held-out split."""

    samples: int
    steps: int
    metric: float
    loss: float | None
    train_loss: float | None
    train_s: float
    wall_s: float
    robust_s: float
    cpu_s: float | None = None  # the cpu clock (tuner/train/clocks.py); None where an evaluation was made up


@dataclass
class TrialResult:
    """Everything a trial records (docs/objective.md). ``*_to_target`` are None unless reached."""

    outcome: Outcome
    reason: str
    # What the trial aimed at: the value of a held-out metric to reach, and its direction
    # (tuner/train/target.py). A bare number is an accuracy to reach, as ``TimeToTarget`` takes it.
    goal: Target
    setup_s: float = 0.0
    train_s: float = 0.0
    wall_s: float = 0.0
    samples: int = 0
    steps: int = 0
    samples_to_target: int | None = None
    steps_to_target: int | None = None
    train_s_to_target: float | None = None
    wall_s_to_target: float | None = None
    robust_s_to_target: float | None = None
    cpu_s_to_target: float | None = None
    median_step_s: float | None = None
    median_step_cpu_s: float | None = None  # the training thread's CPU seconds per step (median over intervals)
    cpu_train_s: float = 0.0  # the training thread's CPU seconds while the train clock ran
    throughput: float | None = None  # samples per second, from the median step time
    best_metric: float | None = None
    final_metric: float | None = None
    peak_memory_mb: float | None = None
    model_bytes: int | None = None  # the model's weights (parameters and buffers); set by a study that minimizes model_size
    energy_j: float | None = None  # measured over the timed region (tuner/train/energy.py); None: no counter
    energy_j_to_target: float | None = None
    energy_source: str | None = None
    # The host's waits for the GPU per optimizer step between evaluations (tuner/train/syncs.py):
    # 0 when the steps never read back from the device; None on a CPU or in an own loop.
    host_syncs_per_step: float | None = None
    # torch.compile's warm-up (tuner/train/levers.py): one-time setup, inside setup_s and the
    # wall clock, out of the train and robust clocks; the objective adds it when it charges setup.
    compile_s: float = 0.0
    bound_s: float | None = None  # a trial stopped at the incumbent: the time it was stopped against (incumbent x slack)
    # The throughput pre-screen (tuner/train/screen.py): the train clock when it decided (its
    # own time; its steps are training steps), and the time to target it projected.
    screen_s: float | None = None
    screen_projected_s: float | None = None
    screen_step_s: float | None = None  # the median of its timed steps (what a replay of the trial times the window at)
    shape_s_to_target: float | None = (
        None  # steps to target x the study's lowest median step time for the shape (tuner/study/scoring/shape_clock.py)
    )
    # Host time blocked waiting for the next batch over training time (a Dataset task; None for tensors).
    data_wait_share: float | None = None
    rank_samples: list[int] | None = None  # a data-parallel trial's samples per process (they sum to ``samples``)
    evaluations: list[Evaluation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.goal = as_target(self.goal)

    @property
    def reached(self) -> bool:
        return self.outcome is Outcome.REACHED

    def time_to_target(self, clock: str) -> float | None:
        """Seconds to the first crossing on the named clock (tuner/train/clocks.py)."""
        return getattr(self, CLOCK_FIELDS[clock] + "_to_target")

    def elapsed(self, clock: str) -> float:
        """Seconds on the named clock when the trial ended (tuner/train/clocks.py)."""
        if clock == "robust":  # not stored: computed from the steps and the median step time
            return robust_seconds(self.steps, self.median_step_s, self.train_s)
        if clock == "cpu":
            return robust_seconds(self.steps, self.median_step_cpu_s, self.cpu_train_s)
        return getattr(self, CLOCK_FIELDS[clock])

    def to_attrs(self) -> dict[str, Any]:
        """JSON-safe summary for Optuna user attributes (evaluations kept separately).

        The goal is stored as three flat keys, ``target`` (its value), ``metric`` and
        ``direction``, as every version stored it: studies and recorded tables read back alike.
        """
        out: dict[str, Any] = {}
        for k, v in dataclasses.asdict(self).items():
            if k == "goal":
                out["target"] = self.goal.value
            elif k != "evaluations":
                out[k] = v
        out.update(outcome=self.outcome.value, metric=self.goal.metric, direction=self.goal.direction)
        return out

    @classmethod
    def from_attrs(cls, attrs: dict[str, Any]) -> TrialResult:
        """The result ``to_attrs`` stored; one stored without a metric aimed at an accuracy."""
        names = {f.name for f in dataclasses.fields(cls)} - {"evaluations", "goal"}
        values = {k: v for k, v in attrs.items() if k in names}
        values["outcome"] = Outcome(values["outcome"])
        return cls(goal=Target.stored(attrs), **values)
