"""CUDA graphs (torch.compile's reduce-overhead mode) as a compile choice: kept on a CUDA
device, removed with a printed reason anywhere else, refused when fixed there."""

from __future__ import annotations

import pytest
import torch

from tuner.errors import ConfigError
from tuner.study.space.levers import runnable_levers
from tuner.study.space.space import Choice, parse_space
from tuner.tasks.registry import build_task
from tuner.train.trial_config import COMPILE_MODES, TrialConfig

SPACE = {"compile": {"choices": ["none", "default", "reduce-overhead"]}}


def test_reduce_overhead_is_a_compile_mode() -> None:
    assert "reduce-overhead" in COMPILE_MODES
    assert TrialConfig.from_params({"compile": "reduce-overhead"}).compile == "reduce-overhead"


def test_cuda_graphs_are_removed_on_a_cpu_with_the_reason() -> None:
    space, notes = runnable_levers(parse_space(SPACE, "x.yaml"), build_task("synthetic"), "x.yaml", torch.device("cpu"))
    assert space.dims["compile"] == Choice(("none", "default"))
    assert notes == ["removed compile=reduce-overhead: CUDA graphs need a CUDA device; this study runs on cpu"]


def test_cuda_graphs_stay_on_a_cuda_device() -> None:
    # The removal reads the device's kind only: nothing runs on it here.
    space, notes = runnable_levers(parse_space(SPACE, "x.yaml"), build_task("synthetic"), "x.yaml", torch.device("cuda", 0))
    assert space.dims["compile"] == Choice(("none", "default", "reduce-overhead")) and notes == []


def test_cuda_graphs_fixed_on_a_cpu_are_refused_by_key() -> None:
    with pytest.raises(ConfigError, match=r"search_space\.compile.*reduce-overhead \(CUDA graphs need a CUDA device"):
        runnable_levers(parse_space({"compile": "reduce-overhead"}, "x.yaml"), build_task("synthetic"), "x.yaml", torch.device("cpu"))
