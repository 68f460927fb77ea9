"""Which trials keep their trained weights on their MLflow run, and the file they get.

The experiment's ``tracking.weights`` (tuner/study/experiment/settings.py) says which:

- ``best`` (the default): confirmation runs that reached the target (the winner's among
  them), and each search trial that was the study's best when it ended, so the trial the
  study run's ``tuner.best_trial`` tag names while the study runs has them (at its end the
  tag names the study's winner, tuner/track/summary.py, whose confirmation runs have them);
- ``reached``: every trial that reached the target;
- ``none``: no weights.

The decision is made in two steps so that no trial waits for it. On the study's thread,
once the trial has ended, ``may_keep`` rules out what cannot qualify with what the study's
thread knows (its best so far can only be later than the truth), and the weights of the rest
are copied to the CPU. On the writer's thread, after the study run's best has been updated
from the storage (other workers' trials included), ``keeps`` decides; the file is written
and uploaded there (tuner/track/store.py).
"""

from __future__ import annotations

from typing import Any

import torch

from tuner.train.checkpoint import checkpoint_meta, state_copy
from tuner.train.result import TrialResult
from tuner.train.trial_config import TrialConfig


def may_keep(policy: str, confirmation: bool, result: TrialResult, value: float | None, best: float | None) -> bool:
    """On the study's thread: whether this trial's weights may be logged (so are worth copying)."""
    if policy == "none" or not result.reached or value is None:
        return False
    if policy == "reached" or confirmation:
        return True
    return best is None or value < best


def keeps(policy: str, confirmation: bool, became_best: bool) -> bool:
    """On the writer's thread: whether a trial that ``may_keep`` logs its weights."""
    return policy == "reached" or confirmation or became_best


def checkpoint_of(model: torch.nn.Module, config: TrialConfig, experiment: dict[str, Any], result: TrialResult) -> dict[str, Any]:
    """What `tuner train --save` would write for this trial: the weights (a CPU copy) and what they are."""
    meta = checkpoint_meta(config, experiment.get("task", ""), experiment.get("task_options") or {}, result)
    return {"state_dict": state_copy(model), **meta}
