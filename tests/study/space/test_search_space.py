"""The search space: conditional sampling in a real study, overrides, hardware filtering."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import torch
import yaml
from conftest import DEFAULT_SPACE, write

from tuner.errors import ConfigError
from tuner.study.run.experiment_file import load_experiment
from tuner.study.space.space import Choice, Fixed, Range, SearchSpace, apply_overrides, parse_space
from tuner.train.precision import unsupported_precisions
from tuner.train.trial_config import ADAM_FAMILY, AMSGRAD_OPTIMIZERS, DIMENSIONS, OPTIMIZERS, PRECISIONS, SCHEDULES, TrialConfig

DECAYING = ("warmup_linear", "warmup_cosine", "onecycle")
DEFAULT_SCHEDULES = ("constant", *DECAYING)


@pytest.fixture(scope="module")
def default_space() -> SearchSpace:
    return parse_space(yaml.safe_load(DEFAULT_SPACE.read_text()), str(DEFAULT_SPACE))


def sample_many(space: SearchSpace, n: int, seed: int = 0) -> list[dict]:
    """Sample through a real in-memory study, as a study does, without training."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        params = space.sample(trial)
        study.tell(trial, 0.0)
        out.append(params)
    return out


def test_default_space_covers_the_mission(default_space: SearchSpace) -> None:
    dims = default_space.dims
    # The optimizers and schedules offered by default: those measured to win or tie (benchmarks/levers_optimizers.py).
    assert dims["optimizer"] == Choice(ADAM_FAMILY) and set(ADAM_FAMILY) < set(OPTIMIZERS)
    assert dims["precision"] == Choice(PRECISIONS)
    assert dims["schedule"] == Choice(DEFAULT_SCHEDULES) and set(DEFAULT_SCHEDULES) < set(SCHEDULES)
    assert dims["lr"] == Range(1e-3, 1e-1, log=True)
    # Every dimension but the parametrization and its base width, which a proxy study sets
    # (tuner/study/run/proxy_study.py): not searched ones.
    assert set(dims) == set(DIMENSIONS) - {"parametrization", "mup_base"}


def test_conditional_dimensions_appear_only_when_they_apply(default_space: SearchSpace) -> None:
    samples = sample_many(default_space, 150)
    for params in samples:
        assert ("amsgrad" in params) == (params["optimizer"] in AMSGRAD_OPTIMIZERS)
        assert ("weight_decay" in params) == (params["optimizer"] == "adamw")
        decays = params["schedule"] in DECAYING
        assert ("warmup_frac" in params) == decays
        assert ("horizon_samples" in params) == decays
        assert 1e-3 <= params["lr"] <= 1e-1
        if decays:
            assert 10_000 <= params["horizon_samples"] <= 200_000 and isinstance(params["horizon_samples"], int)
        config = TrialConfig.from_params(params)  # every sample is a configuration the trainer takes
        assert config.optimizer == params["optimizer"]
    # Both sides of every condition were seen.
    assert {p["optimizer"] for p in samples} == set(ADAM_FAMILY)
    assert {p["schedule"] for p in samples} == set(DEFAULT_SCHEDULES)
    assert {p.get("amsgrad") for p in samples} == {None, False, True}


def test_fixed_dimensions_are_returned_but_not_suggested() -> None:
    space = parse_space(
        {
            "optimizer": "adamw",
            "lr": {"low": 0.001, "high": 0.1, "log": True},
            "weight_decay": {"value": 0.01, "when": {"optimizer": ["adamw"]}},
        },
        "s.yaml",
    )
    study = optuna.create_study()
    trial = study.ask()
    params = space.sample(trial)
    assert params["optimizer"] == "adamw" and params["weight_decay"] == 0.01
    assert set(trial.params) == {"lr"}


def test_integer_range_with_step_and_float_step() -> None:
    space = parse_space(
        {"batch_size": {"low": 32, "high": 256, "step": 32}, "warmup_frac": {"low": 0.0, "high": 0.3, "step": 0.1}}, "s.yaml"
    )
    for params in sample_many(space, 30):
        assert params["batch_size"] % 32 == 0 and isinstance(params["batch_size"], int)
        assert round(params["warmup_frac"] * 10, 6) in (0.0, 1.0, 2.0, 3.0)


def test_fixed_params_only_when_every_active_dimension_is_fixed() -> None:
    fixed = parse_space(
        {"optimizer": "adam", "amsgrad": {"choices": [False, True], "when": {"optimizer": ["adamw"]}}, "lr": 0.02}, "s.yaml"
    )
    assert fixed.fixed_params() == {"optimizer": "adam", "lr": 0.02}  # amsgrad inactive, so it does not count
    loose = parse_space({"optimizer": "adamw", "amsgrad": {"choices": [False, True], "when": {"optimizer": ["adamw"]}}}, "s.yaml")
    assert loose.fixed_params() is None


def override(default_space: SearchSpace, override: dict | None = None, remove: list | None = None) -> SearchSpace:
    return apply_overrides(default_space, override or {}, remove or [], "exp.yaml")


def test_override_fixes_a_dimension_and_keeps_its_condition(default_space: SearchSpace) -> None:
    space = override(default_space, {"precision": "fp32", "weight_decay": 0.01})
    assert space.dims["precision"] == Fixed("fp32")
    assert space.dims["weight_decay"] == Fixed(0.01, {"optimizer": ("adamw",)})
    for params in sample_many(space, 40):
        assert params["precision"] == "fp32"
        assert params.get("weight_decay", 0.01) == 0.01 and ("weight_decay" in params) == (params["optimizer"] == "adamw")


