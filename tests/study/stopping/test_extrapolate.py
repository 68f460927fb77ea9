"""Extrapolated stopping on made-up curves in an in-memory study: a curve that cannot catch the incumbent stops."""

from __future__ import annotations

import math

from test_capping import reached_trial
from test_pruning import OBJECTIVE, linear, study_with

from tuner.study.record import confirmation_attrs
from tuner.study.stopping.extrapolate import ExtrapolatedStop, projected_s
from tuner.train.result import Evaluation
from tuner.train.trial_config import TrialConfig


def test_a_falling_curve_is_projected_at_its_fastest_recent_rate() -> None:
    times = [1.0, 2.0, 3.0, 4.0]
    errors = [0.8, 0.4, 0.3, 0.2]  # 0.2 a second from 1 s to 4 s, the fastest to the last point
    assert projected_s(times, errors, 0.1) == 4.5
    assert projected_s(times, errors, 0.25) == 4.0  # there already
    assert projected_s([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], 0.1) == math.inf  # not falling


def run_curve(hooks: ExtrapolatedStop, study, times: list[float], metrics: list[float], attrs: dict | None = None):
    trial = study.ask()
    for key, value in (attrs or {}).items():
        trial.set_user_attr(key, value)
    hooks.trial_started(trial, TrialConfig())
    for i, (t, m) in enumerate(zip(times, metrics, strict=True), start=1):
        if m >= OBJECTIVE.target:
            return None
        stop = hooks.on_evaluation(None, Evaluation(100 * i, i, m, None, None, t, t, t))
        if stop is not None:
            return stop
    return None


def test_a_trial_whose_curve_cannot_catch_the_incumbent_stops_as_pruned() -> None:
    study = study_with()
    hooks = ExtrapolatedStop(OBJECTIVE, margin=1.5, refresh_s=0.0)
    hooks.study_started(study, None)
    assert run_curve(hooks, study, *linear(0.05, 0.1)) is None  # no incumbent yet: nothing to compare with
    reached_trial(study, 1.0)
    stop = run_curve(hooks, study, *linear(0.05, 0.1))  # 0.1 s apart, +0.005 each: 0.9 after 16 s
    assert stop is not None and stop.outcome.value == "pruned"
    assert "extrapolated" in stop.reason and "1.5 x the best time to target so far, 1.000 s (trial 1)" in stop.reason
    assert run_curve(hooks, study, *linear(0.9, 0.1)) is None  # reaches 0.9 near 1 s: well within 1.5 s


def test_measured_runs_are_never_stopped() -> None:
    study = study_with()
    reached_trial(study, 1.0)
    hooks = ExtrapolatedStop(OBJECTIVE, refresh_s=0.0)
    hooks.study_started(study, None)
    assert run_curve(hooks, study, *linear(0.0, 0.1, start=0.2), attrs=confirmation_attrs(0, 7)) is None
