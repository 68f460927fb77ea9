"""The order in which a study's hooks hear its events (``study_hooks``), and the hooks in use (``HooksInUse``)."""

from __future__ import annotations

import time
from collections.abc import Callable

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.reruns.racing import RacingHooks
from tuner.study.run.progress import Progress
from tuner.study.scoring.values import Scorer
from tuner.study.stopping.hooks import PruningHooks
from tuner.study.stopping.screen import ScreenHooks


def study_hooks(
    experiment: Experiment,
    scorer: Scorer,
    search_s: float | None,
    progress: Progress | None,
    extra: list[StudyHooks],
    now: Callable[[], float] = time.perf_counter,
) -> list[StudyHooks]:
    """The study's hooks in the order every event reaches them.

    1. progress, first, so the display shows each trial as it starts and ends;
    2. the caller's own (tracking), so a trial's run is open before anything can end it;
    3. racing, which queues re-runs when a search trial ends close to the incumbent (none on
       a Pareto front: its margin is relative to one incumbent time, and a front has none),
       within its share of the search's ``search_s`` seconds under a time budget;
    4. screening, which hands a new trial its throughput pre-screen;
    5. pruning and capping, last: a hook that ends a trial keeps the ones after it from
       seeing that evaluation.
    """
    racing = RacingHooks(experiment.race if not experiment.objective.several else None, experiment.seed, search_s)
    screening = ScreenHooks(experiment.screen, experiment.pruner, experiment.objective)
    known = scorer.known if experiment.objective.several else None  # capping on a front
    pruning = PruningHooks(experiment.pruner, experiment.objective, known=known, clock=now)
    return [progress or Progress(quiet=True), *extra, racing, screening, pruning]


class HooksInUse:
    """The hooks a running study's events reach now.

    The run makes its hooks again once the baseline has set what they read (tuner/study/run/stage.py),
    and the storage, opened before any hook is made, tells the ones in use then of a trial whose
    worker died: so the run switches this one holder rather than rebuilding a list both share.
    """

    def __init__(self) -> None:
        self.hooks: list[StudyHooks] = []

    def start(self, study: optuna.Study, experiment: Experiment, hooks: list[StudyHooks]) -> None:
        """``hooks`` hear the study from now on; each that did not hear it until now is told it started."""
        for hook in hooks:
            if hook not in self.hooks:
                hook.study_started(study, experiment)
        self.hooks = hooks

    def trial_stale(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        for hook in self.hooks:
            hook.trial_stale(study, trial)

    def finish(self, study: optuna.Study) -> None:
        for hook in self.hooks:
            hook.study_finished(study)
