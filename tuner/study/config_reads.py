"""A training function's study: which dimensions reach its loop, and what its configurations show.

A training function of one's own reads only some of the ``config`` it is given
(tuner/train/config_reads.py records which). Once its first trial has run, the study keeps
those fields beside the dimensions the experiment names (``config_reads`` in
tuner/study/study_record.py), says in one line which searched dimensions the loop never read
(a search over them is wasted), and from then on its configurations are shown with only
those: the MLflow parameters, the report (`tuner best`'s export keeps fewer still:
tuner/study/reruns/exported.py). The others are at their
defaults in every trial and reach no loop, so showing them says nothing. A study of a
built-in task, or of a task function, shows every dimension, as before.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import optuna

from tuner.study.hooks import StudyHooks
from tuner.study.space.space import Fixed, SearchSpace
from tuner.study.study_record import StudyAttrs, config_reads, write_config_reads
from tuner.tasks.base import Task
from tuner.train.result import Outcome, TrialResult
from tuner.train.trial_config import DIMENSIONS, TrialConfig


class ConfigReads(StudyHooks):
    """Keeps the fields a training function reads on the study, and says which searched ones it never read."""

    def __init__(self, task: Task, space: SearchSpace, stream: TextIO | None = None) -> None:
        self.task, self.space = task, space
        self.stream = stream or sys.stderr
        self.said: set[str] = set()  # the dimensions a line has named

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        if self.task.train_fn is None:
            return
        study = trial.study
        stored = config_reads(study)
        read = set(self.task.config_reads) | set((stored or {}).get("read", []))  # a branch one trial skipped, another reads
        if stored is None or read != set(stored.get("read", [])):
            write_config_reads(study, {"read": sorted(read), "named": sorted(self.space.dims)})
        if result.outcome is not Outcome.FAILED:  # a failed trial may stop before it reads the rest
            # Judged on the first trial that drew a dimension: a baseline or a when: clause may leave it out before.
            drawn = set(trial.params) - self.said
            line = never_read_line(self.space, read, drawn)
            self.said |= drawn
            if line:
                print(line, file=self.stream)


def never_read_line(space: SearchSpace, read: set[str], drawn: set[str] | None = None) -> str | None:
    """The one line naming the searched built-in dimensions the loop never read; None when it read them all.

    ``drawn``: the dimensions the trial drew (None: all); one whose ``when`` left it out of the
    trial (a horizon under a constant schedule) had nothing to be read for."""
    unread = [
        n
        for n, spec in space.dims.items()
        if n in DIMENSIONS and not isinstance(spec, Fixed) and n not in read and (drawn is None or n in drawn)
    ]
    if not unread:
        return None
    names = ", ".join(f"config.{n}" for n in unread)
    return (
        f"search space: the training function never read {names}: "
        f"searching {'it' if len(unread) == 1 else 'them'} is wasted (fix or remove)"
    )


def shown_names(study: StudyAttrs, config: TrialConfig) -> set[str] | None:
    """The dimensions a configuration of this study is shown with; None: all of them."""
    stored = config_reads(study)
    if stored is None:
        return None
    return {*stored.get("read", []), *stored.get("named", []), *config.hyper}


def shown_params(study: StudyAttrs, config: TrialConfig) -> dict[str, Any]:
    """``config.as_params()`` with only the dimensions the experiment names and the loop reads
    (every one for a study that is not a training function's)."""
    params = config.as_params()
    names = shown_names(study, config)
    return params if names is None else {k: v for k, v in params.items() if k in names}
