"""The baseline raced against a proxy study's best candidate at full size (tuner/study/run/proxy_study.py)."""

from __future__ import annotations

from typing import Any

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.record import COMPLETE, TrialRecord, records
from tuner.study.stopping.incumbent import Best, capped
from tuner.train.result import Evaluation, TrialResult
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import GO, Verdict


class BaselineRace(StudyHooks):
    """Caps the baseline's full-size runs at ``margin`` x the fastest full-size candidate: by then
    it has lost clearly, and the rest of its run would decide nothing (its score is floored
    there, as a capped trial's is: tuner/study/scoring/censoring.py)."""

    def __init__(self, margin: float) -> None:
        self.margin = margin
        self.study: optuna.Study | None = None
        self.best: Best | None = None

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        self.study = study
        self.goal, self.clock = experiment.objective.goal, experiment.objective.clock

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        self.best = None
        if self.study is None or not TrialRecord.of(trial).is_baseline:
            return
        done = [r for r in records(self.study, COMPLETE) if r.reached and not r.is_baseline and r.value is not None]
        if done:
            fastest = min(done, key=lambda r: (r.value, r.number))
            self.best = Best(float(fastest.value), fastest.number, "the fastest candidate at full size")

    def stop_at(self) -> float | None:
        return self.best.value * self.margin if self.best is not None else None

    def on_evaluation(self, tt: Any, ev: Evaluation) -> Verdict:
        if self.best is None or self.goal.reached(ev.metric):
            return GO
        return capped(tt.clock_s(ev), self.best, self.margin, self.clock)

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        self.best = None
