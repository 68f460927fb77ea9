"""What a study tells the parts that watch it: progress, tracking, pruning."""

from __future__ import annotations

from typing import TYPE_CHECKING

import optuna

from tuner.train.result import Evaluation, TrialResult
from tuner.train.trial_config import TrialConfig

if TYPE_CHECKING:
    import torch

    from tuner.study.experiment.load import Experiment
    from tuner.train.screen import ScreenRule
    from tuner.train.time_to_target import TimeToTarget
    from tuner.train.verdict import Stop


class StudyHooks:
    """No-op base: subclass and override what you need.

    ``on_evaluation`` runs at each evaluation of the current trial, outside the timed
    region; returning a ``Stop`` (tuner/train/verdict.py) ends the trial (pruning and capping do this).
    """

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        pass

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        pass

    def on_evaluation(self, tt: TimeToTarget, ev: Evaluation) -> Stop | None:
        return None

    def stop_at(self) -> float | None:
        """A time on the objective's clock past which the trial must be looked at early.

        Asked when the trial starts and after each evaluation that goes on; the loop then
        forces an evaluation there rather than at the next scheduled one (capping at the
        incumbent uses it).
        """
        return None

    def screen_rule(self) -> ScreenRule | None:
        """The throughput pre-screen for the trial that just started (tuner/train/screen.py).

        Read once the trial has started, like ``stop_at``; None: the trial is not screened.
        """
        return None

    def trial_model(self, trial: optuna.Trial, model: torch.nn.Module) -> None:
        """The trained model of the trial now ending (the unwrapped one; rank 0's in a
        data-parallel trial), handed over once its clocks have stopped and before
        ``trial_finished``. A trial that failed mid-loop hands none. Copy what you keep by
        ``trial_finished``: the model is dropped after it (tracking logs its weights there)."""

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        pass

    def trial_stale(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """A trial whose worker died (no heartbeat): now FAIL in Optuna and re-queued."""

    def study_finished(self, study: optuna.Study) -> None:
        pass
