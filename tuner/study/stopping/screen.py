"""The study's side of the throughput pre-screen: the incumbent and the fewest samples to target.

A trial's first steps are timed (tuner/train/screen.py); if even the fewest training
samples any trial of the study needed to reach the target would take it, at that step
time, past the incumbent x ``pruner.cap_slack``, it ends as ``screened`` after a handful
of steps instead of training until capping stops it. Its score is the projected time, a
lower bound (tuner/study/scoring/censoring.py), so the sampler learns from it without a full run.

Why the capping slack and not the bare incumbent: screening forecasts capping. A trial
whose projection passes incumbent x slack would be capped before it could reach the target
at the study's best sample efficiency, so the screen only ends early what capping would
end later; a trial capping would let run is never screened. The slack also absorbs the
noise of a step time measured over a few steps on a shared machine. With capping off
(``cap_slack: null``) there is nothing to forecast, and no trial is screened.

The one assumption: no configuration needs fewer samples than the fewest any trial of
the study needed (rounded down to the evaluation cadence, where a crossing is seen).
Screening waits until ``screen.min_reached`` distinct configurations reached the target:
one configuration's samples (or its race runs') say little about a more efficient one.
Samples to target grow with the batch (below the critical batch size they hold, above it
they grow), so a large batch's samples can overstate what a small batch needs; with
``screen.samples_from: no_larger_batch`` a trial is compared only with the trials that
reached the target at its batch or below (its smallest, for a growing batch). Measured on
experiments/mnist1d_cnn.yaml (60-s studies, seed 0, a shared 2-core CPU, one run each):
the defaults screened 4 of 37 search trials (batch 32 and 64, growing from 16 and 32;
0.1 s in all). An earlier count of runs rather than configurations screened 6 of 29,
all at batch 32 against batch-256 samples; in a run with ``no_larger_batch`` (which
screened none) 5 of those 6 configurations were drawn again and were pruned or capped at
0.39-0.52 accuracy after 4.9 s in all, against 0.3 s screened: no wrong call among those
that could be checked.

Not screened: confirmation, baseline and race runs (measured, never capped), and studies
that minimize cost or energy (the incumbent is not a time). A growing batch (``ramp_start``)
is screened on full steps of its batch at the time its first, smaller steps took
(``ScreenRule.full_batch``): a larger step takes no less time, so that stays a lower bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

import optuna

from tuner.study.experiment.settings import Objective, Pruning, Screen
from tuner.study.hooks import StudyHooks
from tuner.study.record import COMPLETE, TrialRecord, records
from tuner.study.reruns.racing import best_configuration
from tuner.train.screen import ScreenRule
from tuner.train.trial_config import TrialConfig

if TYPE_CHECKING:
    from tuner.study.experiment.load import Experiment


def fewest_samples(trials: Iterable[TrialRecord], eval_every: int, batch: int | None = None) -> tuple[int, int] | None:
    """The fewest samples to target of the trials that reached it at a batch no larger than
    ``batch`` (any, without one), rounded down to the cadence, and how many distinct
    configurations those were; None when none did."""
    reached = [
        r
        for r in trials
        if r.reached
        and r.result is not None
        and r.result.samples_to_target
        and r.config is not None
        and (batch is None or r.config.batch_size <= batch)
    ]
    if not reached:
        return None
    fewest = min(r.result.samples_to_target for r in reached)
    # A trial is seen crossing at the first step past a multiple of the cadence: a smaller batch
    # crosses at the same evaluation with less overshoot.
    return (fewest // eval_every) * eval_every or fewest, len({r.config_key for r in reached})


def screen_rule(trials: list[TrialRecord], screen: Screen, slack: float, eval_every: int, batch: int | None = None) -> ScreenRule | None:
    """The rule for a new trial at ``batch`` of a study holding ``trials`` (its COMPLETE ones
    suffice); None until ``screen.min_reached`` configurations reached the target at that batch or below."""
    fewest = fewest_samples(trials, eval_every, batch)
    best = best_configuration(trials)
    if fewest is None or best is None or fewest[1] < screen.min_reached:
        return None
    against = f"{slack:g} x the best time to target so far, {best.median:.3f} s (trial {best.trial.number})"
    return ScreenRule(best.median * slack, fewest[0], screen.warmup_steps, screen.steps, against)


def ramps(config: TrialConfig) -> bool:
    """Whether the configuration's batch grows: its first steps are smaller than its batch."""
    return config.ramp_start < 1 and config.ramp_frac > 0


class ScreenHooks(StudyHooks):
    """Hands each search trial its pre-screen when it starts (see the module's docstring)."""

    def __init__(self, screen: Screen | None, pruning: Pruning, objective: Objective) -> None:
        self.screen = screen
        self.slack = pruning.cap_slack
        self.objective = objective
        self.study: optuna.Study | None = None
        self._eligible = False
        self._full_batch: int | None = None
        self._batch: int | None = None

    @property
    def on(self) -> bool:
        """Screening runs at all: on, with capping to forecast, on a time objective."""
        return self.screen is not None and self.slack is not None and self.objective.minimize == "time"

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        self.study = study

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        queued = TrialRecord.of(trial)
        measured = queued.is_measurement or queued.race_of is not None
        self._eligible = self.on and not measured
        self._full_batch = config.batch_size if ramps(config) else None
        # The smallest batch it trains at: a growing batch starts at ramp_start of its own.
        self._batch = max(1, int(config.batch_size * config.ramp_start)) if ramps(config) else config.batch_size
        if self.screen is not None and self.screen.samples_from == "any_batch":
            self._batch = None

    def screen_rule(self) -> ScreenRule | None:
        if not self._eligible or self.study is None:
            return None
        assert self.screen is not None and self.slack is not None
        # One storage read per trial start, as the incumbent's: every worker's trials count.
        rule = screen_rule(records(self.study, COMPLETE), self.screen, self.slack, self.objective.eval_every_samples, self._batch)
        return dataclasses.replace(rule, full_batch=self._full_batch) if rule is not None else None
