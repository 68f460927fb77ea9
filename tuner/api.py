"""The Python API: load an experiment, run its study, read the winner, train once."""

from __future__ import annotations

import optuna

from tuner.orchestrate import Overrides, RunOptions, orchestrate
from tuner.study.experiment.load import Experiment
from tuner.study.record import best_reached
from tuner.study.reruns.winner import best_choice
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.run.prepare import prepare
from tuner.study.scoring.units import study_unit
from tuner.train.result import TrialResult
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig


def run(experiment: Experiment, show_progress: bool = False, tracking: bool = True, **overrides) -> optuna.Study:
    """Run or resume the study, logged to MLflow unless ``tracking=False``.

    Overrides are the CLI's flags (n_trials, timeout_s, seed, name, storage, tracking_uri). The
    run is `tuner run`'s (tuner/orchestrate/orchestrator.py): the stores are checked first (a
    ConfigError writes nothing), a signal records the running trial as interrupted and is raised
    again, and a study whose trials all fail alike raises ``StudyFailed``.
    """
    options = RunOptions.for_api(experiment.source, overrides=Overrides(**overrides), tracking=tracking, quiet=not show_progress)
    ran = orchestrate(options, experiment)
    if ran.error is not None:
        raise ran.error
    return ran.study


def best_configuration(study: optuna.Study) -> tuple[TrialConfig, float] | None:
    """What `tuner best` exports, with its objective value, or None if nothing reached the target.

    The confirmed winner (its median over fresh seeds) when the study has confirmation
    runs, else the fastest single trial. The value is in the objective's unit,
    ``objective_unit(study)``: seconds to the target for ``minimize: time`` (the default),
    joules for ``energy``, the currency (device hours without a price) for ``cost``.
    """
    if best_reached(study) is None:
        return None
    choice = best_choice(study)
    value = choice.confirmation.median if choice.confirmed else choice.trial.value  # a median over missed runs is no time
    return choice.trial.config, float(value)


def objective_unit(study: optuna.Study) -> str:
    """The unit of the study's objective values: ``s``, ``J``, a currency such as ``USD``, or ``device h``."""
    return study_unit(study)


def train_once(experiment: Experiment, config: TrialConfig | None = None, seed: int | None = None) -> TrialResult:
    """Train one configuration (default: the experiment's fixed one) to the target, once."""
    if config is None:
        params = experiment.search_space.fixed_params()
        if params is None:
            raise ValueError("the experiment's search space is not fully fixed; pass config=")
        config = TrialConfig.from_params(params)
    experiment = resolve_clock(experiment)  # clock: auto, for this machine (no study stores one)
    prepared = prepare(experiment)
    return train_trial(
        prepared.task, config, experiment.objective.stop_rule(), prepared.device, seed=experiment.seed if seed is None else seed
    )
