"""Which ``config`` attributes a training function of one's own reads: the dimensions that reach its loop.

A training function is handed the trial's TrialConfig (tuner/train/session.py), but its
loop uses only some of it: a loop that builds its own optimizer never reads
``config.warmup_frac``. The function is given a ``ReadRecorder`` instead: the same
configuration (a TrialConfig subclass, equal field by field, frozen, ``dataclasses.replace``
works), which adds the name of each field read to a set. A method that reads every field
(``as_dict``, ``short``) marks them all read, as it should. The study keeps the set
(tuner/study/config_reads.py): it says which searched dimensions the loop ignores, and what
records and exports need to hold.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tuner.train.trial_config import TrialConfig

FIELDS = frozenset(f.name for f in dataclasses.fields(TrialConfig))
_READS = "_config_reads"  # where a view keeps its set, outside the dataclass's fields


class ReadRecorder(TrialConfig):
    """A TrialConfig that records the name of every field read from it (see the module's docstring)."""

    def __getattribute__(self, name: str) -> Any:
        if name in FIELDS:
            reads = object.__getattribute__(self, "__dict__").get(_READS)  # none in a copy made by dataclasses.replace
            if reads is not None:
                reads.add(name)
        return object.__getattribute__(self, name)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (for a spawned DataLoader worker, say) as the plain configuration: reads there are not the loop's.
        return (_plain, ({f: object.__getattribute__(self, f) for f in FIELDS},))


def _plain(fields: dict[str, Any]) -> TrialConfig:
    return TrialConfig(**fields)


def recording(config: TrialConfig, reads: set[str]) -> TrialConfig:
    """``config`` as a view that adds each field read to ``reads`` (the set is shared, not copied)."""
    view = object.__new__(ReadRecorder)
    state = object.__getattribute__(view, "__dict__")
    state.update({f: getattr(config, f) for f in FIELDS})
    state[_READS] = reads
    return view
