"""Learning-rate schedules as a factor of the base rate, indexed by training samples seen.

The schedules themselves are declared in tuner/train/schedule_registry.py.
"""

from __future__ import annotations

from tuner.train.schedule_registry import SCHEDULE_KINDS, Schedule
from tuner.train.trial_config import TrialConfig

__all__ = ["Schedule", "decays_to_zero", "lr_factor"]


def lr_factor(config: TrialConfig) -> Schedule:
    """Factor in [0, 1] by samples seen. Decaying schedules reach 0 at the horizon.

    Only the dimensions the schedule's entry names are read (a constant rate reads neither the
    horizon nor the warm-up): an own loop's recorded reads (tuner/train/config_reads.py) then
    name only what its schedule applies.
    """
    kind = SCHEDULE_KINDS.get(config.schedule)
    if kind is None:
        raise ValueError(f"unknown schedule {config.schedule}")
    return kind.factor(**{name: getattr(config, name) for name in kind.reads})


def decays_to_zero(config: TrialConfig) -> bool:
    """True when training past the horizon cannot change the model."""
    return SCHEDULE_KINDS[config.schedule].decays
