"""An experiment fitted to a recorded table: its objective checked against the table's, and its
clock, seed, cap and strategy set as a study replayed on that table runs them
(tuner/simulate/simulation.py)."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass

from tuner.errors import ConfigError
from tuner.simulate.grid_space import fixed_in_grid
from tuner.simulate.table import Table, table_objective
from tuner.study.experiment.load import Experiment
from tuner.study.experiment.settings import AUTO, CAP_MULTIPLE
from tuner.study.objective_identity import REPLAYED, ObjectiveIdentity
from tuner.study.reruns.baseline import baseline_configuration
from tuner.study.run.auto_cap import with_cap
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.scoring.censoring import run_seconds
from tuner.study.stopping.budget_rule import RULE, Constants, apply, choose, trial_lengths


@dataclass(frozen=True)
class Replay:
    """How recorded trials stand for this study's: workers, a time scale, a per-trial start-up; and
    the budget rule's constants a study's ``pruner.name: auto`` resolves under (benchmarks/leave_one_out.py
    hands each candidate here)."""

    workers: int = 1
    time_scale: float = 1.0
    overhead_s: float = 0.0
    rule: Constants = RULE


def check_table(experiment: Experiment, table: Table, time_scale: float = 1.0) -> None:
    """The experiment's objective must be the table's, its cap at most the recorded one (times
    ``time_scale``: a scaled table stands for a longer job, and the experiment states that job's cap;
    ``auto`` as ``auto_cap_on`` resolves it); ConfigError otherwise."""
    experiment = resolve_clock(experiment, table.objective)  # clock: auto replays the table's, as a resume keeps a study's
    mine, recorded = table_objective(experiment), table.objective
    where = f", as the table {table.source} was recorded"
    ObjectiveIdentity.stored(recorded).refuse_other(ObjectiveIdentity.of(experiment), experiment.source, where, REPLAYED)
    longest = table.cap_s * time_scale
    cap_s, given = mine["cap_s"], mine["cap_s"]
    if experiment.objective.cap_auto:
        cap_s = auto_cap_on(table, experiment, time_scale)
        given = f"auto = {cap_s:.3g} s ({CAP_MULTIPLE:g} x the baseline's median time on the table)"
    if cap_s > longest * (1 + 1e-9):
        scaled = f" x the time scale {time_scale:g}" if time_scale != 1 else ""
        raise ConfigError(experiment.source, "objective.cap_s", f"at most the table's {table.cap_s}{scaled} (its trials stop there)", given)


def auto_cap_on(table: Table, experiment: Experiment, time_scale: float = 1.0) -> float:
    """What ``cap_s: auto`` comes to on ``table``: ``CAP_MULTIPLE`` x the baseline's median recorded time
    (the table's median trial when it holds no baseline run), scaled: what the table must hold, and
    what the budget rule's rungs are set from in a simulated study, whose own cap comes from its
    baseline's first run, as in `tuner run` (tuner/study/run/auto_cap.py)."""
    runs = table.runs(baseline_configuration(experiment))
    typical = statistics.median(run_seconds(r.result, experiment.objective) for r in runs) if runs else table.trial_length_s()
    return CAP_MULTIPLE * typical * time_scale


def fitted(experiment: Experiment, table: Table, seed: int, replay: Replay) -> Experiment:
    """``experiment`` as one study on ``table`` runs it: the table's clock for ``auto``, ``seed``, and
    ``pruner.name: auto``'s strategy for the budget in trial-lengths under ``replay.rule``, the
    table's median trial standing for the baseline's length (as in ``budget_of``)."""
    experiment = dataclasses.replace(resolve_clock(experiment, table.objective), seed=seed)
    workers, rule = replay.workers, replay.rule
    length_s = table.trial_length_s(fixed_in_grid(table, experiment.search_space)) * replay.time_scale + replay.overhead_s
    lengths = trial_lengths(experiment.budget.timeout_s, workers, length_s)
    strategy = choose(lengths, workers, rule)
    if not experiment.objective.cap_auto:
        return apply(experiment, strategy, lengths, workers, rule)
    # The rule sets its rungs from the cap the table gives; the study still runs its baseline first
    # and sets its cap from that run, as `tuner run` does with ``cap_s: auto``.
    estimate = auto_cap_on(table, experiment, replay.time_scale)
    return with_cap(apply(with_cap(experiment, estimate), strategy, lengths, workers, rule), AUTO)
