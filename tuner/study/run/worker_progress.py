"""One progress display for a study that other processes run, read from its storage.

Workers started by `tuner run --workers N` are quiet; the process that started them polls
the study and prints what one worker's display would: a line per finished trial, and on a
terminal a status line redrawn in place (trials done, running, best so far).
"""

from __future__ import annotations

import datetime
from typing import TextIO

import optuna
from optuna.trial import TrialState

from tuner.study.record import ENDED, FINISHED, TrialRecord, best_of, records
from tuner.study.run.progress import StatusLine, rerun_mark, trial_line
from tuner.study.scoring.censoring import objective_value
from tuner.study.scoring.units import study_unit, with_unit
from tuner.study.study_record import study_objective
from tuner.train.trial_config import TrialConfig


class StudyWatch(StatusLine):
    """Polls a study and prints its progress; ``n_total`` is the study's trial budget (searched configurations), if any."""

    def __init__(self, study: optuna.Study, n_total: int | None = None, stream: TextIO | None = None, quiet: bool = False) -> None:
        super().__init__(stream, quiet)
        self.study = study
        self.n_total = n_total
        self.seen: set[int] = {r.number for r in records(study, ENDED)}
        self.objective = study_objective(study)
        self.unit = study_unit(study)

    def poll(self) -> None:
        """Print the trials that ended since the last poll, then the status line."""
        if self.quiet:
            return
        trials = records(self.study)
        for r in sorted(trials, key=lambda r: r.trial.datetime_complete or datetime.datetime.max):
            if r.state in ENDED and r.number not in self.seen and r.outcome is not None:
                self.seen.add(r.number)
                self._write(self._line(r), final=True)
        if self.live:
            self._write(self._status(trials), final=False)

    def _line(self, r: TrialRecord) -> str:
        result, config = r.result, r.config or TrialConfig()
        return trial_line(
            r.number,
            r.outcome.value,
            self._value(r),
            result.best_metric,
            config,
            result.data_wait_share,
            rerun_mark(r),
            result.goal.metric,
            self.unit,
        )

    def _value(self, r: TrialRecord) -> float | None:
        if r.state is TrialState.COMPLETE:
            return r.value
        if r.state is TrialState.PRUNED and self.objective is not None:
            return objective_value(r.result, self.objective)
        return None

    def _status(self, trials: list[TrialRecord]) -> str:
        searched = sum(r.state in FINISHED and not r.is_rerun for r in trials)  # what the trial budget counts
        reruns = sum(r.state in FINISHED and r.is_rerun for r in trials)
        running = [r.trial for r in trials if r.state is TrialState.RUNNING]
        best = best_of(trials)
        shown = f"{with_unit(best.value, self.unit)} (#{best.number})" if best is not None else "-"
        now = datetime.datetime.now()
        ages = " ".join(f"#{t.number} {(now - t.datetime_start).total_seconds():.0f}s" for t in running if t.datetime_start)
        total = f"/{self.n_total}" if self.n_total else ""
        more = f" + {reruns} re-runs" if reruns else ""
        return f"[{searched}{total} searched{more} | best {shown} | {len(running)} running] {ages}"
