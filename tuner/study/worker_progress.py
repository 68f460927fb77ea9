"""One progress display for a study that other processes run, read from its storage.

Workers started by `tuner run --workers N` are quiet; the process that started them polls
the study and prints what one worker's display would: a line per finished trial, and on a
terminal a status line redrawn in place (trials done, running, best so far).
"""

from __future__ import annotations

import datetime
import sys
from typing import TextIO

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.study.objective import objective_value
from tuner.train.result import Outcome, TrialResult
from tuner.study.progress import trial_line
from tuner.train.trial_config import TrialConfig

ENDED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


class StudyWatch:
    """Polls a study and prints its progress; ``n_total`` is the study's budget, if any."""

    def __init__(self, study: optuna.Study, n_total: int | None = None, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.study = study
        self.n_total = n_total
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.quiet = quiet
        self.seen: set[int] = {t.number for t in study.get_trials(deepcopy=False, states=ENDED)}
        self.objective = study.user_attrs.get("objective", {})

    def poll(self) -> None:
        """Print the trials that ended since the last poll, then the status line."""
        if self.quiet:
            return
        trials = self.study.get_trials(deepcopy=False)
        for t in sorted(trials, key=lambda t: t.datetime_complete or datetime.datetime.max):
            if t.state in ENDED and t.number not in self.seen and "outcome" in t.user_attrs:
                self.seen.add(t.number)
                self._write(self._line(t), final=True)
        if self.live:
            self._write(self._status(trials), final=False)

    def _line(self, t: FrozenTrial) -> str:
        config = TrialConfig(**t.user_attrs["config"]) if "config" in t.user_attrs else TrialConfig()
        return trial_line(t.number, t.user_attrs["outcome"], self._value(t), t.user_attrs.get("best_metric"), config)

    def _value(self, t: FrozenTrial) -> float | None:
        if t.state is TrialState.COMPLETE:
            return t.value
        if t.state is TrialState.PRUNED and self.objective:
            return objective_value(TrialResult.from_attrs(t.user_attrs), self.objective["clock"], self.objective["cap_s"])
        return None

    def _status(self, trials: list[FrozenTrial]) -> str:
        done = sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)
        running = [t for t in trials if t.state is TrialState.RUNNING]
        reached = [t for t in trials if t.state is TrialState.COMPLETE and t.user_attrs.get("outcome") == Outcome.REACHED.value]
        best = min(reached, key=lambda t: t.value) if reached else None
        shown = f"{best.value:.3f} s (#{best.number})" if best is not None else "-"
        now = datetime.datetime.now()
        ages = " ".join(f"#{t.number} {(now - t.datetime_start).total_seconds():.0f}s" for t in running if t.datetime_start)
        total = f"/{self.n_total}" if self.n_total else ""
        return f"[{done}{total} done | best {shown} | {len(running)} running] {ages}"

    def _write(self, text: str, final: bool) -> None:
        if self.live:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        elif final:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Clear the status line (a terminal keeps only the finished trials' lines)."""
        if self.live and not self.quiet:
            self.stream.write("\r\033[K")
            self.stream.flush()
