"""Every objective a study can minimize, declared once: its name, unit, words and what measuring it needs.

``OBJECTIVE_KINDS`` is the one list of names: ``objective.minimize`` accepts them when the
experiment file is loaded (tuner/study/experiment/settings.py: one valued on the way to the target
alone, any two or more in a list), every view prints a value in its ``unit`` and names it with
``to_target`` (tuner/study/scoring/units.py), the baseline's and the nightly report's sentences say
better and worse in its ``words`` (tuner/study/reruns/baseline.py, tuner/nightly/regression.py), and
the documentation's table of objectives is written from it (tuner/docs_reference.py). How a trial's
value is had is the entry of the same name in tuner/study/scoring/objectives.py, which sits above the
experiment's settings; a test holds the two lists to the same names. Adding an objective is an entry
here and one there; a figure trials do not record yet also needs a field of ``TrialResult``
(tuner/train/result.py) and the tuner/train/ module that measures it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectiveKind:
    """One objective as the experiment file and every view read it: its unit, words, and where it can be minimized."""

    name: str
    summary: str  # a trial's value, in a few words (the documentation's table)
    unit: str | None  # None: the experiment's currency, device hours without a price (cost:)
    words: tuple[str, str]  # how better and worse read: "faster", "slower"
    # Valued on the way to the target: it may be minimized alone. False: only beside one that is, in a list.
    to_target: bool = True
    measurable: str = "everywhere"  # where it can be measured, in words (the documentation's table)


OBJECTIVE_KINDS: dict[str, ObjectiveKind] = {
    kind.name: kind
    for kind in (
        ObjectiveKind(
            "time", "seconds to the target on the objective's clock; a miss scores `cap_s x (1 + gap)`", "s", ("faster", "slower")
        ),
        ObjectiveKind(
            "cost",
            "time's seconds x the trial's devices x `cost.per_device_hour`; device hours without a price",
            None,
            ("cheaper", "dearer"),
        ),
        ObjectiveKind(
            "energy",
            "joules over the timed region to the target; a miss: its rate x time's censored seconds",
            "J",
            ("more frugal", "more energy-hungry"),
            measurable="a readable NVML (GPU) or RAPL (CPU) counter",
        ),
        ObjectiveKind(
            "peak_memory",
            "the trial's peak device memory",
            "MiB",
            ("leaner", "hungrier for memory"),
            to_target=False,
            measurable="a GPU only: a CPU knows only the process's peak resident size",
        ),
        ObjectiveKind(
            "model_size",
            "bytes of the model's weights (parameters and buffers) at the trial's width and task hyperparameters",
            "B",
            ("smaller", "larger"),
            to_target=False,
            measurable="a task that builds its model; not a training function of one's own",
        ),
    )
}
TIME = OBJECTIVE_KINDS["time"]  # what a study minimized before the choice existed
ALONE = tuple(name for name, kind in OBJECTIVE_KINDS.items() if kind.to_target)  # what objective.minimize takes as one name


def to_target(name: str) -> bool:
    """Whether the objective is valued on the way to the target (a name of no objective is not)."""
    kind = OBJECTIVE_KINDS.get(name)
    return kind is not None and kind.to_target


def words(name: str) -> tuple[str, str]:
    """How better and worse read for what a study minimizes: ``("cheaper", "dearer")`` (time's for a name of none)."""
    return OBJECTIVE_KINDS.get(name, TIME).words
