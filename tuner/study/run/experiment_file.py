"""An experiment file as every command loads it: read strictly, then the names it gives to
objectives and pruners checked against their registries.

The objectives and pruners are each declared once with their behaviour
(tuner/study/scoring/objectives.py, tuner/study/stopping/pruner_registry.py), in packages above
the experiment's settings, so their names are checked here, once the sections are read
(tuner/study/experiment/load.py: ``read_experiment``). A name that loads always scores and opens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment, read_experiment
from tuner.study.scoring.objectives import ALONE, OBJECTIVE_KINDS
from tuner.study.stopping.pruner_registry import PRUNER_KINDS, PRUNERS_FOR_SEVERAL

# objective.minimize's one-line error, and the experiment-file reference, say this is allowed.
MINIMIZE_ALLOWED = "one of " + ", ".join(ALONE) + ", or a list of two or more of " + ", ".join(OBJECTIVE_KINDS)
PRUNER_ALLOWED = "one of " + ", ".join(PRUNER_KINDS)  # auto: the budget rule picks one (tuner/study/stopping/budget_rule.py)


def load_experiment(path: str | Path) -> Experiment:
    """Load and check an experiment file; raises ConfigError naming file and key."""
    experiment = read_experiment(path)
    check_names(experiment)
    return experiment


def check_names(experiment: Experiment) -> None:
    """Refuse an objective or a pruner no registry declares, and Optuna's own pruners beside several objectives."""
    source, objective, pruning = experiment.source, experiment.objective, experiment.pruner
    if not _valid_minimize(objective.minimize):
        raise ConfigError(source, "objective.minimize", MINIMIZE_ALLOWED, objective.minimize)
    if pruning.name not in PRUNER_KINDS:
        raise ConfigError(source, "pruner.name", PRUNER_ALLOWED, pruning.name)
    if objective.several and not PRUNER_KINDS[pruning.name].several:
        allowed = " or ".join(PRUNERS_FOR_SEVERAL) + " with several objectives (Optuna's pruners refuse multi-objective studies)"
        raise ConfigError(source, "pruner.name", allowed, pruning.name)


def _valid_minimize(v: Any) -> bool:
    """One objective valued on the way to the target, or a list of two or more of any (a Pareto
    front, tuner/study/scoring/pareto.py)."""
    if isinstance(v, str):
        return v in ALONE
    names = v if isinstance(v, list) else []
    return len(names) >= 2 and all(isinstance(n, str) and n in OBJECTIVE_KINDS for n in names) and len(set(names)) == len(names)
