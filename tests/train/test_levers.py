"""The efficiency levers (tuner/train/levers.py): each one trains a trial to the target, and
does what it says (accumulation keeps the step's gradient, a growing batch cuts the feed's
batch into more steps, compilation is timed apart and fails as a trial, not a study)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import CPU, FAST
from torch import nn

from tuner.study.scoring.censoring import objective_value
from tuner.tasks.base import Task
from tuner.train.levers import chunk_sizes, has_conv2d, lr_multiplier, pass_sizes, ramp_splits, split
from tuner.train.result import Outcome
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

GOOD = TrialConfig(lr=1e-2, batch_size=64)
STOP = FAST.stop_rule()


def image_task() -> Task:
    """A 2-d convolutional model on 8x8 two-channel images whose class is the brighter channel."""
    g = torch.Generator().manual_seed(0)

    def data(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.randint(0, 2, (n,), generator=g)
        x = torch.randn(n, 2, 8, 8, generator=g) * 0.5
        x[torch.arange(n), y] += 0.6
        return x, y

    (train_x, train_y), (test_x, test_y) = data(2000), data(500)

    def build_model(width: float) -> nn.Module:
        c = max(1, int(8 * width))
        return nn.Sequential(nn.Conv2d(2, c, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 2))

    return Task(name="images", train_x=train_x, train_y=train_y, test_x=test_x, test_y=test_y, build_model=build_model)


@pytest.mark.parametrize(
    "lever",
    [
        {"accumulate": 4},
        {"lr_scaling": "linear", "lr": 4e-2},
        {"lr_scaling": "sqrt", "lr": 2e-2},
        {"ramp_start": 0.25, "ramp_frac": 0.1},
        {"ramp_start": 0.25, "ramp_frac": 0.1, "accumulate": 2, "lr_scaling": "linear", "lr": 4e-2},
    ],
)
def test_each_lever_reaches_the_target(synthetic: Task, lever: dict) -> None:
    r = train_trial(synthetic, dataclasses.replace(GOOD, **lever), STOP, CPU, seed=0)
    assert r.outcome is Outcome.REACHED, r.reason
    assert r.compile_s == 0.0


def test_channels_last_reaches_the_target_on_a_convolutional_model() -> None:
    task = image_task()
    assert has_conv2d(task.build_model(1.0))
    eager = train_trial(task, GOOD, STOP, CPU, seed=0)
    last = train_trial(task, dataclasses.replace(GOOD, channels_last=True), STOP, CPU, seed=0)
    assert last.outcome is eager.outcome is Outcome.REACHED, (last.reason, eager.reason)
    assert last.samples_to_target == eager.samples_to_target  # a layout changes the speed, not the arithmetic's result to the crossing


def test_accumulation_is_the_same_step_as_one_big_pass(synthetic: Task) -> None:
    """Four passes of 16 give the gradient of one pass of 64 (to float rounding): same curve."""
    one = train_trial(synthetic, GOOD, STOP, CPU, seed=2)
    four = train_trial(synthetic, dataclasses.replace(GOOD, accumulate=4), STOP, CPU, seed=2)
    assert [e.samples for e in one.evaluations] == [e.samples for e in four.evaluations]
    assert [e.metric for e in one.evaluations] == pytest.approx([e.metric for e in four.evaluations], abs=0.01)
    assert one.steps == four.steps  # optimizer steps, not passes


def test_a_growing_batch_takes_more_smaller_steps_first(synthetic: Task) -> None:
    ramp = dataclasses.replace(GOOD, ramp_start=0.25, ramp_frac=0.5, horizon_samples=4000)
    assert [ramp_splits(ramp, s) for s in (0, 600, 1200, 1900, 2100)] == [4, 4, 2, 2, 1]
    r = train_trial(synthetic, ramp, STOP, CPU, seed=0)
    assert r.steps > r.samples // 64  # the first samples went in quarter and half batches


def test_the_learning_rate_follows_the_batch() -> None:
    linear, sqrt = TrialConfig(lr_scaling="linear"), TrialConfig(lr_scaling="sqrt")
    assert lr_multiplier(linear, 512) == 2.0 and lr_multiplier(sqrt, 1024) == 2.0
    assert lr_multiplier(TrialConfig(), 512) == 1.0


def test_split_sizes_cover_every_pass() -> None:
    x, y = torch.arange(100), torch.arange(100)
    assert {len(a) for a, _ in split(x, y, 3)} == chunk_sizes(100, 3) == {34, 32}
    config = TrialConfig(batch_size=64, accumulate=2, ramp_start=0.5, ramp_frac=0.2)
    assert pass_sizes(config, 64) == {16, 32}


def test_compilation_is_setup_timed_apart_and_reaches(synthetic: Task) -> None:
    # A cold compile takes seconds on this CPU: uncharged here, so the 5-s cap does not end it.
    rule = dataclasses.replace(STOP, charge_setup=False)
    r = train_trial(synthetic, dataclasses.replace(GOOD, compile="default"), rule, CPU, seed=0)
    assert r.outcome is Outcome.REACHED, r.reason
    assert r.compile_s > 0 and r.setup_s >= r.compile_s
    assert r.wall_s_to_target >= r.compile_s + r.train_s_to_target  # on the wall clock, not the train clock
    charged = objective_value(r, FAST)
    uncharged = objective_value(r, dataclasses.replace(FAST, charge_setup=False, cap_s=60.0))
    assert uncharged == pytest.approx(r.robust_s_to_target)
    assert charged == pytest.approx(min(FAST.cap_s, r.robust_s_to_target + r.compile_s))


def test_a_failed_compilation_fails_the_trial_with_the_reason(synthetic: Task, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor import config as inductor

    monkeypatch.setattr(inductor.cpp, "cxx", ("/nonexistent/c++",))  # a machine without a working C++ compiler
    monkeypatch.setattr(inductor, "fx_graph_cache", False)  # no kernel compiled earlier to fall back on
    torch._dynamo.reset()  # nor a graph compiled earlier in this process
    r = train_trial(synthetic, dataclasses.replace(GOOD, compile="default"), STOP, CPU, seed=0)
    assert r.outcome is Outcome.FAILED
    assert r.reason.startswith("CompilationFailed: torch.compile(mode=default) failed"), r.reason
