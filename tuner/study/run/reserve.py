"""The confirmation and baseline runs: the order they are queued in, and the time a budget keeps for them.

Both are measured on the confirmation seeds, and the summary's ratio compares them seed for
seed. They are queued seed by seed, the baseline first on each seed and then every
configuration to confirm on it (``enqueue_measurements``), so that a budget that ends early
leaves both sides with the same seeds rather than the baseline with none.

Under a time budget the search stops early enough to leave them the time they need
(``Reserve``): every run still missing or queued at its expected length, from the study's own
trials (a configuration's longest run so far; a configuration not yet chosen at the median
of the runs that reached the target; the baseline, before it ran, at more than the longest a
trial may take), with some slack, re-estimated before each search trial starts. The reserve is at least
``confirm.budget_share`` of the budget and at most ``MAX_SHARE`` of it (or budget_share, if higher).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.record import ENDED, QUEUED, TrialRecord, baseline_attrs, confirmation_attrs, records
from tuner.study.reruns.baseline import baseline_configuration, missing_seeds, pending_baseline
from tuner.study.reruns.confirmation import candidates, measured_seeds, missing_runs, pending_runs
from tuner.study.storage.deadline import Deadline

# The search keeps at least half of a time budget, whatever the measurement runs would need.
MAX_SHARE = 0.5
# A run costs more than its measured wall time (building the model, recording it), and a
# seed may be slower: every expected length is taken this much longer.
SLACK = 1.25
# The baseline before its first run: it may run to its cap, which is on the objective's
# clock; setup and evaluations come on top of it.
UNKNOWN_RUN = 1.5


def enqueue_measurements(study: optuna.Study, experiment: Experiment) -> int:
    """Queue the confirmation and baseline runs still missing, seed by seed; returns how many are queued in all."""
    settings = experiment.confirm
    seeds = measured_seeds(study, settings, experiment.seed)
    confirm = missing_runs(study, settings, experiment.seed)
    baseline = baseline_configuration(experiment)
    baseline_missing = set(missing_seeds(study, baseline, seeds))
    for seed in seeds:
        if seed in baseline_missing:
            study.enqueue_trial({}, user_attrs=baseline_attrs(baseline.as_dict(), seed))
        for trial, _ in (pair for pair in confirm if pair[1] == seed):
            study.enqueue_trial(dict(trial.params), user_attrs=confirmation_attrs(trial.number, seed))
    return pending_runs(study) + pending_baseline(study)


def run_s(r: TrialRecord) -> float:
    """What a run took: its training's wall time, or from its start to its end in the storage when
    longer (building the task's model and recording the trial come on top; on a simulation's
    virtual clock the storage's times are the host's, shorter, and the wall time stands)."""
    start, end = getattr(r.trial, "datetime_start", None), getattr(r.trial, "datetime_complete", None)
    stored = (end - start).total_seconds() if start is not None and end is not None else 0.0
    return max(r.result.wall_s if r.result is not None else 0.0, stored)


@dataclass(frozen=True)
class RunLengths:
    """Expected wall seconds of one run, from the trials a study has ended."""

    longest: float  # the longest a trial may take: the cap, or more if a trial here took more
    typical: float  # the median run that reached the target (``longest`` before any did)
    own: dict[str, float]  # each configuration's longest run so far, by config key

    @classmethod
    def of(cls, trials: list[TrialRecord], cap_s: float) -> RunLengths:
        ended = [r for r in trials if r.state in ENDED and r.result is not None and r.config_key is not None]
        longest = max([cap_s, *(run_s(r) for r in ended)])
        reached = [run_s(r) for r in ended if r.reached and not r.is_baseline]
        own: dict[str, float] = {}
        for r in ended:
            own[r.config_key] = max(own.get(r.config_key, 0.0), run_s(r))
        return cls(longest, statistics.median(reached) if reached else longest, own)

    @property
    def unknown(self) -> float:
        """A run nothing is known of yet (the baseline before its first run)."""
        return self.longest * UNKNOWN_RUN

    def of_key(self, key: str | None, default: float) -> float:
        """The configuration's expected length with slack; ``default`` for one that has not run yet."""
        return self.own.get(key or "", default) * SLACK


