"""What makes two objectives the same: the one owner of "these values can be compared".

A study's values are times (or costs, energies) to one target, on one clock, under one cap and
one evaluation cadence, for one task. ``ObjectiveIdentity`` holds those and nothing else, and
decides, for each use, what must match:

- resuming a study (``EVERY``): the stored objective and the experiment's, key for key, its
  clock as named (``objective.clock: auto`` is named before: tuner/study/run/auto_clock.py);
- replaying a recorded table (``REPLAYED``): the task, the target and the cadence the table was
  recorded under. Not the clock (a table holds every clock's times at each evaluation and the
  replay times the trial on whichever the study uses) and not the cap (a study's cap may be
  shorter than the recorded one; tuner/simulate/simulation.py checks that bound itself);
- comparing nights (``EVERY``): each night is its own study, so nothing refuses a changed target
  there; a night of another objective is simply no history.

A mismatch is refused in one line naming the experiment-file key that differs. The stored form
(``as_stored``) is what a study keeps in its attributes (tuner/study/study_record.py), written
the way earlier versions wrote it, so that their studies still resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.train.clocks import CLOCK_BEFORE_AUTO
from tuner.train.target import Target

# Every key of an objective's identity, in the order a refusal checks them (and the stored form lists them).
EVERY = ("task", "task_options", "metric", "direction", "target", "clock", "cap_s", "eval_every_samples", "minimize")
REPLAYED = ("task", "metric", "direction", "target", "eval_every_samples")
# What an objective stored before a key existed meant (values in other units, or one objective
# against several, cannot share a study; a study stored without its clock was timed on the default of the day).
# The target's own keys read as Target.stored reads them.
STORED_BEFORE = {"minimize": "time", "task_options": {}, "clock": CLOCK_BEFORE_AUTO}
TOP_LEVEL = ("task", "task_options")  # experiment-file keys outside ``objective:``


@dataclass(frozen=True)
class ObjectiveIdentity:
    """The task, the target (a metric, its direction and the value to reach), the clock (as
    resolved), the cap, the cadence and what is minimized: what makes two objectives' values comparable."""

    task: str
    goal: Target
    clock: str
    cap_s: float | str  # a number of seconds, or ``auto`` (resolved per study, after its baseline)
    eval_every_samples: int
    minimize: str | list[str] = field(default="time", hash=False)
    task_options: dict[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def of(cls, experiment: Experiment) -> ObjectiveIdentity:
        """The identity of an experiment's objective."""
        o = experiment.objective
        return cls(
            task=experiment.task,
            goal=o.goal,
            clock=o.clock,
            cap_s=o.cap_s,
            eval_every_samples=o.eval_every_samples,
            minimize=o.minimize,
            task_options=dict(experiment.task_options),
        )

    @classmethod
    def stored(cls, stored: dict[str, Any]) -> ObjectiveIdentity:
        """The identity of a stored objective (a study's, a table's): keys an earlier version did not
        write read as what it meant; keys a use does not compare may be missing (None)."""
        v = {key: stored.get(key, STORED_BEFORE.get(key)) for key in EVERY}
        return cls(
            task=v["task"],
            goal=Target.stored(stored),
            clock=v["clock"],
            cap_s=v["cap_s"],
            eval_every_samples=v["eval_every_samples"],
            minimize=v["minimize"],
            task_options=v["task_options"],
        )

    def value(self, key: str) -> Any:
        """The value of one key of ``EVERY``, as the experiment file writes it."""
        goal = {"metric": self.goal.metric, "direction": self.goal.direction, "target": self.goal.value}
        return goal[key] if key in goal else getattr(self, key)

    def as_stored(self) -> dict[str, Any]:
        """What a study stores as its objective: a target on another metric than an accuracy
        (maximized) names it; the default is left out, as studies stored it before metrics had names."""
        named = not self.goal.default_metric
        return {key: self.value(key) for key in EVERY if named or key not in ("metric", "direction")}

    def difference(self, other: ObjectiveIdentity, keys: tuple[str, ...] = EVERY) -> str | None:
        """The first of ``keys`` whose value differs between the two; None when they match."""
        return next((key for key in keys if self.value(key) != other.value(key)), None)

    def same_as(self, other: ObjectiveIdentity, keys: tuple[str, ...] = EVERY) -> bool:
        return self.difference(other, keys) is None

    def refuse_other(self, wanted: ObjectiveIdentity, source: str, where: str, keys: tuple[str, ...] = EVERY) -> None:
        """A one-line ConfigError when ``wanted`` (the experiment's) differs from this one (what is
        there already) in any of ``keys``: the key, this value ``where`` it is kept, and the one given."""
        key = self.difference(wanted, keys)
        if key is not None:
            raise ConfigError(source, key if key in TOP_LEVEL else f"objective.{key}", f"{self.value(key)!r}{where}", wanted.value(key))