def test_override_narrows_a_range_keeping_its_scale(default_space: SearchSpace) -> None:
    space = override(default_space, {"lr": {"high": 0.01}, "batch_size": {"choices": [64, 128]}})
    assert space.dims["lr"] == Range(1e-3, 1e-2, log=True)
    assert space.dims["batch_size"] == Choice((64, 128))
    assert all(1e-3 <= p["lr"] <= 1e-2 and p["batch_size"] in (64, 128) for p in sample_many(space, 40))


def test_override_switches_kind(default_space: SearchSpace) -> None:
    space = override(
        default_space,
        {"lr": {"choices": [0.01, 0.04]}, "batch_size": {"low": 16, "high": 512, "log": True}, "horizon_samples": {"choices": [20000]}},
    )
    assert space.dims["lr"] == Choice((0.01, 0.04))
    assert space.dims["batch_size"] == Range(16, 512, log=True)
    # The condition survives the switch from a range to choices.
    assert space.dims["horizon_samples"] == Choice((20000,), {"schedule": ("warmup_linear", "warmup_cosine", "onecycle")})
    for params in sample_many(space, 30):
        assert params["lr"] in (0.01, 0.04)
        assert 16 <= params["batch_size"] <= 512


def test_override_removes_dimensions(default_space: SearchSpace) -> None:
    space = override(default_space, remove=["beta1", "beta2", "width"])
    assert not {"beta1", "beta2", "width"} & set(space.dims)
    config = TrialConfig.from_params(sample_many(space, 1)[0])
    assert (config.beta1, config.beta2, config.width) == (0.9, 0.999, 1.0)  # the defaults


def test_override_adds_a_dimension_absent_from_the_file(tmp_path: Path) -> None:
    space_file = write(tmp_path / "s.yaml", "optimizer: {choices: [adam, adamw]}\n")
    exp = load_experiment(
        write(tmp_path / "e.yaml", f"search_space:\n  file: {space_file}\n  override:\n    width: {{choices: [0.5, 1.0]}}\n")
    )
    assert exp.search_space.dims == {"optimizer": Choice(("adam", "adamw")), "width": Choice((0.5, 1.0))}


def test_removing_a_dimension_others_depend_on_is_an_error(default_space: SearchSpace) -> None:
    with pytest.raises(ConfigError) as info:
        override(default_space, remove=["optimizer"])
    assert info.value.key == "search_space.amsgrad.when.optimizer"
    assert info.value.allowed == "a dimension listed earlier in the space"


def test_remove_must_be_a_list(default_space: SearchSpace) -> None:
    with pytest.raises(ConfigError) as info:
        apply_overrides(default_space, {}, "beta1", "exp.yaml")
    assert (info.value.key, info.value.allowed, info.value.given) == ("search_space.remove", "a list of dimension names", "beta1")


def test_space_round_trips_through_yaml(default_space: SearchSpace) -> None:
    space = override(default_space, {"precision": "fp32", "lr": {"choices": [0.01]}, "batch_size": {"low": 32, "high": 256, "step": 32}})
    text = yaml.safe_dump(space.to_yaml_dict(), sort_keys=False)
    assert parse_space(yaml.safe_load(text), "again.yaml") == space


# -- hardware filtering --------------------------------------------------------------------


def test_without_values_drops_unsupported_choices_with_a_note(default_space: SearchSpace) -> None:
    space, notes = default_space.without_values("precision", {"fp16": "loss scaling is not available"}, "exp.yaml")
    assert space.dims["precision"] == Choice(("fp32", "bf16"))
    assert notes == ["removed precision=fp16: loss scaling is not available"]
    assert {p["precision"] for p in sample_many(space, 30)} == {"fp32", "bf16"}
    # The original space is untouched.
    assert default_space.dims["precision"] == Choice(PRECISIONS)


def test_without_values_leaving_one_choice_fixes_it(default_space: SearchSpace) -> None:
    space, notes = default_space.without_values("precision", {"fp16": "no", "bf16": "no"}, "exp.yaml")
    assert space.dims["precision"] == Fixed("fp32")
    assert len(notes) == 2


def test_without_values_removing_every_choice_is_an_error(default_space: SearchSpace) -> None:
    space = override(default_space, {"precision": {"choices": ["bf16", "fp16"]}})
    with pytest.raises(ConfigError) as info:
        space.without_values("precision", {"fp16": "no fp16", "bf16": "no bf16"}, "exp.yaml")
    err = info.value
    assert (err.source, err.key) == ("exp.yaml", "search_space.precision")
    assert err.allowed == "at least one choice this machine can run"
    assert err.given == ["bf16", "fp16"]


def test_without_values_on_a_fixed_unsupported_value_is_an_error(default_space: SearchSpace) -> None:
    space = override(default_space, {"precision": "fp16"})
    with pytest.raises(ConfigError) as info:
        space.without_values("precision", {"fp16": "loss scaling is not available on cpu"}, "exp.yaml")
    assert info.value.key == "search_space.precision"
    assert info.value.allowed == "a value this machine can run"
    assert info.value.given == "fp16 (loss scaling is not available on cpu)"


def test_without_values_leaves_supported_or_absent_dimensions_alone(default_space: SearchSpace) -> None:
    fixed = override(default_space, {"precision": "fp32"})
    assert fixed.without_values("precision", {"fp16": "no"}, "exp.yaml") == (fixed, [])
    removed = override(default_space, remove=["precision"])
    assert removed.without_values("precision", {"fp16": "no"}, "exp.yaml") == (removed, [])


def test_precision_probe_on_cpu_keeps_every_precision() -> None:
    # PyTorch on CPU runs bf16 and fp16 autocast and has a CPU gradient scaler (API-NOTES §14),
    # so nothing may be removed there; test_trainer trains with each to prove it.
    assert unsupported_precisions(torch.device("cpu")) == {}
