"""A training function's study: the searched dimensions its loop never read, and what its configurations show."""

from __future__ import annotations

import optuna

from tuner.study.config_reads import never_read_line, shown_params
from tuner.study.space.space import Choice, Fixed, Range, SearchSpace
from tuner.study.study_record import write_config_reads
from tuner.train.trial_config import TrialConfig

SPACE = SearchSpace(
    {
        "optimizer": Fixed("adamw"),
        "lr": Range(0.001, 0.1, log=True),
        "warmup_frac": Range(0.0, 0.2),
        "schedule": Choice(("constant", "warmup_cosine")),
        "n_layer": Choice((1, 2)),
    }
)


def test_one_line_names_the_searched_dimensions_never_read() -> None:
    line = never_read_line(SPACE, {"optimizer", "lr", "batch_size"})
    assert (
        line
        == "search space: the training function never read config.warmup_frac, config.schedule: searching them is wasted (fix or remove)"
    )
    assert never_read_line(SPACE, {"lr", "warmup_frac", "schedule"}) is None  # a fixed one need not be read; n_layer is its own


def test_a_dimension_the_trial_did_not_draw_is_not_named() -> None:
    # A constant schedule: its when: clause left warmup_frac out of the trial, so the loop had nothing to read.
    assert never_read_line(SPACE, {"optimizer", "lr", "schedule"}, drawn={"lr", "schedule", "n_layer"}) is None
    line = never_read_line(SPACE, {"optimizer", "lr"}, drawn={"lr", "schedule", "warmup_frac"})
    assert line is not None and "config.warmup_frac, config.schedule" in line


def test_configurations_show_the_named_and_the_read_dimensions_once_known() -> None:
    study = optuna.create_study()
    config = TrialConfig(optimizer="adamw", lr=0.02, hyper={"n_layer": 2})
    assert shown_params(study, config) == config.as_params()  # not a training function's study (or not yet known): all
    write_config_reads(study, {"read": ["batch_size", "lr", "optimizer"], "named": sorted(SPACE.dims)})
    assert shown_params(study, config) == {
        "optimizer": "adamw",
        "lr": 0.02,
        "warmup_frac": 0.05,
        "schedule": "constant",
        "batch_size": 100,
        "n_layer": 2,
    }
