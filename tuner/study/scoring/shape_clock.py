"""The shape clock: steps to the target times the study's best step time for the trial's shape.

Steps to the target do not depend on the machine's load (the same seed gives the same
steps); time per step depends on the configuration's shape (model, width, batch,
precision, devices, threads), not on its learning rate or schedule. Many trials of a study
share a shape, so the study holds several measurements of each shape's step time, and the
lowest median among them is the best estimate of what that shape costs on a quiet machine.

``shape_s = steps_to_target x lowest median step time the study has measured for the
shape``, the trial's own included: it can only be lower than the robust clock (the trial's
own median), and it is refined as trials accrue. It is derived from the records, so it is
recorded beside the raw clocks (never instead of them) when a trial ends.

What it does not fix: under load that lasts the whole study, every measurement of a shape
is slow, and so is its lowest (benchmarks/clock_noise.py measures both cases).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import optuna

from tuner.study.record import FINISHED, TrialRecord, records
from tuner.train.result import TrialResult
from tuner.train.trial_config import TrialConfig

# What a step's time depends on; the rest of TrialConfig (lr, schedule, betas, decay) does not.
SHAPE_FIELDS = ("width", "batch_size", "precision", "devices")


def shape_key(config: TrialConfig, threads: int | None = None, task: str = "") -> str:
    """The configuration's shape as a string key: same key, same cost per step."""
    shape = {k: getattr(config, k) for k in SHAPE_FIELDS if hasattr(config, k)}
    return json.dumps({"task": task, "threads": threads, **shape}, sort_keys=True)


def lowest_step_times(trials: Iterable[TrialRecord], threads: int | None = None, task: str = "") -> dict[str, float]:
    """The lowest median step time measured per shape over the finished trials given."""
    lowest: dict[str, float] = {}
    for r in trials:
        result = r.result
        if r.config is None or result is None or not result.median_step_s:
            continue
        key = shape_key(r.config, threads, task)
        lowest[key] = min(lowest.get(key, float("inf")), result.median_step_s)
    return lowest


def shape_seconds(steps: int, own_median_step_s: float | None, reference_step_s: float | None) -> float | None:
    """``steps`` times the lower of the trial's own median step time and the study's best for its shape."""
    known = [s for s in (own_median_step_s, reference_step_s) if s]
    return steps * min(known) if known else None


def record_shape_clock(study: optuna.Study, config: TrialConfig, result: TrialResult, threads: int | None = None) -> None:
    """Set ``result.shape_s_to_target`` for a trial that reached the target, from the study's records.

    Every trial of a study is taken to run with the same ``threads`` (the experiment's).
    """
    if not result.reached or result.steps_to_target is None:
        return
    lowest = lowest_step_times(records(study, FINISHED), threads)
    result.shape_s_to_target = shape_seconds(result.steps_to_target, result.median_step_s, lowest.get(shape_key(config, threads)))
