"""Extrapolated stopping: a trial whose learning curve cannot reach the target before the incumbent's time x a margin stops.

At each evaluation the trial's curve (the target's lower-is-better error of the best metric
so far, against its clock) is projected forward on a straight line from its last
evaluation at the *fastest* slope it showed to any of the ``window`` evaluations before it:
learning curves flatten, so a straight line at the best recent rate is optimistic, and a
trial is stopped only when even that projection loses. If even at that rate it would reach
the target error after the incumbent's time x ``margin``, it can no longer win and stops as
``pruned``, with the projection in its reason. A curve that is not falling (no recent
improvement) projects to never. Capping (tuner/study/stopping/incumbent.py) stops a trial
once its clock passes the incumbent; this stops it when its curve says it will, earlier.

Not judged: measured runs (confirmation, baseline, race), a trial before ``min_evals``
evaluations or its ``warmup_s``, a study without an incumbent, and an objective that is
not a time. Whether it helps is a measured question: benchmarks/search_quality_table.py
compares it with equal-time pruning alone on recorded tables (docs/stopping.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import optuna

from tuner.study.hooks import StudyHooks
from tuner.study.record import TrialRecord
from tuner.study.stopping.incumbent import REFRESH_S, Incumbent
from tuner.train.clocks import CLOCK_FIELDS
from tuner.train.result import Evaluation, Outcome
from tuner.train.target import Target
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import GO, Stop, Verdict

if TYPE_CHECKING:
    from tuner.study.experiment.load import Experiment, Objective
    from tuner.train.time_to_target import TimeToTarget

MARGIN = 1.5  # the incumbent's time x this: a projection is rough, so only a clear loser stops
WINDOW = 4  # evaluations the recent slopes are taken over
MIN_EVALS = 3


def projected_s(times: Sequence[float], errors: Sequence[float], target_error: float, window: int = WINDOW) -> float:
    """When a curve of lower-is-better ``errors`` (best so far, at ``times``) reaches ``target_error``,
    on a straight line at the fastest rate between its last point and each of the ``window`` before it;
    ``inf`` when it does not fall; its last time when it is there already."""
    if not times or errors[-1] <= target_error:
        return times[-1] if times else math.inf
    t1, e1 = times[-1], errors[-1]
    rate = 0.0  # error lost per second, the fastest seen lately
    for t0, e0 in zip(times[-window - 1 : -1], errors[-window - 1 : -1], strict=True):
        if t1 > t0:
            rate = max(rate, (e0 - e1) / (t1 - t0))
    return t1 + (e1 - target_error) / rate if rate > 0 else math.inf


class ExtrapolatedStop(StudyHooks):
    """Stops a search trial whose projected time to target passes the incumbent's x ``margin`` (see the module's docstring)."""

    def __init__(
        self,
        objective: Objective,
        margin: float = MARGIN,
        warmup_s: float = 0.0,
        min_evals: int = MIN_EVALS,
        refresh_s: float = REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.objective = objective
        self.goal: Target = objective.goal
        self.margin = margin
        self.warmup_s = warmup_s
        self.min_evals = min_evals
        self.field = CLOCK_FIELDS[objective.clock]
        self.incumbent = Incumbent(refresh_s, clock)  # read afresh as each trial starts, then at most every refresh_s
        self.study: optuna.Study | None = None
        self.on = objective.minimize == "time" and not objective.several

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        self.study = study

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        queued = TrialRecord.of(trial)
        self.judging = self.on and self.study is not None and not (queued.is_measurement or queued.race_of is not None)
        if self.judging:
            self.incumbent.get(self.study, force=True)
        self.times: list[float] = []
        self.metrics: list[float] = []
        self.errors: list[float] = []  # the target's error of the best metric so far, at each evaluation

    def on_evaluation(self, tt: TimeToTarget | None, ev: Evaluation) -> Verdict:
        if not self.judging:
            return GO
        now = tt.clock_s(ev) if tt is not None else getattr(ev, self.field)
        self.metrics.append(ev.metric)
        best = self.goal.best(self.metrics)
        self.times.append(now)
        self.errors.append(self.goal.error(best))
        incumbent = self.incumbent.get(self.study)
        if incumbent is None or len(self.times) < self.min_evals or now < self.warmup_s:
            return GO
        bound = incumbent.value * self.margin
        eta = projected_s(self.times, self.errors, self.goal.error(self.goal.value))
        if eta <= bound:
            return GO
        when = "never, its curve is not falling" if math.isinf(eta) else f"at {eta:.2f} s"
        return Stop(
            Outcome.PRUNED,
            f"extrapolated: best {self.goal.metric} {best:.4f} at {now:.2f} s ({self.objective.clock} clock) projects to reach "
            f"{self.goal.describe()} {when}, past {self.margin:g} x {incumbent.what}, {incumbent.value:.3f} s (trial {incumbent.number})",
        )
