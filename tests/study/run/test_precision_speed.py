"""Reduced precisions slower than fp32 on a CPU, removed before the study starts (tuner/study/run/precision_speed.py)."""

from __future__ import annotations

import re
from pathlib import Path

import torch
from conftest import synthetic_experiment

from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.precision_speed import SLOWER, slow_precisions, without_slow_precisions
from tuner.study.run.prepare import prepare
from tuner.study.space.space import Choice, Fixed

CPU = torch.device("cpu")


def test_a_reduced_precision_goes_only_when_slower_than_fp32_at_every_shape() -> None:
    small, large = {"fp32": 1.0, "bf16": 1.6, "fp16": 1.1}, {"fp32": 2.0, "bf16": 30.0, "fp16": 30.0}
    assert slow_precisions([small, large]) == {"bf16": "its training steps take 1.6-15.0x fp32's on this CPU"}
    assert slow_precisions([{"fp32": 2.0, "bf16": 1.0}]) == {}  # fp32 is the reference: never removed


def experiment_with(tmp_path: Path, precision: str, extra: str = ""):
    """The synthetic task over the default space, its precision overridden."""
    path = synthetic_experiment(tmp_path / "p.yaml", extra)
    text = path.read_text().replace("precision: fp32", f"precision: {precision}")
    path.write_text(text)
    return load_experiment(path)


def test_a_precision_choice_is_probed_on_the_task_and_fp32_stays(tmp_path: Path) -> None:
    experiment = experiment_with(tmp_path, "{choices: [fp32, bf16, fp16]}")
    prepared = prepare(experiment)
    spec = prepared.space.dims["precision"]
    kept = spec.choices if isinstance(spec, Choice) else (spec.value,)
    assert "fp32" in kept
    removed = [n for n in prepared.notes if n.startswith("removed precision=")]
    assert len(removed) == 3 - len(kept), prepared.notes
    for note in removed:  # what this CPU measured, in one line each: at least SLOWER times fp32's at both shapes
        low, high = map(
            float,
            re.fullmatch(r"removed precision=(bf16|fp16): its training steps take ([\d.]+)-([\d.]+)x fp32's on this CPU", note).groups()[
                1:
            ],
        )
        assert SLOWER - 0.05 <= low <= high


def test_a_fixed_precision_or_an_objective_that_is_no_time_is_left_as_asked(tmp_path: Path) -> None:
    fixed = experiment_with(tmp_path, "bf16")
    task = prepare(fixed).task
    assert without_slow_precisions(fixed, task, fixed.search_space, CPU) == (fixed.search_space, [])
    assert isinstance(prepare(fixed).space.dims["precision"], Fixed)
    size = experiment_with(
        tmp_path, "{choices: [fp32, bf16]}", "objective: {target: 0.9, eval_every_samples: 256, cap_s: 2.0, minimize: [time, model_size]}\n"
    )
    assert without_slow_precisions(size, task, size.search_space, CPU) == (size.search_space, [])  # a precision may win on size
