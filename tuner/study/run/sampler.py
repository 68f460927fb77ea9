"""The study's sampler, made from the experiment's ``sampler`` settings and seeded."""

from __future__ import annotations

import warnings

import optuna

from tuner.study.experiment.load import Experiment


def make_sampler(experiment: Experiment, offset: int = 0) -> optuna.samplers.BaseSampler:
    """The named sampler, seeded; ``offset`` keeps a resumed study from replaying its draws."""
    seed = experiment.seed + offset
    s = experiment.sampler
    if s.name == "tpe":
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # group=True
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True, n_startup_trials=s.n_startup_trials)
    if s.name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if s.name == "qmc":
        return optuna.samplers.QMCSampler(seed=seed)
    return optuna.samplers.GPSampler(seed=seed, n_startup_trials=s.n_startup_trials)
