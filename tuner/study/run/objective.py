"""The trial objective: the callable Optuna runs per trial. It samples a configuration (or
takes the queued one), trains it, scores the result and records it; the hooks hear each step.

A trial that ends without a score is FAIL in Optuna (``TrialFailed``); the same failure
``SAME_FAILURES_TO_STOP`` times in a row stops the study (``StudyFailed``): a broken task
fails every configuration alike, and the budget would be spent on nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import optuna

from tuner import signals
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.record import TrialRecord, write_result, write_start
from tuner.study.run.prepare import Prepared
from tuner.study.scoring.censoring import NOT_SCORED
from tuner.study.scoring.shape_clock import record_shape_clock
from tuner.study.scoring.values import Scorer
from tuner.study.storage.deadline import Deadline
from tuner.train.result import Outcome, TrialResult
from tuner.train.screen import ScreenRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

SAME_FAILURES_TO_STOP = 3


class TrialFailed(Exception):
    """A trial that ended as failed or interrupted: recorded as FAIL in Optuna."""


class StudyFailed(Exception):
    """Every trial of this run failed the same way; the study stops with that error."""


class TrialObjective:
    """The callable Optuna runs per trial: sample, train, score, record.

    ``scorer`` is the study's one Scorer (it caches model sizes); ``deadline`` holds the point
    on the trainer's clock by which a running trial ends as interrupted, read as each trial
    starts (a search's deadline moves as the time kept for confirmation is re-estimated; None: no deadline).
    ``trainer`` trains one trial: ``train_trial`` (tuner/train/trial.py), or anything with its
    parameters and result, such as the replay of recorded curves (tuner/simulate/replay.py).
    """

    def __init__(
        self,
        experiment: Experiment,
        prepared: Prepared,
        hooks: list[StudyHooks],
        scorer: Scorer,
        deadline: Deadline | None,
        trainer: Callable[..., TrialResult] = train_trial,
    ) -> None:
        self.trainer = trainer
        self.experiment = experiment
        self.prepared = prepared
        self.hooks = hooks
        self.scorer = scorer
        self.deadline = deadline
        self.failures: list[str] = []
        self.trial: optuna.Trial | None = None  # the trial last started

    def __call__(self, trial: optuna.Trial) -> float | list[float]:
        self.trial = trial  # for a worker whose trial another worker fails meanwhile (tuner/study/storage/budget_loop.py: optimize)
        queued = TrialRecord.of(trial)
        # A baseline run trains the configuration it was enqueued with, unsampled (tuner/study/reruns/baseline.py).
        config = (
            queued.config
            if queued.is_baseline and queued.config is not None
            else TrialConfig.from_params(self.prepared.space.sample(trial))
        )
        # A re-run of a dead worker's trial (tuner/study/storage/open.py) repeats it, seed included.
        original = trial.number if queued.retry_of is None else queued.retry_of
        # A confirmation run is enqueued with its seed.
        seed = queued.seed if queued.seed is not None else self.experiment.seed + original
        write_start(trial, config, seed)
        for hook in self.hooks:
            hook.trial_started(trial, config)
        result = self._train(trial, config, seed)
        if queued.role == "trial" and result.outcome is Outcome.INTERRUPTED and self.deadline is not None and self.deadline.left() <= 0:
            # A search trial the search's deadline ended is a miss at the time it had: scored as censored, like one at its cap.
            result.outcome, result.reason = Outcome.TIMEOUT, "the search's time ran out during this trial"
        self.scorer.measure(result, config)
        values = None if result.outcome in NOT_SCORED else self.scorer.values(trial, result, config)
        value = values[0] if values else None  # the hooks show and log the first objective's
        record_shape_clock(trial.study, config, result, self.prepared.threads)  # beside the raw clocks
        self._record(trial, result, value)
        if result.outcome is Outcome.PRUNED:
            raise optuna.TrialPruned(result.reason)
        if value is None:
            self._note_failure(result)
            raise TrialFailed(result.reason)
        self.failures.clear()
        return values if self.experiment.objective.several else value

    def _train(self, trial: optuna.Trial, config: TrialConfig, seed: int) -> TrialResult:
        listeners = [signals.raise_if_pending, *(hook.on_evaluation for hook in self.hooks)]
        deadline = self.deadline.at if self.deadline is not None else None
        try:
            with signals.interruptible():
                return self.trainer(
                    self.prepared.task,
                    config,
                    self.experiment.objective.stop_rule(),
                    self.prepared.device,
                    seed=seed,
                    listeners=listeners,
                    deadline=deadline,
                    stop_at=lambda: stop_time(self.hooks),
                    screen=screen_rule(self.hooks),
                    keep=lambda model: [hook.trial_model(trial, model) for hook in self.hooks],
                )  # after the clocks stop
        except KeyboardInterrupt as err:
            # SIGINT or SIGTERM: record the trial as interrupted and close its runs, then stop.
            result = getattr(err, "trial_result", None) or TrialResult(
                Outcome.INTERRUPTED, str(err) or "interrupted", self.experiment.objective.goal
            )
            self._record(trial, result, None)
            raise

    def _record(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        write_result(trial, result)
        for hook in self.hooks:
            hook.trial_finished(trial, result, value)

    def _note_failure(self, result: TrialResult) -> None:
        if result.outcome is Outcome.FAILED:
            self.failures.append(result.reason)
            if len(self.failures) >= SAME_FAILURES_TO_STOP and len(set(self.failures[-SAME_FAILURES_TO_STOP:])) == 1:
                raise StudyFailed(f"{SAME_FAILURES_TO_STOP} trials in a row failed with: {result.reason}")


def stop_time(hooks: list[StudyHooks]) -> float | None:
    """The earliest time on the objective's clock any hook wants the trial looked at (asked as it starts and after each evaluation)."""
    times = [t for t in (hook.stop_at() for hook in hooks) if t is not None]
    return min(times, default=None)


def screen_rule(hooks: list[StudyHooks]) -> ScreenRule | None:
    """The pre-screen a hook hands the new trial (tuner/study/stopping/screen.py); None: not screened."""
    return next((rule for rule in (hook.screen_rule() for hook in hooks) if rule is not None), None)
