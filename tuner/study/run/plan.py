"""What a run does with its budget: how many configurations to search, and whether it confirms."""

from __future__ import annotations

from dataclasses import dataclass

import optuna

from tuner.study.experiment.load import Experiment
from tuner.study.record import finished_search_trials
from tuner.study.reruns.baseline import baseline_configuration, baseline_due
from tuner.study.reruns.confirmation import confirmation_due, measured_seeds

DEFAULT_N_TRIALS = 20


def trials_wanted(experiment: Experiment) -> int | None:
    """The search trials the study should hold: ``budget.n_trials``, none with only a time budget, else the default."""
    budget = experiment.budget
    return DEFAULT_N_TRIALS if budget.n_trials is None and budget.timeout_s is None else budget.n_trials


@dataclass(frozen=True)
class Plan:
    """What this run does, fixed once when the study is open.

    ``n_search`` counts the searched configurations the study should hold (None: a time
    budget only); race, confirmation and baseline runs come on top. ``search`` is False
    once the searched configurations are all there.
    """

    n_search: int | None
    search: bool
    confirm: bool

    @classmethod
    def of(cls, study: optuna.Study, experiment: Experiment, search: bool) -> Plan:
        wanted = trials_wanted(experiment)
        confirm = experiment.confirm.after_search or not search
        if wanted is None:
            return cls(None, search, confirm)
        return cls(wanted, search and wanted > len(finished_search_trials(study)), confirm)

    def has_work(self, study: optuna.Study, experiment: Experiment) -> bool:
        """Search trials to run, or confirmation or baseline runs missing."""
        reruns_due = confirmation_due(study, experiment.confirm, experiment.seed) or _baseline_due(study, experiment)
        return self.search or (self.confirm and reruns_due)


def _baseline_due(study: optuna.Study, experiment: Experiment) -> bool:
    return baseline_due(study, baseline_configuration(experiment), measured_seeds(study, experiment.confirm, experiment.seed))