def needed_s(study: optuna.Study, experiment: Experiment, unfound: int | None = None) -> float:
    """Seconds the confirmation and baseline runs still missing or queued are expected to take.

    ``unfound``: how many configurations the search has yet to find are counted (None: as many
    as the top-k lacks, or none with a clear margin)."""
    trials = records(study)
    lengths = RunLengths.of(trials, experiment.objective.cap_s)
    by_number = {r.number: r for r in trials}
    settings = experiment.confirm
    to_confirm = [trial.config_key for trial, _ in missing_runs(study, settings, experiment.seed)]
    queued = [by_number.get(r.confirm_of) for r in trials if r.state in QUEUED and r.is_confirmation]
    to_confirm += [original.config_key for original in queued if original is not None]
    # The configurations the search has not found yet; with a clear margin, only those it found
    # and did not clearly win with are re-run (tuner/study/reruns/confirmation.py: settled).
    if unfound is None:
        unfound = 0 if settings.clear_margin is not None else max(0, settings.top_k - len(candidates(study, settings.top_k)))
    unchosen = unfound * settings.seeds
    baseline = baseline_configuration(experiment)
    baseline_runs = len(missing_seeds(study, baseline, measured_seeds(study, settings, experiment.seed))) + pending_baseline(study)
    return (
        sum(lengths.of_key(key, lengths.typical) for key in to_confirm)
        + unchosen * lengths.typical * SLACK
        + baseline_runs * lengths.of_key(TrialRecord.key_of(baseline), lengths.unknown)
    )


class Reserve:
    """What a run's time budget keeps for its confirmation and baseline runs, in seconds."""

    def __init__(self, experiment: Experiment, timeout_s: float, workers: int = 1) -> None:
        self.experiment = experiment
        # The runs are queued for every worker to take: N workers that share the study need 1/N of
        # the time one would (measured on a recorded table, benchmarks/search_quality_table.py: kept
        # whole, 16 workers spent most of a 50-trial budget waiting to confirm).
        self.workers = max(1, workers)
        self.low_s = experiment.confirm.budget_share * timeout_s
        self.high_s = max(MAX_SHARE, experiment.confirm.budget_share) * timeout_s
        self.unfound: int | None = None

    @classmethod
    def searching_on(cls, experiment: Experiment, workers: int = 1) -> Reserve:
        """The reserve of a search that goes on after the measurement runs, in the time they left:
        what the runs still missing need and one configuration found from now on, with no share of the budget kept."""
        reserve = cls(experiment, 0.0, workers)
        reserve.high_s, reserve.unfound = float("inf"), 1
        return reserve

    def seconds(self, study: optuna.Study) -> float:
        return min(self.high_s, max(self.low_s, needed_s(study, self.experiment, self.unfound) / self.workers))


class SearchDeadline(Deadline):
    """The search's deadline: the run's end less the reserve, re-estimated before each trial starts.

    A search trial starts whenever search time is left, however long the cap: the deadline
    ends it as ``timeout``, scored as a miss (tuner/study/run/objective.py). A cap is a limit
    on a trial, never a reason not to start one (a cap longer than the time left stalled studies).
    """

    def __init__(self, seconds: float, cap_s: float, reserve: Reserve | None, now: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(seconds, cap_s, now)
        self.end = self.at
        self.reserve = reserve

    def fits_another(self, study: optuna.Study) -> bool:
        if self.reserve is not None:
            self.at = self.end - self.reserve.seconds(study)
        fits = self.left() > 0
        self.stopped_early = self.stopped_early or not fits
        return fits


class MeasureDeadline(Deadline):
    """The deadline of the queued runs: the run's end; the next run starts when its own expected length fits.

    The reserve was sized from each run's expected length, so the longest trial of the study
    (``Deadline``'s rule) would turn the last runs away from time kept for them.
    """

    def trial_needs(self, study: optuna.Study) -> float:
        trials = records(study)
        waiting = [r for r in trials if r.state in QUEUED]
        if not waiting:
            return self.cap_s
        lengths, by_number, run = RunLengths.of(trials, self.cap_s), {r.number: r for r in trials}, waiting[0]
        if run.is_baseline:
            return lengths.of_key(run.config_key, lengths.unknown)
        original = by_number.get(run.confirm_of if run.confirm_of is not None else run.race_of if run.race_of is not None else -1)
        return lengths.of_key(original.config_key if original is not None else None, lengths.longest)
