"""What `tuner best` writes of a trial's configuration: the dimensions its choices use.

A trial's configuration holds every dimension, most at their defaults; exported whole, an
AdamW winner on a constant rate would fix Muon's momentum, a horizon and every DataLoader
setting, knobs it never turned. The export keeps:

- the task's own hyperparameters;
- every value that differs from its default (left out, it would resolve to the default, and
  `tuner train` would train another configuration);
- the dimensions the study searched that this configuration uses: not those its optimizer,
  schedule or levers leave unread (tuner/train/unused_dimensions.py), nor those a ``when:``
  clause of the study's space switched off, nor, for a training function of one's own,
  those its loop never read (tuner/study/config_reads.py).

What it leaves out is at its default, so ``TrialConfig.from_params`` of the export is the
trial's configuration; the dimensions of the study's space left out are named in a comment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.study.study_record import StudyAttrs, config_reads, study_experiment
from tuner.train.trial_config import DIMENSIONS, TrialConfig
from tuner.train.unused_dimensions import unused_dimensions

DEFAULTS = TrialConfig().as_params()


@dataclass(frozen=True)
class Exported:
    """The parameters a fixed search space holds, and the study's dimensions left out of it."""

    params: dict[str, Any]
    left_out: list[str]

    def note(self) -> str | None:
        """One comment line naming what was left out; None when nothing was."""
        if not self.left_out:
            return None
        return f"left out, as this configuration does not use them (each at its default): {', '.join(self.left_out)}"


def exported_params(study: StudyAttrs, config: TrialConfig) -> Exported:
    """``config`` as the search space `tuner best` writes (see the module's docstring)."""
    params = config.as_params()
    space: Mapping[str, Any] = study_experiment(study).get("search_space", {})
    unused = unused_dimensions(config) | switched_off(space, params)
    reads = config_reads(study)
    if reads is not None:  # a training function of one's own: only what its loop read reaches it
        unused |= set(DIMENSIONS) - set(reads.get("read", []))
    searched = {name for name, body in space.items() if isinstance(body, dict) and "value" not in body}

    def kept(name: str) -> bool:
        if name not in DIMENSIONS or params[name] != DEFAULTS[name]:
            return True
        return name in searched and name not in unused

    exported = {name: value for name, value in params.items() if kept(name)}
    left_out = [name for name in space if name in DIMENSIONS and name not in exported and name in unused]
    return Exported(exported, left_out)


def switched_off(space: Mapping[str, Any], params: Mapping[str, Any]) -> set[str]:
    """The dimensions of a stored space whose ``when:`` clause the configuration does not meet."""
    off = set()
    for name, body in space.items():
        when = body.get("when", {}) if isinstance(body, dict) else {}
        for dim, values in when.items():
            if params.get(dim) not in (values if isinstance(values, list) else [values]):
                off.add(name)
    return off
