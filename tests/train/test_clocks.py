"""The clock registry (tuner/train/clocks.py): one list of clocks, one robust formula."""

from __future__ import annotations

import dataclasses

import pytest

from tuner.errors import ConfigError
from tuner.study.experiment.load import Objective, experiment_from_dict
from tuner.train.clocks import CLOCK_CHOICES, CLOCK_FIELDS, CLOCKS, check_clock, robust_seconds
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.time_to_target import StopRule, TimeToTarget


def test_every_clock_names_a_field_of_an_evaluation_and_a_result() -> None:
    evaluation_fields = {f.name for f in dataclasses.fields(Evaluation)}
    result_fields = {f.name for f in dataclasses.fields(TrialResult)}
    for field in CLOCK_FIELDS.values():
        assert field in evaluation_fields
        assert f"{field}_to_target" in result_fields
    assert CLOCK_CHOICES == ("auto", *CLOCKS)  # the experiment file accepts exactly these: a clock, or auto
    for clock in CLOCK_CHOICES:
        assert experiment_from_dict({"task": "synthetic", "objective": {"clock": clock}}, "e.yaml").objective.clock == clock
    with pytest.raises(ConfigError, match="one of auto, robust, train, wall, cpu"):
        experiment_from_dict({"task": "synthetic", "objective": {"clock": "gpu"}}, "e.yaml")


def test_robust_is_steps_times_the_median_step_falling_back_to_train() -> None:
    assert robust_seconds(10, 0.5, 99.0) == 5.0
    assert robust_seconds(10, None, 7.0) == 7.0  # nothing measured yet
    assert robust_seconds(10, 0.0, 7.0) == 7.0  # a clock too coarse to see one step


def test_a_result_reads_each_clock_from_the_registry() -> None:
    r = TrialResult(Outcome.TIMEOUT, "", 0.9, train_s=4.0, wall_s=6.0, steps=10, median_step_s=0.3)
    assert r.elapsed("robust") == pytest.approx(3.0)
    assert r.elapsed("train") == 4.0 and r.elapsed("wall") == 6.0
    cpu = TrialResult(Outcome.TIMEOUT, "", 0.9, train_s=4.0, steps=10, median_step_cpu_s=0.2, cpu_train_s=2.5)
    assert cpu.elapsed("cpu") == pytest.approx(2.0)  # steps x the median CPU time per step
    assert TrialResult(Outcome.TIMEOUT, "", 0.9, train_s=4.0, steps=10).elapsed("robust") == 4.0


def test_an_unknown_clock_is_refused_with_the_list() -> None:
    with pytest.raises(ValueError, match="clock must be one of robust, train, wall, cpu, got 'gpu'"):
        check_clock("gpu")
    with pytest.raises(ValueError, match="got 'gpu'"):
        TimeToTarget(target=0.9, eval_every_samples=10, cap_s=1.0, clock="gpu")


def test_the_study_objective_becomes_a_stop_rule() -> None:
    objective = Objective(target=0.8, eval_every_samples=100, cap_s=3.0, clock="wall", max_samples=900)
    assert objective.stop_rule() == StopRule(target=0.8, eval_every_samples=100, cap_s=3.0, clock="wall", max_samples=900)
