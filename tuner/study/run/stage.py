"""What reads a run's cap and strategy: the scorer, the search's deadline and the study's hooks.

Made from an experiment whose cap is in seconds when the study opens, and made again once the
baseline has set ``cap_s: auto`` (tuner/study/run/auto_cap.py) or ``pruner.name: auto``
(tuner/study/run/strategy.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run.prepare import Prepared
from tuner.study.run.reserve import Reserve, SearchDeadline
from tuner.study.scoring.values import Scorer


@dataclass(frozen=True)
class Stage:
    scorer: Scorer
    deadline: SearchDeadline | None
    hooks: list[StudyHooks]


def stage_of(
    run: Experiment,
    study: optuna.Study,
    prepared: Prepared,
    confirm: bool,
    ends_at: float | None,
    workers: int,
    make_hooks: Callable[[Experiment, Scorer, float | None], list[StudyHooks]],
    now: Callable[[], float],
) -> Stage:
    """``confirm``: whether this run confirms after its search (the plan's), so that a time budget keeps what that needs."""
    scorer = Scorer(run, prepared.task)
    deadline, search_s = None, None
    if ends_at is not None and run.budget.timeout_s:
        # A time budget keeps what the confirmation and baseline runs need; the search stops early enough to leave it.
        reserve = reserve_of(run, confirm, workers)
        deadline = SearchDeadline(ends_at - now(), run.objective.cap_s, reserve, now)
        search_s = search_seconds(run, study, reserve)
    return Stage(scorer, deadline, make_hooks(run, scorer, search_s))


def reserve_of(run: Experiment, confirm: bool, workers: int) -> Reserve | None:
    """What a time budget keeps for the confirmation and baseline runs that ``workers`` share; None
    when the run does not confirm, keeps no time for it (``confirm.keep_time: false``) or has no time budget."""
    timeout_s = run.budget.timeout_s
    return Reserve(run, timeout_s, workers) if confirm and run.confirm.keep_time and timeout_s else None


def search_seconds(run: Experiment, study: optuna.Study, reserve: Reserve | None) -> float | None:
    """The seconds of the run's time budget the search may take (None: no time budget)."""
    timeout_s = run.budget.timeout_s
    return timeout_s - (reserve.seconds(study) if reserve else 0.0) if timeout_s else None
