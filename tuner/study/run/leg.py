"""A leg of a run: the experiment as it runs, its plan and its stage, and the loop that makes
the next leg once the baseline's first run is known (tuner/study/run/runner.py runs them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run import phases
from tuner.study.run.hook_order import study_hooks
from tuner.study.run.objective import TrialObjective
from tuner.study.run.plan import Plan
from tuner.study.run.prepare import Prepared
from tuner.study.run.progress import Progress
from tuner.study.run.stage import Stage, stage_of
from tuner.study.run.strategy import after_baseline, use_strategy
from tuner.study.storage.deadline import Deadline
from tuner.train.result import TrialResult


@dataclass(frozen=True)
class Leg:
    """The run as it stands: the experiment as it runs (its cap and strategy), its plan, what reads
    them, and the line that names the strategy (None: no line to show)."""

    run: Experiment
    plan: Plan
    stage: Stage
    strategy_line: str | None


@dataclass(frozen=True)
class Loop:
    """What stays the same through a run: its study, what it was given, and the run's end on ``now``."""

    study: optuna.Study
    experiment: Experiment
    prepared: Prepared
    search: bool
    progress: Progress | None
    extra: list[StudyHooks]
    trainer: Callable[..., TrialResult]
    now: Callable[[], float]
    ends_at: float | None
    workers: int

    def leg(self, run: Experiment, plan: Plan, strategy_line: str | None) -> Leg:
        """The leg that runs ``run`` to ``plan``; its stage counts from now."""
        make_hooks = lambda r, sc, s_s: study_hooks(r, sc, s_s, self.progress, self.extra, self.now)
        stage = stage_of(run, self.study, self.prepared, plan.confirm, self.ends_at, self.workers, make_hooks, self.now)
        return Leg(run, plan, stage, strategy_line)

    def objective(self, leg: Leg, deadline: Deadline | None) -> TrialObjective:
        return TrialObjective(leg.run, self.prepared, leg.stage.hooks, leg.stage.scorer, deadline, self.trainer)

    def after_baseline(self, leg: Leg) -> Leg:
        """Run the baseline's first run (it may run until the run's end; no search trial starts
        before it), then the leg that follows: made again where ``cap_s: auto`` or
        ``pruner.name: auto``, now known, changed the run."""
        left = phases.baseline_deadline(self.ends_at, leg.run.objective.cap_s, self.now)
        phases.run_queued_first(self.study, self.objective(leg, left))
        resolved, strategy_line = after_baseline(self.study, self.experiment, leg.run, self.workers)
        if resolved is leg.run:
            return dataclasses.replace(leg, strategy_line=strategy_line)
        use_strategy(self.study, resolved, leg.run)
        plan = dataclasses.replace(leg.plan, confirm=resolved.confirm.after_search or not self.search)
        return self.leg(resolved, plan, strategy_line)
