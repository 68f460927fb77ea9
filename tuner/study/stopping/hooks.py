"""Pruning and capping wired into a study: what runs at each evaluation of a trial."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import optuna

from tuner.study.experiment.load import Objective, Pruning
from tuner.study.hooks import StudyHooks
from tuner.study.record import TrialRecord
from tuner.study.stopping.by_name import REPORTING_PRUNERS, n_buckets
from tuner.study.stopping.curves import bucket_errors
from tuner.study.stopping.equal_time import EqualTimePruner
from tuner.study.stopping.incumbent import REFRESH_S, Incumbent, capped, front_incumbent
from tuner.train.clocks import CLOCK_FIELDS
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import GO, Stop, Verdict

if TYPE_CHECKING:
    from tuner.study.experiment.load import Experiment
    from tuner.train.time_to_target import TimeToTarget

# Trials that end as COMPLETE in Optuna: their last best metric holds to the cap.
COMPLETING = (Outcome.REACHED, Outcome.TIMEOUT, Outcome.DIVERGED, Outcome.OOM)


class PruningHooks(StudyHooks):
    """Caps a trial at the incumbent and prunes it with the experiment's pruner.

    At each evaluation (outside the timed region) it answers go on or a ``Stop``
    (tuner/train/verdict.py): a trial whose clock passed the best time to target so far
    times ``cap_slack`` stops as ``capped``, with that time as its bound; then, once per time
    bucket, the pruner judges it. Optuna's pruners are fed the target's error of the best metric
    (``1 - best accuracy``, a minimized metric's own value) at ``step = elapsed //
    bucket_s``, every step reported, and a trial that completes early is padded with its
    final value up to the cap, so that fast trials still count at later steps. The
    equal-time pruner reads the live trial directly and writes nothing per evaluation.
    Confirmation, baseline and race runs are measured, never capped or pruned.

    Capping happens where the incumbent says, not at the next scheduled evaluation: the
    incumbent is read afresh when a trial starts (a trial that just finished here may have
    set it), and ``stop_at`` answers the trainer's question of when to look: it forces an
    evaluation once its clock passes the cap (a slow configuration's first evaluation may
    come seconds later), and asks again after each evaluation (another worker may have
    found a faster configuration meanwhile).
    """

    def __init__(
        self,
        pruning: Pruning,
        objective: Objective,
        refresh_s: float = REFRESH_S,
        known: Callable[[TrialConfig], dict[str, float]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock  # what the incumbent's refresh is timed on: the host's, or a simulation's virtual clock
        self.pruning = pruning
        self.objective = objective
        self.refresh_s = refresh_s
        self.known = known  # several objectives: a trial's values known before it trains (model size)
        self.field = CLOCK_FIELDS[objective.clock]
        self.bucket_s = pruning.bucket_for(objective.cap_s)
        self.last_step = n_buckets(pruning, objective)
        self.reports = pruning.name in REPORTING_PRUNERS
        self.incumbent = Incumbent(refresh_s, clock)
        self.study: optuna.Study | None = None

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        self.study = study

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        self.trial = trial
        queued = TrialRecord.of(trial)
        self.measuring = queued.is_measurement or queued.race_of is not None  # confirmation, baseline and race runs
        if self.objective.several and self.known is not None:  # the front's point this trial must beat
            self.incumbent = Incumbent(self.refresh_s, self.clock, read=front_incumbent(self.known(config)))
        if not self.measuring and self.study is not None and self._capping():
            self.incumbent.get(self.study, force=True)
        self.times: list[float] = []
        self.metrics: list[float] = []
        self.reported = -1
        self.judged = -1
        self.ended_here = False

    def on_evaluation(self, tt: TimeToTarget | None, ev: Evaluation) -> Verdict:
        # The objective's clock, compilation charged where it says; a made-up evaluation without a trainer has nothing charged.
        now = tt.clock_s(ev) if tt is not None else getattr(ev, self.field)
        self.times.append(now)
        self.metrics.append(ev.metric)
        step = min(int(now // self.bucket_s), self.last_step)
        if self.reports:
            self._report_to(step)
        if self.measuring or self.study is None:
            return GO
        stop = self._cap(now)
        if stop is None and step > self.judged:
            self.judged = step  # one judgement per bucket keeps storage reads rare
            stop = self._prune(now, step)
        self.ended_here = stop is not None
        return stop

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        if not self.times:
            return
        if self.reports and result.outcome in COMPLETING:
            self._report_to(self.last_step)
            # Successive halving and Hyperband record a trial at a rung only when asked at
            # or past it: ask once more, so trials that finished early count at later rungs.
            self.trial.should_prune()
        elif self.ended_here and not self.reports and not self.objective.several:  # Optuna refuses reports with several objectives
            # One value at the step where it stopped: TPE ranks pruned trials by how long
            # they lasted, then by that value, and our steps mean the same time for all.
            step = min(int(self.times[-1] // self.bucket_s), self.last_step)
            trial.report(bucket_errors(self.times, self.metrics, self.bucket_s, step, step, self.objective.goal)[0], step)

    def stop_at(self) -> float | None:
        """The cap on the objective's clock for the trial that just started (None: no cap)."""
        if self.measuring or self.study is None or not self._capping():
            return None
        best = self.incumbent.get(self.study)
        return best.value * self.pruning.cap_slack if best is not None else None

    # -- decisions ----------------------------------------------------------------------
    def _capping(self) -> bool:
        # The incumbent's value is a time only when time is minimized. With several
        # objectives a trial slower than every point of the front may still join it with a
        # smaller model, so it is capped only against a front point at least as good on every
        # other objective, as far as the trial's own are known before it trains (model size);
        # where one is not (energy, peak memory, cost), nothing caps it (tuner/study/scoring/pareto.py).
        several = self.objective.several and self.known is not None and "time" in self.objective.names
        return self.pruning.cap_slack is not None and (self.objective.minimize == "time" or several)

    def _cap(self, now: float) -> Verdict:
        if not self._capping():
            return GO
        return capped(now, self.incumbent.get(self.study), self.pruning.cap_slack, self.objective.clock)

    def _prune(self, now: float, step: int) -> Verdict:
        pruner = self.study.pruner
        best = self.objective.goal.best(self.metrics)
        if isinstance(pruner, EqualTimePruner):
            comparison = pruner.judge(self.study, now, best, exclude=self.trial.number)
            return comparison.verdict(pruner.percentile, self.objective.clock) if comparison is not None else GO
        if self.reports and self.trial.should_prune():
            return Stop(
                Outcome.PRUNED,
                f"{self.pruning.name} pruner at step {step} ({step * self.bucket_s:.2f} s, {self.objective.clock} clock): "
                f"best {self.objective.metric} so far {best:.4f}",
            )
        return GO

    def _report_to(self, step: int) -> None:
        if step <= self.reported:
            return
        values = bucket_errors(self.times, self.metrics, self.bucket_s, self.reported + 1, step, self.objective.goal)
        for k, v in enumerate(values, start=self.reported + 1):
            self.trial.report(v, k)
        self.reported = step
