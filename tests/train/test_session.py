"""A training function of one's own reporting to a session (tuner/train/session.py): the
clocks, the answers, and every contract breach as a one-line failed outcome."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tuner.tasks.registry import build_task
from tuner.train.result import Outcome
from tuner.train.target import Target
from tuner.train.time_to_target import StopRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "own_job"
CPU = torch.device("cpu")
RULE = StopRule(target=0.9, eval_every_samples=256, cap_s=10.0)


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))


def run(function: str, rule: StopRule = RULE, **hyper: object):
    task = build_task(f"own_job_mod:{function}")
    return train_trial(task, TrialConfig(lr=1e-2, batch_size=64, hyper=hyper), rule, CPU, seed=0)


def test_an_own_loop_reaches_the_target_and_its_hyperparameters_arrive() -> None:
    import own_job_mod

    own_job_mod.BUILT.clear()
    result = run("own_loop", depth=3, dropout=0.25)
    assert result.outcome is Outcome.REACHED, result.reason
    assert result.samples_to_target is not None and result.samples_to_target % 256 < 64  # reported at the cadence
    [model] = own_job_mod.BUILT
    assert sum(isinstance(m, torch.nn.Linear) for m in model) == 4  # depth 3 + the head
    assert {m.p for m in model if isinstance(m, torch.nn.Dropout)} == {0.25}
    assert result.steps > len(result.evaluations)  # due() after every step counts true steps


def test_setup_and_evaluation_are_not_training_time() -> None:
    result = run("slow_setup", setup_s=0.3)
    assert result.outcome is Outcome.REACHED, result.reason
    assert result.setup_s >= 0.3
    evaluations = len(result.evaluations)
    assert evaluations >= 5
    # Each evaluation slept 0.05 s after pause(): on the wall clock, not on the train clock.
    assert result.wall_s >= 0.3 + 0.05 * evaluations
    assert result.train_s < 0.05 * evaluations


def test_a_function_that_returns_after_reporting_is_a_censored_miss() -> None:
    result = run("gives_up")
    assert result.outcome is Outcome.TIMEOUT
    assert result.reason == "the training function returned after 300 samples without reaching the target, at best 0.2000"
    assert result.best_metric == pytest.approx(0.2)


def test_the_session_answers_stop_with_the_outcome_and_reason() -> None:
    from tuner.train.session import Session
    from tuner.train.time_to_target import TimeToTarget

    tt = TimeToTarget(target=0.9, eval_every_samples=100, cap_s=10.0)
    tt.start()
    session = Session(tt, TrialConfig(), CPU, 0)
    session.start_training()
    assert session.report(0.5, 100).stop is False
    answer = session.report(torch.tensor(0.95), 200)
    assert (answer.stop, answer.outcome) == (True, "reached") and answer.reason.startswith("reached 0.9500")
    assert session.report(0.99, 300) == answer  # after the end, the same answer
    assert tt.result().samples_to_target == 200


MISTAKES = {
    "never_reports": (
        "SessionError: the training function returned without reporting; call session.report(metric, samples) every so many samples"
    ),
    "reports_a_string": "SessionError: session.report got the metric '0.2' at 200 samples; expected a number",
    "samples_go_down": "SessionError: session.report got 100 samples, fewer than the 200 reported before; pass the running total",
    "returns_a_value": "SessionError: the training function returned a float; expected None (results go through session.report)",
    "swallows_the_error": "SessionError: session.report got the metric None at 100 samples; expected a number",
}


@pytest.mark.parametrize("function", MISTAKES)
def test_each_mistake_is_a_failed_trial_with_one_line(function: str) -> None:
    result = run(function)
    assert result.outcome is Outcome.FAILED
    assert result.reason == MISTAKES[function]
    assert "\n" not in result.reason and "Traceback" not in result.reason


def test_a_loop_whose_loss_becomes_nan_diverged_a_result_not_a_failure() -> None:
    """A real loop at a rate far too high, judged by its held-out loss: the NaN it reports ends the trial as diverged."""
    result = run("diverging_loop", StopRule(target=Target(0.1, "loss", "minimize"), eval_every_samples=256, cap_s=10.0))
    assert result.outcome is Outcome.DIVERGED, result.reason
    assert result.reason.startswith("non-finite held-out metric (") and result.reason.endswith(" samples")
    assert len(result.evaluations) >= 1 and not math.isfinite(result.evaluations[-1].metric)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_report_never_reaches_and_ends_as_diverged(value: float) -> None:
    """-inf would "reach" a minimized loss, +inf a maximized accuracy: neither does."""
    from tuner.train.session import Session
    from tuner.train.time_to_target import TimeToTarget

    for target in (Target(0.9, "accuracy", "maximize"), Target(0.5, "loss", "minimize")):
        tt = TimeToTarget(target=target, eval_every_samples=100, cap_s=10.0)
        tt.start()
        session = Session(tt, TrialConfig(), CPU, 0)
        session.start_training()
        answer = session.report(value, 100)
        assert (answer.stop, answer.outcome) == (True, "diverged")
        assert answer.reason == f"non-finite held-out metric ({value}) at 100 samples"


def test_a_function_that_raises_on_some_values_fails_with_the_error_first_line() -> None:
    result = run("own_loop", lr_scale=-1.0)
    assert result.outcome is Outcome.FAILED
    assert result.reason == "ValueError: lr_scale must be > 0, got -1.0"
