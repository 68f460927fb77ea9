"""Racing on seeds during the search: a configuration close to the incumbent is re-run at once.

The fastest single trial of a noisy study is a lucky draw (docs/stopping.md), and
during the search that draw does harm twice: it caps every later trial against a time the
configuration cannot repeat, and it teaches the sampler that its region is better than it
is. Racing, in the spirit of SMAC's intensification, kept simple:

- When a search trial reaches the target within ``race.margin`` x the incumbent (or sets
  a new incumbent), its configuration is enqueued ``race.seeds`` more times, as ordinary
  trials marked ``race_of=<trial>`` with seeds shared by every raced configuration
  (tuner/study/record.py writes and reads the marks). Optuna takes queued trials before
  it samples new ones, so the race runs run next, on any worker.
- Optuna cannot change a COMPLETE trial's value, so the sampler is never told a median.
  It does not need to be: each race run is a COMPLETE trial with the same parameters and
  its own value, so TPE sees all of a configuration's draws, and a lucky one is outvoted
  by its siblings in TPE's density of good trials.
- The incumbent (capping at the incumbent, the progress line, `tuner best` before
  confirmation, confirmation's candidates) is the best *median* over a configuration's
  runs once it has been raced, else its single time (``best_configuration``).
- Race runs are measured like confirmation runs: never capped or pruned, since a capped
  run's value is only a bound and would pull the median down. They come on top of a trial
  budget, which counts searched configurations (tuner/study/storage/budget.py): ``n_trials:
  N`` searches N configurations, plus their race runs. Under a time budget they take at
  most ``RACE_SHARE`` of the search's time (``race_room``); race runs still queued when the
  search stops run before the confirmation runs (or first when the study resumes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from tuner.study import record
from tuner.study.experiment.load import Experiment, Race
from tuner.study.hooks import StudyHooks
from tuner.study.record import TrialRecord
from tuner.study.reruns.seed_values import OverSeeds
from tuner.train.result import TrialResult

# Race seeds sit far from the search's (experiment seed + trial number) and from
# confirmation's (+100 000); every raced configuration gets the same ones.
SEED_OFFSET = 200_000
# Under a time budget, the most of the search's time that race runs may take: the rest searches.
RACE_SHARE = 0.25


def race_seeds(base_seed: int, n: int) -> list[int]:
    return [base_seed + SEED_OFFSET + i for i in range(n)]


@dataclass(frozen=True)
class ConfigurationTimes(OverSeeds):
    """A configuration's completed runs in the search (its first trial and its race runs)."""

    trial: TrialRecord  # the search trial that first ran it
    values: tuple[float, ...]  # objective values of every completed run, censored when missed
    reached: int  # runs that reached the target
    fastest: TrialRecord | None = None  # its fastest run that reached the target (what `tuner train` repeats)

    @property
    def raced(self) -> bool:
        return len(self.values) > 1


def configurations(trials: Iterable[TrialRecord]) -> list[ConfigurationTimes]:
    """Completed search and race runs grouped by configuration (confirmation and baseline runs left out).

    Only configurations that reached the target at least once are listed: the others have
    no time to target, only censored values.
    """
    groups: dict[str, list[TrialRecord]] = {}
    for r in sorted(trials, key=lambda r: r.number):
        if r.state is TrialState.COMPLETE and not r.is_measurement and r.value is not None:
            # A trial stored without its configuration (an older study) stands alone.
            groups.setdefault(r.config_key or f"#{r.number}", []).append(r)
    out = []
    for runs in groups.values():
        if any(r.reached for r in runs):
            first = next((r for r in runs if r.race_of is None), runs[0])
            fastest = min((r for r in runs if r.reached), key=lambda r: (r.value, r.number))
            out.append(ConfigurationTimes(first, tuple(float(r.value) for r in runs), sum(r.reached for r in runs), fastest))
    return out


def best_configuration(trials: Iterable[TrialRecord]) -> ConfigurationTimes | None:
    """The incumbent: the configuration with the best median (a single time when not raced)."""
    return min(configurations(trials), key=lambda c: (c.median, c.trial.number), default=None)


def best_in_study(study: optuna.Study) -> ConfigurationTimes | None:
    """``best_configuration`` over the study's storage: every worker's trials count."""
    return best_configuration(record.records(study, record.COMPLETE))


def should_race(trials: list[TrialRecord], candidate: TrialRecord, value: float, race: Race | None) -> bool:
    """True when ``candidate`` (a search trial that just reached the target in ``value``
    seconds) comes within ``race.margin`` x the incumbent and was not raced already."""
    if race is None or not candidate.reached or candidate.is_measurement or candidate.race_of is not None:
        return False
    key = candidate.config_key
    if key is None:
        return False
    others = [r for r in trials if r.number != candidate.number]
    if any(r.race_of is not None and r.state is not TrialState.FAIL and r.config_key == key for r in others):
        return False  # raced already (the same configuration drawn twice, or queued by another worker)
    best = best_configuration(others)
    return best is None or value <= best.median * race.margin


def enqueue_race(study: optuna.Study, candidate: TrialRecord, race: Race, base_seed: int, room: int | None = None) -> int:
    """Queue the race runs of ``candidate``'s configuration (at most ``room``); returns how many were queued."""
    seeds = race_seeds(base_seed, race.seeds)[: room if room is not None else None]
    for seed in seeds:
        study.enqueue_trial(dict(candidate.params), user_attrs=record.race_attrs(candidate.number, seed))
    return len(seeds)


def race_room(trials: list[TrialRecord], run_s: float, budget_s: float | None) -> int | None:
    """How many more race runs of ``run_s`` seconds fit in ``budget_s`` (None: no time budget, no bound).

    Finished race runs count at their wall time, queued and running ones at ``run_s`` each.
    """
    if budget_s is None:
        return None
    races = [r for r in trials if r.race_of is not None and r.state in record.NOT_FAILED]
    spent = sum(r.result.wall_s if r.result is not None else run_s for r in races)
    return max(0, int((budget_s - spent) // max(run_s, 1e-9)))


class RacingHooks(StudyHooks):
    """Enqueues the race runs of each search trial that comes close to the incumbent."""

    def __init__(self, race: Race | None, base_seed: int, search_s: float | None = None) -> None:
        self.race = race
        self.base_seed = base_seed
        self.study: optuna.Study | None = None
        # Under a time budget, the search's seconds (None: no time budget): race runs take at most RACE_SHARE of them.
        self.budget_s = search_s * RACE_SHARE if search_s is not None else None

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        self.study = study

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        if self.study is None or self.race is None or value is None or not result.reached:
            return
        candidate = TrialRecord.of(trial)  # live: its result is written, its state not yet COMPLETE
        trials = record.records(self.study)
        if should_race(trials, candidate, value, self.race):
            room = race_room(trials, result.wall_s, self.budget_s)  # a race run takes about as long as the run it repeats
            if room is None or room > 0:
                enqueue_race(self.study, candidate, self.race, self.base_seed, room)
