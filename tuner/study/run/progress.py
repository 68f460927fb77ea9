"""The live progress display of a study, and its closing table."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TextIO

import optuna

from tuner.study.hooks import StudyHooks
from tuner.study.record import COMPLETE, ENDED, FINISHED, TrialRecord, best_reached, records
from tuner.study.scoring.units import amount, column, study_unit, with_unit
from tuner.train.result import Evaluation, TrialResult
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig


class StatusLine:
    """A display of finished lines under one status line: on a terminal the status line is
    redrawn in place; otherwise (CI, a log file) only the finished lines are printed."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.quiet = quiet

    def _write(self, text: str, final: bool) -> None:
        if self.quiet:
            return
        if self.live:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        elif final:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Clear the status line (a terminal keeps only the finished lines)."""
        if self.live and not self.quiet:
            self.stream.write("\r\033[K")
            self.stream.flush()


def rerun_mark(r: TrialRecord) -> str:
    """What a re-run of a configuration is, for its lines: ``race of 12``, ``confirm of 12``, ``baseline``; empty for a search trial."""
    if r.is_baseline:
        return "baseline"
    if r.is_confirmation:
        return f"confirm of {r.confirm_of}"
    return f"race of {r.race_of}" if r.race_of is not None else ""


class Progress(StatusLine, StudyHooks):
    """Trials done, best so far, and the current trial's accuracy.

    On a terminal one status line is redrawn in place; otherwise (CI, a log file) one
    line is printed per finished trial. Race, confirmation and baseline runs say so.
    """

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        super().__init__(stream, quiet)
        self.done = 0
        self.best: float | None = None
        self.best_number: int | None = None
        self.current = ""
        self.mark = ""
        self._last_draw = 0.0
        self.unit = "s"  # the objective's (tuner/study/scoring/units.py), once the study is known

    def _status(self) -> str:
        best = f"{with_unit(self.best, self.unit)} (#{self.best_number})" if self.best is not None else "-"
        return f"[{self.done} done | best {best}] {self.current}"

    def study_started(self, study: optuna.Study, experiment: object) -> None:
        self.done = len(study.get_trials(deepcopy=False, states=FINISHED))
        self.unit = study_unit(study)
        best = best_reached(study)
        if best is not None:
            self.best, self.best_number = best.value, best.number

    def note(self, line: str) -> None:
        """One line about the run between the trials' lines (the strategy ``pruner.name: auto`` chose)."""
        self._write(line, final=True)

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        self.config = config
        self.mark = rerun_mark(TrialRecord.of(trial))
        self.current = f"trial {trial.number}" + (f" ({self.mark})" if self.mark else "") + f": {config.short()}"
        self._write(self._status(), final=False)

    def on_evaluation(self, tt: TimeToTarget, ev: Evaluation) -> None:
        now = time.monotonic()
        if self.live and now - self._last_draw > 0.2:  # redraw at most 5 times a second
            self._last_draw = now
            self._write(self._status() + f" {tt.goal.metric} {ev.metric:.3f} at {ev.samples} samples, {ev.train_s:.1f} s", final=False)

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        number, config = trial.number, self.config
        self.done += 1
        if value is not None and result.reached and (self.best is None or value < self.best):
            self.best, self.best_number = value, number
        why = f"  ({result.reason})" if result.outcome.value == "failed" else ""  # said once, here, never as a traceback
        line = trial_line(
            number,
            result.outcome.value,
            value,
            result.best_metric,
            config,
            result.data_wait_share,
            self.mark,
            result.goal.metric,
            self.unit,
        )
        self._write(line + why, final=True)
        self.current = ""


def trial_line(
    number: int,
    outcome: str,
    value: float | None,
    best_metric: float | None,
    config: TrialConfig,
    data_wait_share: float | None = None,
    mark: str = "",
    metric: str = "accuracy",
    unit: str = "s",
) -> str:
    """The line printed for a finished trial (here, and by the display of parallel workers); ``mark``: ``rerun_mark``'s;
    ``metric``: the target's held-out metric, whose best the line shows; ``unit``: the objective value's."""
    shown = amount(value, unit) if value is not None else "-"
    wait = f"  data wait {data_wait_share:.0%}" if data_wait_share is not None else ""  # a Dataset task's loader
    acc = f"{best_metric:.3f}" if best_metric is not None else "-"  # never evaluated (screened, failed at once)
    head = f"trial {number:>3} {outcome:<11} value {shown:>7}  best {metric} {acc:>5}{wait}  "
    return head + (f"{mark}  " if mark else "") + config.short()


def top_trials_table(study: optuna.Study, k: int = 5, reached: bool = True) -> str:
    """The k best finished trials by objective value, as a plain-text table.

    Trials that reached the target (their value is a time), or with ``reached=False`` the
    ones stopped or missing it, whose value is a censored score (tuner/study/scoring/censoring.py):
    listed apart, so that a score is never read as a time beside them.
    """
    trials = sorted((r for r in records(study, COMPLETE) if r.value is not None and r.reached == reached), key=lambda r: r.value)
    metric = next((r.result.goal.metric for r in trials if r.result is not None), "accuracy")  # the study's target metric
    unit = study_unit(study)  # a score is censored seconds, or joules, or a cost: in the same unit, printed alike
    value = column("value", unit) if reached else "score"
    rows = [("trial", value, "outcome", "samples" if reached else f"best_{metric}", "data_wait", "config")]
    for r in trials[:k]:
        if reached:
            samples = r.result.samples_to_target if r.result is not None else None
        else:
            best = r.result.best_metric if r.result is not None else None
            samples = f"{best:.3f}" if best is not None else None
        outcome = r.outcome.value if r.outcome is not None else "?"
        wait = r.result.data_wait_share if r.result is not None else None
        rows.append(
            (
                str(r.number),
                amount(r.value, unit),
                outcome,
                str(samples or "-"),
                f"{wait:.0%}" if wait is not None else "-",
                r.config.short() if r.config else "",
            )
        )
    if len(rows) == 1:
        return "no finished trials" if reached else "none"
    if all(row[4] == "-" for row in rows[1:]):  # tensor tasks: no loader, no column
        rows = [row[:4] + row[5:] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows)


def outcomes_line(study: optuna.Study) -> str:
    """The ended trials by outcome, most first; with screened trials, the time their pre-screens took."""
    trials = [r for r in records(study, ENDED) if r.outcome is not None]
    counts = Counter(r.outcome.value for r in trials)
    line = "by outcome: " + (", ".join(f"{n} {outcome}" for outcome, n in counts.most_common()) or "none yet")
    screened = [r.result for r in trials if r.outcome.value == "screened" and r.result is not None]
    if screened:
        spent = sum(r.screen_s or 0.0 for r in screened)
        line += f"; {len(screened)} screened after {spent:.2f} s of timed steps in all (tuner/study/stopping/screen.py)"
    return line
